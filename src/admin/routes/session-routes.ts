/**
 * Login, logout and "who am I". A login is refused before the password is
 * checked while the client is locked out (login-throttle.ts); an unknown user
 * costs the same scrypt work as a known one, so timing does not tell which
 * user names exist, and both get the same message.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { SeppError } from '../../engine/errors.ts';
import { AdminHttpError } from '../http-errors.ts';
import { hashPassword, parsePasswordHash, verifyPassword } from '../password.ts';
import { readJsonObject, requiredString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import type { Session } from '../sessions.ts';

/** Failed logins written to the audit log per minute at most, so guessing cannot fill the disk. */
const failedLoginAuditsPerMinute = 60;

export function sessionRoutes(services: AdminServices): RouteSpec[] {
  const { deps, sessions } = services;
  // A hash of a random password with the users' parameters, checked when the user is
  // unknown so that both cases cost the same. Made on first need.
  let dummyHash: Promise<string> | undefined;
  const unknownUserHash = (): Promise<string> => {
    const params = deps.users.map((u) => parsePasswordHash(u.passwordHash)).find((p) => p !== null);
    dummyHash ??= hashPassword(randomBytes(16).toString('hex'), params ?? undefined);
    return dummyHash;
  };
  const failedAudits = { minute: -1, count: 0 };

  const describe = (session: Session | null) => ({
    authenticated: session !== null,
    open: deps.open,
    user: session?.user ?? null,
    role: session?.role ?? null,
    csrfToken: session?.csrfToken ?? null,
    expiresAtMs: session?.expiresAtMs ?? null,
  });

  const startSession = (c: Context, user: string, role: Session['role']): Session => {
    const { id, session } = sessions.create(user, role);
    setCookie(c, services.cookieName, id, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: deps.tls,
      path: '/',
      maxAge: Math.floor(deps.sessionTtlMs / 1000),
    });
    return session;
  };

  const auditFailedLogin = (user: string, client: string): void => {
    const minute = Math.floor(deps.clock.nowMs() / 60_000);
    if (failedAudits.minute !== minute) Object.assign(failedAudits, { minute, count: 0 });
    if (failedAudits.count++ >= failedLoginAuditsPerMinute) return;
    deps.engine
      .recordAudit({
        actor: user,
        action: 'session.login_failed',
        target: `user:${user}`,
        details: { client },
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
      handle(c, request) {
        if (request.session === null && deps.open) {
          return c.json(describe(startSession(c, 'anonymous', 'admin')));
        }
        return c.json(describe(request.session));
      },
    },
    {
      method: 'post',
      path: '/api/v1/session',
      access: 'public',
      tag: 'session',
      summary: 'Log in',
      description:
        'Sets the session cookie (HttpOnly, SameSite=Strict, Secure under TLS). Repeated failures from one client lock it out for a growing time (429 with Retry-After).',
      body: {
        type: 'object',
        properties: { user: { type: 'string' }, password: { type: 'string' } },
        required: ['user', 'password'],
      },
      response: ref('Session'),
      audits: 'session.login',
      async handle(c) {
        if (deps.open) {
          throw new SeppError('failed_precondition', 'login is off: no admin users are configured');
        }
        const body = await readJsonObject(c);
        const user = requiredString(body, 'user', 128);
        const password = requiredString(body, 'password', 1024);
        const client = services.clientAddress(c);
        const userKey = `${client}\n${user.toLowerCase()}`;
        const waitMs = Math.max(
          services.userThrottle.retryAfterMs(userKey),
          services.clientThrottle.retryAfterMs(client),
        );
        if (waitMs > 0) {
          const seconds = Math.ceil(waitMs / 1000);
          throw new AdminHttpError(
            'resource_exhausted',
            `too many failed logins; try again in ${seconds} s`,
            { 'Retry-After': String(seconds) },
          );
        }
        const account = deps.users.find((u) => u.name === user);
        const ok = await verifyPassword(password, account?.passwordHash ?? (await unknownUserHash()));
        if (!ok || account === undefined) {
          services.userThrottle.failed(userKey);
          services.clientThrottle.failed(client);
          deps.log?.log('warn', 'admin.login_failed', { user, client });
          auditFailedLogin(user, client);
          throw new SeppError('unauthenticated', 'wrong user name or password');
        }
        services.userThrottle.succeeded(userKey);
        await deps.engine.recordAudit({
          actor: account.name,
          action: 'session.login',
          target: `user:${account.name}`,
          details: { client, role: account.role },
        });
        deps.log?.log('info', 'admin.login', { user: account.name, client });
        return c.json(describe(startSession(c, account.name, account.role)));
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
        sessions.delete(request.sessionId);
        deleteCookie(c, services.cookieName, { path: '/', secure: deps.tls });
        if (request.session !== null && !deps.open) {
          await deps.engine.recordAudit(request.audit('session.logout', `user:${request.actor}`));
        }
        return c.json(describe(null));
      },
    },
  ];
}
