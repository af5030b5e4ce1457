/**
 * Browser-facing defences that do not depend on who is logged in: security
 * headers on every response, the same-origin check of mutations, and — when
 * login is off — the loopback Host check.
 *
 * CSRF defence, two independent layers, both required for every mutation
 * (any method but GET/HEAD):
 *   1. Same origin: `Sec-Fetch-Site`, when sent, must be `same-origin`, and
 *      `Origin`, when sent, must equal this server's own origin. Browsers send
 *      at least one of them on every cross-site POST; clients that send
 *      neither (curl, scripts) are not browsers and cannot be ridden.
 *   2. A per-session token: the `X-CSRF-Token` header must equal the token of
 *      the cookie's session (GET /api/v1/session hands it to the UI). A page on
 *      another site can neither read it nor set the header without a CORS
 *      preflight, which this server never grants. Login is exempt (there is no
 *      session yet) but still needs layer 1 and a JSON body.
 * The session cookie is also SameSite=Strict, so other sites' requests do not
 * carry it at all.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { AdminHttpError } from './http-errors.ts';

/** No inline script or style anywhere: the UI is built to need neither. */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers every answer carries, including those made outside the app (serve.ts). */
export function securityHeaderEntries(tls: boolean): [string, string][] {
  return [
    ['Content-Security-Policy', contentSecurityPolicy],
    ['X-Content-Type-Options', 'nosniff'],
    ['X-Frame-Options', 'DENY'],
    ['Referrer-Policy', 'no-referrer'],
    ['Cross-Origin-Opener-Policy', 'same-origin'],
    ['Cross-Origin-Resource-Policy', 'same-origin'],
    ['Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()'],
    ...(tls ? [['Strict-Transport-Security', 'max-age=31536000'] as [string, string]] : []),
  ];
}

export function securityHeaders(tls: boolean): MiddlewareHandler {
  const entries = securityHeaderEntries(tls);
  return async (c, next) => {
    await next();
    for (const [name, value] of entries) c.res.headers.set(name, value);
  };
}

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isMutation(method: string): boolean {
  return !safeMethods.has(method.toUpperCase());
}

/** Layer 1 of the CSRF defence: throws unless the request comes from this server's own pages. */
export function checkSameOrigin(c: Context, tls: boolean): void {
  const fetchSite = c.req.header('sec-fetch-site');
  if (fetchSite !== undefined && fetchSite !== 'same-origin') {
    throw new AdminHttpError(
      'permission_denied',
      `cross-site request refused (Sec-Fetch-Site: ${fetchSite})`,
    );
  }
  const origin = c.req.header('origin');
  if (origin === undefined) return;
  const host = c.req.header('host') ?? new URL(c.req.url).host;
  const expected = `${tls ? 'https' : 'http'}://${host}`;
  if (origin.toLowerCase() !== expected.toLowerCase()) {
    throw new AdminHttpError(
      'permission_denied',
      `cross-origin request refused (Origin ${origin.slice(0, 100)})`,
    );
  }
}

const loopbackHost = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?$/i;

/**
 * With login off, the server must answer only requests addressed to a loopback
 * name: otherwise a web page whose DNS name is re-pointed at 127.0.0.1 (DNS
 * rebinding) would be same-origin with this server and could drive it.
 */
export function loopbackHostOnly(): MiddlewareHandler {
  return async (c, next) => {
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (!loopbackHost.test(host)) {
      throw new AdminHttpError(
        'permission_denied',
        'login is off, so only requests to localhost, 127.0.0.1 or [::1] are answered; configure admin users to serve other names',
      );
    }
    await next();
  };
}
