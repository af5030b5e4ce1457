/**
 * Every API route is declared once, as data: method, path, the role it needs,
 * its documentation and its handler. The app registers routes from these
 * declarations and the OpenAPI document is generated from the same list, so
 * the two cannot drift apart (tests/admin/openapi.test.ts checks it anyway).
 */
import type { Context } from 'hono';
import type { QueryParamDoc } from '../api-schema/openapi.ts';
import type { JsonSchema } from '../api-schema/primitives.ts';
import type { AuditInput } from '../engine/admin-types.ts';
import type { LoginGuard } from './login-guard.ts';
import type { Session, SessionStore } from './sessions.ts';
import type { AdminDeps, AdminRole } from './types.ts';

export type { JsonSchema };

/** Who may call a route: anyone, or a logged-in user with at least this role. */
export type Access = AdminRole | 'public';

export type { QueryParamDoc };

export interface RouteSpec {
  method: 'get' | 'post' | 'delete';
  /** OpenAPI form: /api/v1/jobs/{id}. */
  path: string;
  access: Access;
  tag: string;
  summary: string;
  description?: string;
  pathParams?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, QueryParamDoc>>;
  body?: JsonSchema;
  /** Schema of the 200 response body. */
  response: JsonSchema;
  /** The audit action a successful call records. */
  audits?: string;
  /** A body limit below the API's 2 MiB, checked before the body is read (the login form needs a few KiB). */
  maxBodyBytes?: number;
  handle(c: Context, request: RequestContext): Response | Promise<Response>;
}

/** Who is calling, as the access check established it. */
export interface RequestContext {
  /** A user name, or `anonymous` when login is off. */
  actor: string;
  role: AdminRole;
  /** The cookie's session; null when login is off and the caller has none. */
  session: Session | null;
  /** The session id from the cookie (for logout). */
  sessionId: string | undefined;
  /** An audit entry for this caller. */
  audit(action: string, target: string, details?: Record<string, unknown>): AuditInput;
}

/** What route handlers share. */
export interface AdminServices {
  deps: AdminDeps;
  sessions: SessionStore;
  /** Login throttling and the password checks. */
  loginGuard: LoginGuard;
  cookieName: string;
  clientAddress(c: Context): string;
}

export const roleRank: Readonly<Record<AdminRole, number>> = { viewer: 1, operator: 2, admin: 3 };

/**
 * Whether a call of `route` is a read that counts toward its user's share of the store's read
 * queue (engine/read-shares.ts), as an API key's reads do: a GET but the public ones (the
 * session, which reads no store).
 */
export function isSharedRead(route: Pick<RouteSpec, 'method' | 'access'>): boolean {
  return route.method === 'get' && route.access !== 'public';
}

/** Hono's path syntax for an OpenAPI path: {id} → :id. */
export function honoPath(path: string): string {
  return path.replace(/\{([A-Za-z]+)\}/g, ':$1');
}
