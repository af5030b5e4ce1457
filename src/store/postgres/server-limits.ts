/**
 * The limits sepp.enqueue checks, as this server has them (schema/postgres/0020): the
 * function runs in the application's transaction, where no server's config is, so each
 * server records its own in `server_limits` and the function takes the lowest of each among
 * the servers that recorded theirs in the last minute (the defaults when none did).
 *
 * One row per counter shard: the writer holds its shard's advisory lock alone while it is
 * connected (postgres-store.ts), so the row is this server's until its writer disconnects,
 * and the table holds at most one row per shard. The row is written when the writer connects
 * (on its connection, before it serves), when a reload is applied, and every
 * `limitsIntervalMs` (10 s) on a read connection. Its time is the database's clock, as
 * the function's `now_ms` is: the servers' clocks play no part in which rows count.
 * A server that stops deletes its row last on its writer's connection, which still holds the
 * shard (`forgetLimitsSql`): the function no longer counts it. One that cannot (killed, cut
 * off) counts until its row is a minute old.
 */
import type { Op } from '../op.ts';
import { type Connection, changes, statement } from './sql.ts';

/** The `[limits]` sepp.enqueue checks (engine/settings.ts names them; the store does not import the engine). */
export interface EnqueueLimits {
  readonly maxNameLength: number;
  readonly maxIdempotencyKeyBytes: number;
  readonly maxMetadataEntries: number;
  readonly maxMetadataBytes: number;
  readonly maxScheduleAheadMs: number;
}

/** How often a server records its limits again, unless the options say otherwise. */
export const defaultLimitsIntervalMs = 10_000;

/** $1 the shard, $2–$6 the limits; the time is the database's (see the top of this file). */
export const recordLimitsSql = `INSERT INTO server_limits AS l
    (shard, max_name_length, max_idempotency_key_bytes, max_metadata_entries, max_metadata_bytes,
     max_schedule_ahead_ms, recorded_at_ms)
  VALUES ($1, $2, $3, $4, $5, $6, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
  ON CONFLICT (shard) DO UPDATE SET
    max_name_length = excluded.max_name_length, max_idempotency_key_bytes = excluded.max_idempotency_key_bytes,
    max_metadata_entries = excluded.max_metadata_entries, max_metadata_bytes = excluded.max_metadata_bytes,
    max_schedule_ahead_ms = excluded.max_schedule_ahead_ms, recorded_at_ms = excluded.recorded_at_ms`;
const recordLimits = statement(recordLimitsSql);

/** $1 the shard whose lock the connection holds: its server stops. */
export const forgetLimitsSql = 'DELETE FROM server_limits WHERE shard = $1';

/** The parameters of `recordLimitsSql`. */
export function recordLimitsValues(shard: number, limits: EnqueueLimits): unknown[] {
  return [
    shard,
    limits.maxNameLength,
    limits.maxIdempotencyKeyBytes,
    limits.maxMetadataEntries,
    limits.maxMetadataBytes,
    limits.maxScheduleAheadMs,
  ];
}

export interface ServerLimitOps {
  /** Records `limits` as the server's that holds `shard` (in a transaction that may write). */
  record(shard: number, limits: EnqueueLimits): Op<void>;
}

export function serverLimitOps(c: Connection): ServerLimitOps {
  return {
    *record(shard, limits) {
      yield* changes(c, recordLimits, recordLimitsValues(shard, limits));
    },
  };
}
