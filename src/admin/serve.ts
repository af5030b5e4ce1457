/**
 * Serves an admin app on a socket with @hono/node-server: plain HTTP, or HTTPS
 * when given a certificate and key. The composition root decides the address
 * and owns the returned server's lifetime (close it on shutdown).
 */

import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface ServeAdminOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** PEM certificate chain and private key. */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

export interface AdminServer {
  /** The bound address (the real port when 0 was asked). */
  address: AddressInfo;
  url: string;
  close(): Promise<void>;
}

export function serveAdmin(app: Hono, options: ServeAdminOptions): Promise<AdminServer> {
  return new Promise((resolve, reject) => {
    const tlsOptions =
      options.tls === undefined
        ? {}
        : {
            createServer: createHttpsServer,
            serverOptions: { cert: options.tls.cert, key: options.tls.key },
          };
    const server = serve(
      { fetch: app.fetch, hostname: options.host, port: options.port, ...tlsOptions },
      (info) => {
        const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
        resolve({
          address: info,
          url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${info.port}`,
          close: () =>
            new Promise<void>((done, fail) => {
              server.close((error) => (error ? fail(error) : done()));
              // Idle keep-alive connections would hold close() open.
              if ('closeAllConnections' in server) server.closeAllConnections();
            }),
        });
      },
    );
    server.once('error', reject);
  });
}
