/**
 * The HTTP doors' connections and refusals as metrics (the admin port and the
 * HTTP API): how many connections each closed because the client took nothing
 * of an answer within the write deadline (platform/write-deadline.ts counts),
 * and how many requests of the HTTP API were refused because its clients' answers
 * not yet read filled a budget (http/unsent-answers.ts counts; gRPC counts its
 * own in sepp.grpc.calls.refused). This reads the counts when someone collects.
 */
import type { Meter } from '@opentelemetry/api';
import { attr } from './attributes.ts';

export interface HttpDoorCounts {
  /** Connections closed for the write deadline since the start, by door (`admin`, `http`). */
  readonly writeTimeouts: Readonly<Record<string, number>>;
  /** Requests of the HTTP API refused since the start, by reason (`unread_answers`). */
  readonly httpRefused: Readonly<Record<string, number>>;
}

export function observeHttpDoors(meter: Meter, read: () => HttpDoorCounts | undefined): void {
  const closed = meter.createObservableCounter('sepp.http.connections.closed', {
    unit: '{connection}',
    description:
      'Connections of the admin port (door admin) and the HTTP API (door http) that sepp closed, by reason: write_timeout (the client took nothing of an answer within http.write_timeout_ms; 30 s on the admin port)',
  });
  const refused = meter.createObservableCounter('sepp.http.requests.refused', {
    unit: '{request}',
    description:
      'Requests of the HTTP API (door http) refused with 429, by reason: unread_answers (the answers its clients have not read filled http.max_in_flight_bytes_per_key or http.max_in_flight_bytes; counted whether the request was refused before it was carried out or its answer was not sent)',
  });
  meter.addBatchObservableCallback(
    (result) => {
      const counts = read();
      if (counts === undefined) return;
      for (const [door, n] of Object.entries(counts.writeTimeouts))
        result.observe(closed, n, { [attr.httpDoor]: door, [attr.refusalReason]: 'write_timeout' });
      for (const [reason, n] of Object.entries(counts.httpRefused))
        result.observe(refused, n, { [attr.httpDoor]: 'http', [attr.refusalReason]: reason });
    },
    [closed, refused],
  );
}
