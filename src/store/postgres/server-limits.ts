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
 * `limitsIntervalMs` (10 s) on a read connection: there, only while the writer's session (its
 * backend's pid and start) still holds the shard's lock, as `pg_locks` says in the same
 * statement. A writer cut off may not know it yet, and another server may have taken its shard
 * meanwhile: the row is that server's then, and this one writes its own once its writer
 * reconnected (on another shard). Its time is the database's clock, as
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

const columns = `(shard, max_name_length, max_idempotency_key_bytes, max_metadata_entries, max_metadata_bytes,
     max_schedule_ahead_ms, recorded_at_ms)`;
/** The time is the database's (see the top of this file). */
const values = `$1::integer, $2::integer, $3::integer, $4::integer, $5::integer, $6::bigint,
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;
const replaced = `ON CONFLICT (shard) DO UPDATE SET
    max_name_length = excluded.max_name_length, max_idempotency_key_bytes = excluded.max_idempotency_key_bytes,
    max_metadata_entries = excluded.max_metadata_entries, max_metadata_bytes = excluded.max_metadata_bytes,
    max_schedule_ahead_ms = excluded.max_schedule_ahead_ms, recorded_at_ms = excluded.recorded_at_ms`;

/** $1 the shard whose lock the connection holds, $2–$6 the limits. */
export const recordLimitsSql = `INSERT INTO server_limits AS l ${columns} VALUES (${values}) ${replaced}`;

/**
 * The same from another connection: written only while the writer session `$8` holds the
 * shard's lock (class `$7`), and `$8` is that session while its backend started at `$9` (a
 * backend's pid may be given to another session, of another server, once it ended).
 */
const recordHeldLimits = statement(`INSERT INTO server_limits AS l ${columns}
  SELECT ${values}
   WHERE EXISTS (
     SELECT 1 FROM pg_locks k JOIN pg_stat_activity a ON a.pid = k.pid
      WHERE k.locktype = 'advisory' AND k.granted AND k.classid = $7::integer::oid
        AND k.objid = $1::integer::oid AND k.objsubid = 2
        AND k.pid = $8::integer AND a.backend_start = $9::timestamptz)
  ${replaced}`);

/** A writer's session: its backend's pid and the time that backend started, as the database says. */
export interface WriterBackend {
  readonly pid: number;
  /** `pg_stat_activity.backend_start` as text (the database's own, compared as it gave it). */
  readonly startedAt: string;
}

/** Answers the `WriterBackend` of the connection it runs on. */
export const writerBackendSql = `SELECT pid, backend_start::text AS "startedAt"
  FROM pg_stat_activity WHERE pid = pg_backend_pid()`;

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
  /**
   * Records `limits` as the server's whose writer `holder` holds `shard` under the lock class
   * `lockClass`, if it still does (in a transaction that may write); answers whether it did.
   */
  recordIfHeld(shard: number, lockClass: number, holder: WriterBackend, limits: EnqueueLimits): Op<boolean>;
}

export function serverLimitOps(c: Connection): ServerLimitOps {
  return {
    *recordIfHeld(shard, lockClass, holder, limits) {
      const values = [...recordLimitsValues(shard, limits), lockClass, holder.pid, holder.startedAt];
      return (yield* changes(c, recordHeldLimits, values)) === 1;
    },
  };
}
