/**
 * The gRPC port's connections as metrics: how many are open, and what the
 * limits refused (src/rpc/connections.ts counts; these instruments read the
 * counts when someone collects, so an idle server pays nothing).
 */
import type { Meter } from '@opentelemetry/api';
import { attr } from './attributes.ts';

/**
 * What the rpc layer reports (its ConnectionStats). The shape is repeated
 * here on purpose: telemetry and rpc may not import each other; app.ts,
 * which connects them, makes TypeScript check that they agree.
 */
export interface ConnectionCounts {
  readonly open: number;
  readonly rejected: Readonly<Record<string, number>>;
  readonly refusedCalls: Readonly<Record<string, number>>;
}

export function observeConnections(meter: Meter, read: () => ConnectionCounts | undefined): void {
  const open = meter.createObservableUpDownCounter('sepp.grpc.connections.open', {
    unit: '{connection}',
    description: 'gRPC connections open now',
  });
  const rejected = meter.createObservableCounter('sepp.grpc.connections.rejected', {
    unit: '{connection}',
    description:
      'gRPC connections sepp closed, by reason: max_connections (grpc.max_connections reached) or handshake_timeout (no call opened within grpc.handshake_timeout_ms)',
  });
  const refused = meter.createObservableCounter('sepp.grpc.calls.refused', {
    unit: '{call}',
    description:
      'gRPC calls refused, by reason: unauthenticated (no valid API key) or keyless_limit (too many calls without a key open), both when their headers arrived, before any of their body was read; first_message_timeout (no first message within grpc.first_message_timeout_ms); unread_answers (a unary answer not sent: the answers its client has not read filled grpc.max_bytes_in_flight_per_connection or _per_key)',
  });
  meter.addBatchObservableCallback(
    (result) => {
      const counts = read();
      if (counts === undefined) return;
      result.observe(open, counts.open);
      for (const [reason, n] of Object.entries(counts.rejected))
        result.observe(rejected, n, { [attr.refusalReason]: reason });
      for (const [reason, n] of Object.entries(counts.refusedCalls))
        result.observe(refused, n, { [attr.refusalReason]: reason });
    },
    [open, rejected, refused],
  );
}
