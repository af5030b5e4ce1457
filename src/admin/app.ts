/**
 * The admin HTTP app: the JSON API under /api/v1, its OpenAPI document, and
 * the built UI. createAdminApp only builds a Hono app — serving it (port, TLS)
 * is the caller's business (see serve.ts).
 *
 * Every request passes, in order: security headers → (login off) loopback
 * Host check → (API) no-store caching and the body size limit → the route's
 * access check: same-origin check for mutations, session and role, CSRF token
 * for mutations → the query parameters, only those the route declares → (a
 * read) its user's share of the store's read queue → the handler. Errors of
 * every layer become one JSON shape (http-errors.ts).
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie } from 'hono/cookie';
import { refuseUnknownQuery } from '../api-schema/query-params.ts';
import { SeppError } from '../engine/errors.ts';
import { clientAddressResolver } from './client-address.ts';
import { mountHealthRoutes } from './health-routes.ts';
import { errorResponse, toErrorResponse } from './http-errors.ts';
import { defaultLoginPolicy, LoginGuard } from './login-guard.ts';
import { buildOpenApi, openApiPath } from './openapi.ts';
import { verifyPassword } from './password.ts';
import {
  type AdminServices,
  honoPath,
  isSharedRead,
  type RequestContext,
  type RouteSpec,
  roleRank,
} from './route-spec.ts';
import { auditConfigRoutes } from './routes/audit-config-routes.ts';
import { browseRoutes } from './routes/browse-routes.ts';
import { bulkRoutes } from './routes/bulk-routes.ts';
import { deadLetterRoutes } from './routes/dead-letter-routes.ts';
import { historyRoutes } from './routes/history-routes.ts';
import { jobControlRoutes } from './routes/job-control-routes.ts';
import { jobRoutes } from './routes/job-routes.ts';
import { queueRoutes } from './routes/queue-routes.ts';
import { scheduleRoutes } from './routes/schedule-routes.ts';
import { sessionRoutes } from './routes/session-routes.ts';
import { workerRoutes } from './routes/worker-routes.ts';
import { workflowRoutes } from './routes/workflow-routes.ts';
import { checkSameOrigin, isMutation, loopbackHostOnly, securityHeaders } from './security.ts';
import { isCsrfTokenOf, passwordTagOf, SessionStore } from './sessions.ts';
import { AssetServer } from './static-assets.ts';
import { storedSessions } from './stored-sessions.ts';
import type { AdminDeps, AdminRole } from './types.ts';

const defaultMaxBodyBytes = 2 * 1024 * 1024;
const csrfHeader = 'x-csrf-token';

export interface AdminApp {
  app: Hono;
  /** Every API route as declared (the OpenAPI document is built from these). */
  routes: readonly RouteSpec[];
  /** Live sessions (for tests and diagnostics). */
  sessions: SessionStore;
  /** Login throttling and password checks (for tests and diagnostics). */
  loginGuard: LoginGuard;
  /**
   * Takes new users and session and proxy settings (a config reload). The
   * sessions of users no longer configured end at once; resolves with their
   * names once that is on disk.
   */
  reconfigure(settings: AdminReloadable): Promise<string[]>;
}

/** The admin settings a config reload can change without a restart. */
export type AdminReloadable = Required<
  Pick<AdminDeps, 'users' | 'sessionTtlMs' | 'maxSessionsPerUser' | 'trustedProxies'>
>;

/** Builds the app; resolves once the sessions kept across the last restart are loaded. */
export async function createAdminApp(given: AdminDeps): Promise<AdminApp> {
  // A copy: reconfigure() changes it, and every part reads its settings from it.
  const deps: AdminDeps = { ...given };
  const nowMs = () => deps.clock.nowMs();
  const clientResolver = () =>
    clientAddressResolver({
      trustedProxies: deps.trustedProxies ?? [],
      onUntrustedForward: (peer) =>
        deps.log?.log('warn', 'admin.forwarded_for_ignored', {
          peer,
          detail:
            'a request carries X-Forwarded-For from an address that admin.trusted_proxies does not list, so the header is ignored (told once); if sepp is behind a proxy there, list it, or every client behind it counts as one for login throttling',
        }),
    });
  let resolveClient = clientResolver();
  const sessions = new SessionStore(
    deps.sessionTtlMs,
    nowMs,
    deps.maxSessionsPerUser,
    deps.open ? undefined : storedSessions(deps.engine.store, nowMs),
  );
  await sessions.load();
  const endRemovedUsers = (): { ended: string[]; saved: Promise<void> } =>
    deps.open ? { ended: [], saved: Promise.resolve() } : sessions.retainUsers(deps.users);
  // Users removed from the config, or given another password, while the server was down:
  // their stored sessions end now.
  endRemovedUsers().saved.catch((error: unknown) =>
    deps.log?.log('warn', 'admin.session_end_failed', { error: String(error) }),
  );
  const services: AdminServices = {
    deps,
    sessions,
    loginGuard: new LoginGuard(
      { nowMs, users: () => deps.users, verify: deps.verifyPassword ?? verifyPassword },
      deps.loginPolicy ?? defaultLoginPolicy,
    ),
    // The __Host- prefix pins the cookie to this host and path /, and needs Secure (TLS).
    cookieName: deps.tls ? '__Host-sepp_session' : 'sepp_session',
    clientAddress: (c) => resolveClient(socketAddress(c), c.req.header('x-forwarded-for')),
  };
  const routes: RouteSpec[] = [
    ...sessionRoutes(services),
    ...queueRoutes(services),
    ...historyRoutes(services),
    ...jobRoutes(services),
    ...jobControlRoutes(services),
    ...workflowRoutes(services),
    ...bulkRoutes(services),
    ...browseRoutes(services),
    ...deadLetterRoutes(services),
    ...scheduleRoutes(services),
    ...auditConfigRoutes(services),
    ...workerRoutes(services),
  ];

  const app = new Hono();
  app.onError((error, c) => {
    const { response, internal } = toErrorResponse(c, error);
    if (internal !== null) {
      deps.log?.log('error', 'admin.request_failed', {
        method: c.req.method,
        path: c.req.path,
        error: internal.message,
      });
    }
    return response;
  });
  app.notFound((c) => errorResponse(c, 'not_found', `nothing at ${c.req.path.slice(0, 200)}`));
  app.use('*', securityHeaders(deps.tls));
  mountHealthRoutes(app, deps.readiness ?? (() => ({ ready: true })));
  if (deps.open && deps.openToAnyHost !== true) app.use('*', loopbackHostOnly());
  app.use('/api/*', async (c, next) => {
    await next();
    c.res.headers.set('Cache-Control', 'no-store');
  });
  app.use('/api/*', limitBody(deps.maxBodyBytes ?? defaultMaxBodyBytes, '; enqueue large jobs over gRPC'));

  for (const route of routes) {
    const operation = `${route.method.toUpperCase()} ${route.path}`;
    const known = Object.keys(route.query ?? {});
    const reads = isSharedRead(route);
    const handle = async (c: Context) => {
      const request = authorize(c, route, services);
      refuseUnknownQuery(operation, known, queryOf(c.req.url));
      if (!reads) return route.handle(c, request);
      const leave = deps.engine.enterRead(readerName(request.actor));
      try {
        return await route.handle(c, request);
      } finally {
        leave();
      }
    };
    if (route.maxBodyBytes === undefined) app.on(route.method.toUpperCase(), honoPath(route.path), handle);
    else app.on(route.method.toUpperCase(), honoPath(route.path), limitBody(route.maxBodyBytes, ''), handle);
  }

  const openApi = JSON.stringify(buildOpenApi(routes, deps.serverInfo().version));
  app.get(openApiPath, (c) => {
    refuseUnknownQuery(`GET ${openApiPath}`, [], queryOf(c.req.url));
    return c.body(openApi, 200, { 'Content-Type': 'application/json' });
  });

  const patterns = routes.map((r) => ({ method: r.method.toUpperCase(), re: pathPattern(r.path) }));
  app.all('/api/*', (c) => {
    const allowed = patterns.filter((p) => p.re.test(c.req.path)).map((p) => p.method);
    if (allowed.length > 0) {
      c.header('Allow', [...new Set(allowed)].join(', '));
      return errorResponse(
        c,
        'method_not_allowed',
        `${c.req.method} is not allowed here; use ${allowed.join(' or ')}`,
      );
    }
    return errorResponse(c, 'not_found', `no API route at ${c.req.path.slice(0, 200)}`);
  });

  deps.extend?.(app);

  if (deps.assets !== null) {
    const assets = new AssetServer(deps.assets);
    app.get('*', (c) => assets.serve(c) ?? errorResponse(c, 'not_found', 'no such page or file'));
  }

  return {
    app,
    routes,
    sessions: services.sessions,
    loginGuard: services.loginGuard,
    async reconfigure(settings) {
      Object.assign(deps, settings);
      sessions.configure(settings.sessionTtlMs, settings.maxSessionsPerUser);
      resolveClient = clientResolver();
      const { ended, saved } = endRemovedUsers();
      await saved;
      return ended;
    },
  };
}

/** Establishes who is calling and whether they may call this route; throws when not. */
function authorize(c: Context, route: RouteSpec, services: AdminServices): RequestContext {
  const { deps, sessions } = services;
  const mutation = isMutation(c.req.method);
  if (mutation) checkSameOrigin(c, deps.tls);

  const sessionId = getCookie(c, services.cookieName);
  let session = sessions.get(sessionId) ?? null;
  let role: AdminRole | null = null;
  if (session !== null) {
    if (deps.open) {
      role = session.role;
    } else {
      // The config is the truth: a user removed, given another password or demoted since
      // login loses access now (reconfigure() ends such sessions too; this covers the moment between).
      const user = deps.users.find((u) => u.name === session?.user);
      if (user === undefined || passwordTagOf(user.passwordHash) !== session.passwordTag) {
        sessions
          .delete(sessionId)
          .catch((error: unknown) =>
            deps.log?.log('warn', 'admin.session_end_failed', { error: String(error) }),
          );
        session = null;
      } else {
        role = user.role;
      }
    }
  } else if (deps.open) {
    role = 'admin';
  }
  const actor = session?.user ?? 'anonymous';

  if (route.access !== 'public') {
    if (role === null)
      throw new SeppError(
        'unauthenticated',
        'log in first (POST /api/v1/session); the session may have expired',
      );
    if (roleRank[role] < roleRank[route.access]) {
      throw new SeppError(
        'permission_denied',
        `this needs the ${route.access} role; ${actor} has the ${role} role`,
      );
    }
  }
  const isLogin = route.method === 'post' && route.path === '/api/v1/session';
  if (mutation && !isLogin) {
    if (session === null) {
      throw new SeppError(
        'permission_denied',
        'mutations need a session and its CSRF token: GET /api/v1/session first',
      );
    }
    if (!isCsrfTokenOf(session, c.req.header(csrfHeader))) {
      throw new SeppError('permission_denied', 'missing or wrong X-CSRF-Token header; reload the page');
    }
  }
  return {
    actor,
    role: role ?? 'viewer',
    session,
    sessionId,
    // `via` names the door, as the gRPC side's entries do (rpc/audit-input.ts).
    audit: (action, target, details) => ({ actor, action, target, details: { ...details, via: 'admin' } }),
  };
}

/** The query parameters of a request's URL (absolute, as Hono hands it over). */
function queryOf(url: string): URLSearchParams {
  const at = url.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : url.slice(at + 1));
}

/**
 * Who an admin read counts as in the store's read queue (engine/read-shares.ts): its user, so
 * one user's flood of reads (a script, many tabs) leaves room for everyone else's. An API key's
 * name has no space, so no key shares a user's count; with login off, every caller is
 * `anonymous`, one user.
 */
function readerName(actor: string): string {
  return `admin user ${actor}`;
}

/** Refuses a body over `maxBytes` before it is read (by its Content-Length, or while it streams). */
function limitBody(maxBytes: number, hint: string): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) =>
      errorResponse(c, 'payload_too_large', `the request body is larger than ${maxBytes} bytes${hint}`),
  });
}

/** The peer address from @hono/node-server's bindings (tests pass the same shape to app.request()). */
function socketAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'unknown';
}

function pathPattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[A-Za-z]+\\?\}/g, '[^/]+');
  return new RegExp(`^${escaped}$`);
}
