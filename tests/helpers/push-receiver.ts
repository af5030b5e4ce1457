/**
 * A push receiver for tests: a real HTTP server on 127.0.0.1:0 that records
 * every delivery (headers, exact body, whether its signature verifies) and
 * answers as the test's handler says — 200 with a result, 500, 429 with
 * Retry-After, a hang, a closed connection.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { verifySignature } from '../../src/push/index.ts';

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: {
    jobId: string;
    attempt: number;
    queue: string;
    type: string;
    payload?: unknown;
    metadata: Record<string, string>;
    batchId: string | null;
    leaseToken: string | null;
  };
  /** The Sepp-Signature header verified against the body with the test's secret. */
  signed: boolean;
  atMs: number;
}

export type Answer = (delivery: Delivery, res: ServerResponse, socket: Socket) => void;

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Requests being answered now, and the most at once. */
  open: number;
  maxOpen: number;
  /** Replaces how deliveries are answered. */
  answer: Answer;
  /** Resolves once `n` deliveries have arrived (or rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const ok: Answer = (_d, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

export async function startReceiver(secret: string, answer: Answer = ok): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const waiters = new Set<() => boolean>();
  const receiver: Receiver = {
    url: '',
    deliveries: [],
    open: 0,
    maxOpen: 0,
    answer,
    waitFor(n, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (receiver.deliveries.length < n) return false;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${receiver.deliveries.length} deliveries, waited for ${n}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    receiver.open++;
    receiver.maxOpen = Math.max(receiver.maxOpen, receiver.open);
    hanging.add(res);
    res.on('close', () => {
      receiver.open--;
      hanging.delete(res);
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const header = String(req.headers['sepp-signature'] ?? '');
      const delivery: Delivery = {
        headers: req.headers,
        body,
        json: JSON.parse(body.toString('utf8')),
        signed: verifySignature(Buffer.from(secret), header, body, Math.floor(Date.now() / 1000)),
        atMs: Date.now(),
      };
      receiver.deliveries.push(delivery);
      for (const check of [...waiters]) check();
      receiver.answer(delivery, res, req.socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
