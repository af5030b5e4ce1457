/**
 * Starts the real server (app.ts) on port 0 with a temporary data directory,
 * and gives tests a real gRPC client over a real socket.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallOptions, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { AssetSource } from '../../src/admin/index.ts';
import { type RunningServer, startServer } from '../../src/app.ts';
import { loadConfig } from '../../src/config/index.ts';
import type { Clock } from '../../src/engine/clock.ts';
import type { BetweenSlices } from '../../src/engine/control/index.ts';
import type { Logger, LogLevel } from '../../src/telemetry/logger.ts';
import { captureLogger, flushCaptured, registerConfigSecrets } from './secret-log.ts';
import { testStoreConfig } from './test-store.ts';

export interface TestServer {
  server: RunningServer;
  address: string;
  dataDir: string;
  client: QueueServiceClient;
  /** `http://127.0.0.1:PORT/metrics` on the admin address. */
  metricsUrl: string;
  /** `http://127.0.0.1:PORT` of the HTTP/JSON API, when started with `http: true`. */
  httpUrl: string;
  /** A new client connection (a second producer or worker). */
  connect(): QueueServiceClient;
  /** The config file the server read (and reads again on reload). */
  configFile: string;
  /** Replaces the config file's text (the server reads it on its next reload). */
  writeConfig(toml: string): void;
  /** Graceful shutdown, then start again on the same data directory (a restart) with the file as it is now. */
  restart(): Promise<TestServer>;
  /** Graceful shutdown, then start again on the same data directory and gRPC port (clients keep their address). */
  restartOnSamePort(): Promise<TestServer>;
  /** Shuts down and removes the data directory. */
  dispose(): Promise<void>;
}

export interface TestServerOptions {
  /** Extra sepp.toml text. */
  toml?: string;
  clock?: Clock;
  dataDir?: string;
  env?: Record<string, string>;
  tls?: { certPem: string; caPem: string };
  /** Where the server logs, besides the run's capture file (secret-log.ts); default nowhere else. */
  logger?: Logger;
  /** The gRPC port to listen on; default any free one. */
  grpcPort?: number;
  /** The admin UI's files (the API alone without them). */
  uiAssets?: AssetSource;
  /** Receives the log level a reload sets. */
  setLogLevel?: (level: LogLevel) => void;
  /** Start with the config file as it is (a restart), not with `toml`. */
  keepConfig?: boolean;
  /**
   * The file names `server.grpc_listen` and `server.admin_listen` (no listen
   * flags); default: both on 127.0.0.1, port 0, from flags.
   */
  listenFromFile?: boolean;
  /** Also serve the HTTP/JSON API (server.http_listen on a free loopback port). */
  http?: boolean;
  /** What bulk operations await between slices (AppDeps.betweenBulkSlices): a test holds one with it. */
  betweenBulkSlices?: BetweenSlices;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'sepp-srv-'));
  const configFile = join(dataDir, '..', `${dataDir.split('/').pop()}.toml`);
  // The store under test (test-store.ts): SQLite in dataDir, or a PostgreSQL schema of this server's.
  const store = await testStoreConfig(dataDir);
  const writeConfig = (toml: string) => {
    registerConfigSecrets(toml);
    // A test that configures its own [store] keeps it.
    writeFileSync(configFile, /^\[store\]$/m.test(toml) ? toml : `${toml}${store.toml}`);
  };
  if (!options.keepConfig) writeConfig(options.toml ?? '');
  const load = () =>
    loadConfig({
      flags: {
        config: configFile,
        dataDir,
        ...(options.listenFromFile
          ? {}
          : { grpcListen: `127.0.0.1:${options.grpcPort ?? 0}`, adminListen: '127.0.0.1:0' }),
        ...(options.http ? { httpListen: '127.0.0.1:0' } : {}),
      },
      // No 32 MiB disk reserve per test server (tests/faults/disk-full.test.ts sets its own).
      env: { SEPP_DISK_RESERVE_BYTES: '0', ...store.env, ...options.env },
    });
  let server: RunningServer;
  try {
    server = await startServer(load(), {
      logger: captureLogger('server', options.logger),
      build: { version: '0.0.0-test', commit: 'test' },
      loadConfig: load,
      ...(options.setLogLevel === undefined ? {} : { setLogLevel: options.setLogLevel }),
      ...(options.uiAssets === undefined ? {} : { uiAssets: options.uiAssets }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.betweenBulkSlices === undefined ? {} : { betweenBulkSlices: options.betweenBulkSlices }),
    });
  } catch (error) {
    // A server the config refuses (tests of refusals do that on purpose) leaves nothing behind
    // in the temp directory: not the data directory this made, nor the config file.
    if (options.dataDir === undefined) {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(configFile, { force: true });
    }
    throw error;
  }
  const address = `127.0.0.1:${server.grpcPort}`;
  const clients: QueueServiceClient[] = [];
  const connect = () => {
    const creds = options.tls
      ? credentials.createSsl(Buffer.from(options.tls.caPem))
      : credentials.createInsecure();
    const client = new QueueServiceClient(
      address,
      creds,
      options.tls ? { 'grpc.ssl_target_name_override': 'localhost' } : {},
    );
    clients.push(client);
    return client;
  };
  const client = connect();
  let disposed = false;
  const stop = async () => {
    for (const c of clients) c.close();
    await server.shutdown();
    flushCaptured();
  };
  return {
    server,
    address,
    dataDir,
    client,
    metricsUrl: `http://127.0.0.1:${server.adminPort}/metrics`,
    httpUrl: `http://127.0.0.1:${server.httpPort ?? 0}`,
    connect,
    configFile,
    writeConfig,
    async restart() {
      await stop();
      return startTestServer({ ...options, dataDir, keepConfig: true });
    },
    async restartOnSamePort() {
      await stop();
      return startTestServer({ ...options, dataDir, keepConfig: true, grpcPort: server.grpcPort });
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(configFile, { force: true });
    },
  };
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

/**
 * Resolves once the server's engine has `n` long-polls waiting (polls the event loop, no
 * sleeps). Bounded by wall time, not by turns: on a loaded machine (or through PostgreSQL) a
 * call can take longer than 10,000 idle turns of the event loop to reach the engine.
 */
export async function waitersReach(t: TestServer, n: number): Promise<void> {
  const giveUpAtMs = performance.now() + 15_000;
  while (performance.now() < giveUpAtMs) {
    if (t.server.engine.waitingReserves === n) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`waiting reserves stayed at ${t.server.engine.waitingReserves}, expected ${n}`);
}

/** Calls a unary method of a generated client and returns a promise. */
export function call<Req, Res>(
  client: QueueServiceClient,
  method: UnaryMethod<Req, Res>,
  request: Req,
  metadata: Metadata = new Metadata(),
  options: Partial<CallOptions> = {},
): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(client, request, metadata, options, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

/** Call metadata carrying API key `key` (`authorization: Bearer …`). */
export function bearer(key: string): Metadata {
  const metadata = new Metadata();
  metadata.add('authorization', `Bearer ${key}`);
  return metadata;
}

/** The gRPC status a call ended with: OK, or its error's code. */
export function statusOf(p: Promise<unknown>): Promise<number> {
  return p.then(
    () => 0,
    (e: ServiceError) => e.code,
  );
}

/** A job for `queue` with every other field at its default (payload `x`); `fields` overrides. */
export function testJob(queue: string, fields: Partial<EnqueueJob> = {}): EnqueueJob {
  return {
    queue,
    type: 't',
    payload: Buffer.from('x'),
    contentType: '',
    priority: 0,
    schedule: undefined,
    maxAttempts: 0,
    idempotencyKey: '',
    metadata: {},
    traceparent: '',
    tracestate: '',
    uniqueWhileActive: false,
    group: '',
    dependsOn: [],
    onDependencyFailure: 0,
    timeoutMs: 0,
    debounceKey: '',
    debounceMs: 0,
    debounceMaxMs: 0,
    ...fields,
  };
}

/** `[[grpc.api_keys]]` tables for a test server's TOML, one per key. */
export function apiKeysToml(
  keys: readonly { name: string; role: 'producer' | 'worker' | 'admin'; key: string }[],
): string {
  return keys
    .map((k) => `[[grpc.api_keys]]\nname = "${k.name}"\nrole = "${k.role}"\nkey = "${k.key}"\n`)
    .join('');
}
