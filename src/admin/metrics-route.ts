/**
 * `/metrics` on the admin app, for Prometheus. Open by default (counts and
 * sizes, no job data); with telemetry.metrics_token set, it needs
 * `Authorization: Bearer <token>`, compared as SHA-256 digests in constant
 * time, like an API key. It never needs a session or a CSRF token: a scraper
 * has neither.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';
import { errorResponse } from './http-errors.ts';

export interface MetricsRouteOptions {
  /** Hex SHA-256 of the token required; null requires none. Read on every scrape (a reload may change it). */
  tokenSha256: () => string | null;
  contentType: string;
  /** The Prometheus text exposition. */
  render(): Promise<string>;
}

export function mountMetrics(app: Hono, options: MetricsRouteOptions): void {
  app.get('/metrics', async (c) => {
    const tokenSha256 = options.tokenSha256();
    const expected = tokenSha256 === null ? null : Buffer.from(tokenSha256, 'hex');
    if (expected !== null && !bearerMatches(c.req.header('authorization'), expected)) {
      c.header('WWW-Authenticate', 'Bearer realm="sepp metrics"');
      return errorResponse(
        c,
        'unauthenticated',
        '/metrics needs "Authorization: Bearer <token>" with the token of telemetry.metrics_token',
      );
    }
    return c.body(await options.render(), 200, { 'content-type': options.contentType });
  });
}

function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  if (match === null) return false;
  const given = createHash('sha256')
    .update(match[1] ?? '', 'utf8')
    .digest();
  return timingSafeEqual(given, expected);
}
