/**
 * An admin app over a real engine (temporary SQLite file, fake clock), and a
 * small client that behaves like the UI: it keeps the session cookie, sends
 * the CSRF token and a same-origin Origin header on mutations.
 */
import type { Hono } from 'hono';
import type { SessionInfo } from '../../src/admin/api-types.ts';
import { type AdminApp, createAdminApp } from '../../src/admin/app.ts';
import { hashPassword } from '../../src/admin/password.ts';
import { RateHistory } from '../../src/admin/rate-history.ts';
import type { AdminDeps, AdminRole, AdminUser, AssetSource } from '../../src/admin/types.ts';
import type { JobEvent } from '../../src/engine/types.ts';
import { openTestEngine, type TestEngine, type TestEngineOptions } from './engine.ts';
import { captureOutput, registerSecret } from './secret-log.ts';

/**
 * Cheap scrypt parameters: tests check behaviour, not cost. The lowest the config accepts
 * (ln=10, r=1): ~0.4 ms CPU a hash or check, against ~3 ms at r=8 — every openTestAdmin hashes
 * three users and every login checks one. The default (ln=15, r=8), what `sepp admin
 * hash-password` writes, is tested in tests/cli/admin-commands.test.ts.
 */
export const testScrypt = { logN: 10, r: 1, p: 1 } as const;
export const password = 'correct horse battery staple';
registerSecret('admin password', password);

let usersOnce: Promise<AdminUser[]> | undefined;
/** One user per role, named after it, all with `password`. */
export function testUsers(): Promise<AdminUser[]> {
  usersOnce ??= Promise.all(
    (['viewer', 'operator', 'admin'] as const).map(async (role) => ({
      name: role,
      role,
      passwordHash: await hashPassword(password, testScrypt),
    })),
  );
  return usersOnce;
}

export interface TestAdmin extends AdminApp {
  t: TestEngine;
  rates: RateHistory;
  dispose(): void;
}

export interface TestAdminOptions {
  open?: boolean;
  users?: AdminUser[];
  sessionTtlMs?: number;
  tls?: boolean;
  assets?: AssetSource | null;
  engine?: TestEngineOptions;
  deps?: Partial<AdminDeps>;
}

export async function openTestAdmin(options: TestAdminOptions = {}): Promise<TestAdmin> {
  let rates: RateHistory | undefined;
  const t = await openTestEngine({
    ...options.engine,
    deps: { ...options.engine?.deps, onEvent: (event: JobEvent) => rates?.record(event) },
  });
  rates = new RateHistory(t.clock);
  const startedAtMs = t.clock.nowMs();
  // The app's own log lines, unscrubbed (the server's logger would scrub them): they must hold no secret as given.
  const capture = captureOutput('admin');
  const admin = await createAdminApp({
    engine: t.engine,
    clock: t.clock,
    users: options.users ?? (options.open ? [] : await testUsers()),
    open: options.open ?? false,
    sessionTtlMs: options.sessionTtlMs ?? 60 * 60_000,
    tls: options.tls ?? false,
    serverInfo: () => ({
      version: '0.1.0-test',
      commit: null,
      startedAtMs,
      durability: 'full',
      dbBytes: 4096,
      walBytes: 0,
      store: t.engine.storeDescription(),
      identity: {
        hostName: 'test-host',
        instanceId: '0190a4c2-0000-7000-8000-00000000beef',
        pid: 4242,
        grpcAddress: '127.0.0.1:9464',
        adminAddress: '127.0.0.1:9465',
        httpAddress: null,
      },
    }),
    rates,
    effectiveConfig: () => ({
      server: { admin_listen: '127.0.0.1:9465' },
      admin: { users: [{ name: 'admin', password_hash: '[redacted]' }] },
    }),
    assets: options.assets ?? null,
    log: { log: (level, message, fields) => capture(`${JSON.stringify({ level, message, ...fields })}\n`) },
    ...options.deps,
  });
  return { ...admin, t, rates, dispose: () => t.dispose() };
}

/** A reply; `body` is the parsed JSON, typed by the caller (tests assert its shape). */
export interface Reply<T = Loose> {
  status: number;
  headers: Headers;
  body: T;
}

/** A JSON object read without a declared shape, plus the error shape every failure has. */
export type Loose = Record<string, unknown> & { error?: { code: string; message: string } };

/** GET /api/v1/session as the API declares it (api-types.ts). */
export type SessionBody = Loose & SessionInfo;

export interface PageBody<T> extends Loose {
  items: T[];
  nextCursor: string | null;
  total?: number | null;
}

export class TestClient {
  cookie: string | undefined;
  csrfToken: string | undefined;
  origin = 'http://localhost';
  env: unknown = { incoming: { socket: { remoteAddress: '10.0.0.1' } } };

  constructor(private readonly app: Hono) {}

  async request<T = Loose>(
    method: string,
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = {};
    if (this.cookie !== undefined) headers.cookie = this.cookie;
    if (method !== 'GET' && method !== 'HEAD') {
      headers.origin = this.origin;
      if (this.csrfToken !== undefined) headers['x-csrf-token'] = this.csrfToken;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, extraHeaders);
    for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
    const response = await this.app.request(
      path,
      {
        method,
        headers,
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      },
      this.env,
    );
    const setCookie = response.headers.get('set-cookie');
    if (setCookie !== null) {
      const [pair] = setCookie.split(';');
      this.cookie = pair?.endsWith('=') ? undefined : pair;
      if (pair !== undefined && !pair.endsWith('='))
        registerSecret('session cookie', pair.slice(pair.indexOf('=') + 1));
    }
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text !== '')
      parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  get<T = Loose>(path: string): Promise<Reply<T>> {
    return this.request<T>('GET', path);
  }

  post<T = Loose>(path: string, body: unknown = {}): Promise<Reply<T>> {
    return this.request<T>('POST', path, body);
  }

  async login(user: string, pw = password): Promise<Reply<SessionBody>> {
    const reply = await this.post<SessionBody>('/api/v1/session', { user, password: pw });
    if (reply.status === 200) this.csrfToken = reply.body.csrfToken ?? undefined;
    if (this.csrfToken !== undefined) registerSecret('CSRF token', this.csrfToken);
    return reply;
  }

  /** Picks up the session's CSRF token (and, with login off, an anonymous session). */
  async refreshSession(): Promise<Reply<SessionBody>> {
    const reply = await this.get<SessionBody>('/api/v1/session');
    this.csrfToken = reply.body.csrfToken ?? undefined;
    if (this.csrfToken !== undefined) registerSecret('CSRF token', this.csrfToken);
    return reply;
  }
}

export async function loggedIn(admin: TestAdmin, role: AdminRole): Promise<TestClient> {
  const client = new TestClient(admin.app);
  const reply = await client.login(role);
  if (reply.status !== 200) throw new Error(`login as ${role} failed: ${JSON.stringify(reply.body)}`);
  return client;
}

export const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
