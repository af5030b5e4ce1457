/**
 * The HTTP doors' connections as metrics (the admin port and the HTTP API):
 * how many each closed because the client took nothing of an answer within
 * the write deadline (platform/write-deadline.ts counts; this reads the counts
 * when someone collects).
 */
import type { Meter } from '@opentelemetry/api';
import { attr } from './attributes.ts';

/** Connections closed for the write deadline since the start, by door (`admin`, `http`). */
export type HttpDoorCounts = Readonly<Record<string, number>>;

export function observeHttpDoors(meter: Meter, read: () => HttpDoorCounts | undefined): void {
  const closed = meter.createObservableCounter('sepp.http.connections.closed', {
    unit: '{connection}',
    description:
      'Connections of the admin port (door admin) and the HTTP API (door http) that sepp closed, by reason: write_timeout (the client took nothing of an answer within http.write_timeout_ms; 30 s on the admin port)',
  });
  closed.addCallback((result) => {
    const counts = read();
    if (counts === undefined) return;
    for (const [door, n] of Object.entries(counts))
      result.observe(n, { [attr.httpDoor]: door, [attr.refusalReason]: 'write_timeout' });
  });
}
