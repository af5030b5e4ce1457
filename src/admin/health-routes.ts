/**
 * Liveness and readiness for load balancers, orchestrators and monitors, on
 * the admin address, without authentication (they say nothing about jobs):
 *
 * - `GET /healthz`: the process is up and its HTTP server answers. 200.
 * - `GET /readyz`: 200 while sepp can serve (database open and readable, not
 *   shutting down), else 503 with the reason. A load balancer takes the
 *   server out of rotation on 503, as sepp stops at SIGTERM.
 *
 * Both answer `{"status": …}` in a few bytes, never cached. They are mounted
 * ahead of the loopback Host check: a probe addresses the server by its IP.
 */
import type { Hono } from 'hono';

export type Readiness = { ready: true } | { ready: false; reason: string };

export function mountHealthRoutes(app: Hono, readiness: () => Readiness | Promise<Readiness>): void {
  const headers = { 'Cache-Control': 'no-store', 'Content-Type': 'application/json' };
  app.on(['GET', 'HEAD'], '/healthz', (c) => c.body('{"status":"ok"}\n', 200, headers));
  app.on(['GET', 'HEAD'], '/readyz', async (c) => {
    let state: Readiness;
    try {
      state = await readiness();
    } catch (error) {
      state = { ready: false, reason: error instanceof Error ? error.message : String(error) };
    }
    if (state.ready) return c.body('{"status":"ready"}\n', 200, headers);
    return c.body(`${JSON.stringify({ status: 'not_ready', reason: state.reason })}\n`, 503, headers);
  });
}
