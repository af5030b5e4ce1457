/**
 * STOP-GAP: a bare HTTP server on the admin address that serves `GET
 * /metrics` and nothing else, so Prometheus can scrape sepp before the admin
 * app exists. The admin app (src/admin) replaces it by mounting
 * `Telemetry.metricsText()` at `/metrics` itself; delete this file and its
 * two lines in app.ts then.
 *
 * It speaks HTTPS when `[admin.tls]` is configured; it has no login, like
 * most Prometheus endpoints (the metrics show queue names and counts, never
 * payloads or keys).
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { prometheusContentType } from './metrics.ts';

export interface StopGapMetricsServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

export interface StopGapOptions {
  host: string;
  port: number;
  metricsText: () => Promise<string>;
  tls?: { certPem: Buffer; keyPem: Buffer } | undefined;
}

export function startStopGapMetricsServer(options: StopGapOptions): Promise<StopGapMetricsServer> {
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: sepp serves /metrics here\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    options.metricsText().then(
      (text) => response.writeHead(200, { 'content-type': prometheusContentType }).end(text),
      (error: unknown) =>
        response
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`# collecting metrics failed: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  };
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }, handler)
    : createHttpServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Scrapers keep connections alive; do not let one hold up shutdown.
            server.closeAllConnections();
          }),
      });
    });
  });
}
