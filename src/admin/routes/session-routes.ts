/**
 * Login, logout and "who am I". The attempt itself — lockouts, the cap on
 * password checks, the equal cost of unknown user names — is login-guard.ts;
 * here it becomes HTTP. Wrong and unknown get the same message, and a typed
 * name that is no user is never logged or audited (it is sometimes a password
 * typed into the wrong field): a keyed tag stands in for it.
 */
import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { SeppError } from '../../engine/errors.ts';
import type { SessionInfo } from '../api-types.ts';
import { AdminHttpError } from '../http-errors.ts';
import { readJsonObject, requiredString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { csrfTokenOf, type Session } from '../sessions.ts';
import type { AdminRole, AdminUser } from '../types.ts';

/** Failed logins written to the audit log per minute at most, so guessing cannot fill the disk. */
const failedLoginAuditsPerMinute = 60;
/** A login body holds a user name (128) and a password (1024) as JSON: 4 KiB is ample. */
export const loginBodyBytesMax = 4 * 1024;

export function sessionRoutes(services: AdminServices): RouteSpec[] {
  const { deps, sessions, loginGuard } = services;
  const failedAudits = { minute: -1, count: 0 };

  /** A session as the UI sees it: the role is the config's now (the access check's), not the one at login. */
  const describe = (
    current: { session: Session; role: AdminRole; csrfToken: string } | null,
  ): SessionInfo => ({
    authenticated: current !== null,
    open: deps.open,
    user: current?.session.user ?? null,
    role: current?.role ?? null,
    csrfToken: current?.csrfToken ?? null,
    expiresAtMs: current?.session.expiresAtMs ?? null,
  });

  /** Starts a session and sets its cookie once the session is on disk. */
  const startSession = async (c: Context, user: string, role: AdminRole, passwordHash?: string) => {
    const { id, session, csrfToken, saved } = sessions.create(user, role, passwordHash);
    await saved;
    setCookie(c, services.cookieName, id, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: deps.tls,
      path: '/',
      maxAge: Math.floor(deps.sessionTtlMs / 1000),
    });
    return { session, role, csrfToken };
  };

  /** Who a failed login was for, as logs and the audit log may show it. */
  const failedFor = (account: AdminUser | undefined, typedUser: string) =>
    account === undefined
      ? { actor: '(unknown)', fields: { name_tag: loginGuard.nameTag(typedUser) } }
      : { actor: account.name, fields: {} };

  const auditFailedLogin = (who: ReturnType<typeof failedFor>, client: string): void => {
    const minute = Math.floor(deps.clock.nowMs() / 60_000);
    if (failedAudits.minute !== minute) Object.assign(failedAudits, { minute, count: 0 });
    if (failedAudits.count++ >= failedLoginAuditsPerMinute) return;
    deps.engine
      .recordAudit({
        actor: who.actor,
        action: 'session.login_failed',
        target: `user:${who.actor}`,
        details: { client, ...who.fields },
      })
      .catch((error: unknown) =>
        deps.log?.log('warn', 'admin.audit_failed', { entry: 'a failed login', error: String(error) }),
      );
  };

  return [
    {
      method: 'get',
      path: '/api/v1/session',
      access: 'public',
      tag: 'session',
      summary: 'Who is logged in, with the CSRF token for mutations',
      description:
        'When login is off (loopback address, no users), this starts an anonymous session so that the UI gets a CSRF token.',
      response: ref('Session'),
      async handle(c, request) {
        const { session, sessionId, role } = request;
        if (session === null && deps.open) {
          return c.json(describe(await startSession(c, 'anonymous', 'admin')));
        }
        return c.json(
          describe(
            session === null || sessionId === undefined
              ? null
              : { session, role, csrfToken: csrfTokenOf(sessionId) },
          ),
        );
      },
    },
    {
      method: 'post',
      path: '/api/v1/session',
      access: 'public',
      tag: 'session',
      summary: 'Log in',
      description:
        'Sets the session cookie (HttpOnly, SameSite=Strict, Secure under TLS). Repeated failures lock the address, the user name from that address, or the user name from new addresses out for a growing time; too many logins checked at once are refused (both 429 with Retry-After). The body is at most 4 KiB.',
      body: {
        type: 'object',
        properties: { user: { type: 'string' }, password: { type: 'string' } },
        required: ['user', 'password'],
      },
      response: ref('Session'),
      audits: 'session.login',
      maxBodyBytes: loginBodyBytesMax,
      async handle(c) {
        if (deps.open) {
          throw new SeppError('failed_precondition', 'login is off: no admin users are configured');
        }
        const body = await readJsonObject(c);
        const user = requiredString(body, 'user', 128);
        const password = requiredString(body, 'password', 1024);
        const client = services.clientAddress(c);
        const result = await loginGuard.attempt(client, user, password);
        if (result.kind === 'locked' || result.kind === 'busy') {
          const seconds = Math.ceil(result.retryAfterMs / 1000);
          const why =
            result.kind === 'locked' ? 'too many failed logins' : 'too many logins are being checked at once';
          throw new AdminHttpError('resource_exhausted', `${why}; try again in ${seconds} s`, {
            'Retry-After': String(seconds),
          });
        }
        if (result.kind === 'wrong') {
          const who = failedFor(result.account, user);
          deps.log?.log('warn', 'admin.login_failed', { user: who.actor, ...who.fields, client });
          auditFailedLogin(who, client);
          throw new SeppError('unauthenticated', 'wrong user name or password');
        }
        const { account } = result;
        await deps.engine.recordAudit({
          actor: account.name,
          action: 'session.login',
          target: `user:${account.name}`,
          details: { client, role: account.role },
        });
        deps.log?.log('info', 'admin.login', { user: account.name, client });
        return c.json(describe(await startSession(c, account.name, account.role, account.passwordHash)));
      },
    },
    {
      method: 'delete',
      path: '/api/v1/session',
      access: 'viewer',
      tag: 'session',
      summary: 'Log out',
      response: ref('Session'),
      audits: 'session.logout',
      async handle(c, request) {
        await sessions.delete(request.sessionId);
        deleteCookie(c, services.cookieName, { path: '/', secure: deps.tls });
        if (request.session !== null && !deps.open) {
          await deps.engine.recordAudit(request.audit('session.logout', `user:${request.actor}`));
        }
        return c.json(describe(null));
      },
    },
  ];
}
