/**
 * The limits sepp.enqueue checks, as this server has them (schema/postgres/0020): the
 * function runs in the application's transaction, where no server's config is, so each
 * server records its own in `server_limits` and the function takes the lowest of each among
 * the servers that recorded theirs in the last minute (the defaults when none did).
 *
 * One row per counter shard: the writer holds its shard's advisory lock alone while it is
 * connected (postgres-store.ts), so the row is this server's until its writer disconnects,
 * and the table holds at most one row per shard. The row names the writer session it is
 * written for (its backend's pid and start, 0023). It is written when the writer connects (on
 * its connection, before it serves: the row is its session's from then on), when a reload is
 * applied, and every `limitsIntervalMs` (10 s) on a read connection: there, only while the
 * writer's session still holds the shard's lock, as `pg_locks` says in the same statement,
 * and only over a row that names that session. A writer cut off may not know it yet, and
 * another server may have taken its shard meanwhile, even between that check and the write:
 * the row names the other server's writer then and is left as it is, and this server writes
 * its own once its writer reconnected (on another shard). Its time is the database's clock, as
 * the function's `now_ms` is: the servers' clocks play no part in which rows count.
 * A server that stops deletes its row last on its writer's connection, which still holds the
 * shard (`forget`): the function no longer counts it. One that cannot (killed, cut off)
 * counts until its row is a minute old.
 *
 * The 10 s and the minute are fixed, not settings (docs/postgres.md says why).
 */
import type pg from 'pg';
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
/** Longest a stopping server waits for the deletion of its row (`forget`). */
const forgetLimitsMs = 1000;

const columns = `(shard, max_name_length, max_idempotency_key_bytes, max_metadata_entries, max_metadata_bytes,
     max_schedule_ahead_ms, recorded_at_ms, writer_pid, writer_started_at)`;
/** The time is the database's (see the top of this file). */
const values = `$1::integer, $2::integer, $3::integer, $4::integer, $5::integer, $6::bigint,
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, $7::integer, $8::timestamptz`;
const replaced = `ON CONFLICT (shard) DO UPDATE SET
    max_name_length = excluded.max_name_length, max_idempotency_key_bytes = excluded.max_idempotency_key_bytes,
    max_metadata_entries = excluded.max_metadata_entries, max_metadata_bytes = excluded.max_metadata_bytes,
    max_schedule_ahead_ms = excluded.max_schedule_ahead_ms, recorded_at_ms = excluded.recorded_at_ms,
    writer_pid = excluded.writer_pid, writer_started_at = excluded.writer_started_at`;

/** $1 the shard whose lock the connection holds, $2–$6 the limits, $7 and $8 its session (`WriterBackend`). */
const recordLimitsSql = `INSERT INTO server_limits AS l ${columns} VALUES (${values}) ${replaced}`;

/**
 * The same from another connection: written only while the writer session `$7` holds the
 * shard's lock (class `$9`), and `$7` is that session while its backend started at `$8` (a
 * backend's pid may be given to another session, of another server, once it ended); and over
 * a row of that session only, which the row's lock makes hold at the write: another writer's
 * row committed after the check is left as it is (0023).
 */
const recordHeldLimits = statement(`INSERT INTO server_limits AS l ${columns}
  SELECT ${values}
   WHERE EXISTS (
     SELECT 1 FROM pg_locks k JOIN pg_stat_activity a ON a.pid = k.pid
      WHERE k.locktype = 'advisory' AND k.granted AND k.classid = $9::integer::oid
        AND k.objid = $1::integer::oid AND k.objsubid = 2
        AND k.pid = $7::integer AND a.backend_start = $8::timestamptz)
  ${replaced}
   WHERE l.writer_pid = excluded.writer_pid AND l.writer_started_at = excluded.writer_started_at`);

/** A writer's session: its backend's pid and the time that backend started, as the database says. */
export interface WriterBackend {
  readonly pid: number;
  /** `pg_stat_activity.backend_start` as text (the database's own, compared as it gave it). */
  readonly startedAt: string;
}

/** Answers the `WriterBackend` of the connection it runs on. */
const writerBackendSql = `SELECT pid, backend_start::text AS "startedAt"
  FROM pg_stat_activity WHERE pid = pg_backend_pid()`;

/** $1 the shard whose lock the connection holds: its server stops. */
const forgetLimitsSql = 'DELETE FROM server_limits WHERE shard = $1';

/** The parameters of both writes of the row. */
function recordValues(shard: number, limits: EnqueueLimits, writer: WriterBackend): unknown[] {
  return [
    shard,
    limits.maxNameLength,
    limits.maxIdempotencyKeyBytes,
    limits.maxMetadataEntries,
    limits.maxMetadataBytes,
    limits.maxScheduleAheadMs,
    writer.pid,
    writer.startedAt,
  ];
}

/** A writer's shard and its session, the row's owner. */
export interface ShardHold {
  readonly shard: number;
  readonly writer: WriterBackend;
}

export interface ServerLimitOps {
  /**
   * Records `limits` as the server's whose writer `hold.writer` holds `hold.shard` under the
   * lock class `lockClass`, if it still does and the row is its own (in a transaction that may
   * write); answers whether it did.
   */
  recordIfHeld(hold: ShardHold, lockClass: number, limits: EnqueueLimits): Op<boolean>;
}

export function serverLimitOps(c: Connection): ServerLimitOps {
  return {
    *recordIfHeld(hold, lockClass, limits) {
      const values = [...recordValues(hold.shard, limits, hold.writer), lockClass];
      return (yield* changes(c, recordHeldLimits, values)) === 1;
    },
  };
}

/** What the record needs of its store. */
export interface ServerLimitsStore {
  /** The writer's connection now, if it has one. */
  writer(): pg.Client | undefined;
  /** `ServerLimitOps.recordIfHeld` on a read connection, with the store's lock class of shards. */
  recordIfHeld(hold: ShardHold, limits: EnqueueLimits): Promise<boolean>;
}

/**
 * This server's limits row: written as its writer connects (`connected`), at each look and
 * when told (`record`), deleted as it stops (`stop`, then `forget`). Without limits (a store
 * not given any) nothing is written.
 */
export class ServerLimitsRecord {
  /** Each writer connection's hold, from its `connected`. */
  private readonly holds = new WeakMap<pg.Client, ShardHold>();
  /** The last look's write, ended or not (a stop waits for it). */
  private writing: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(
    private limits: EnqueueLimits | undefined,
    private readonly store: ServerLimitsStore,
  ) {}

  /**
   * On the writer's connection `client` as it connects, holding `shard`: reads its session and
   * writes the row for it, so that sepp.enqueue follows this server's limits at once.
   */
  async connected(client: pg.Client, shard: number): Promise<void> {
    const writer = (await client.query<WriterBackend>(writerBackendSql)).rows[0];
    if (writer === undefined) throw new Error('pg_stat_activity does not show the writer’s own session');
    if (this.limits !== undefined)
      await client.query(recordLimitsSql, recordValues(shard, this.limits, writer));
    this.holds.set(client, { shard, writer });
  }

  /**
   * Records `limits` (after a reload), and from then on at each look; resolves once written.
   * Not written while the writer is not connected, nor once its session lost the shard
   * without knowing yet: its next connection writes them.
   */
  async record(limits: EnqueueLimits): Promise<void> {
    this.limits = limits;
    await this.look();
  }

  /** Writes the row again, if this server has limits and its writer's session still holds its shard. */
  async look(): Promise<void> {
    const { limits } = this;
    const client = this.store.writer();
    const hold = client === undefined ? undefined : this.holds.get(client);
    if (limits === undefined || hold === undefined || this.stopped) return;
    const written = this.store.recordIfHeld(hold, limits);
    this.writing = written.catch(() => {});
    await written;
  }

  /** No look writes from now on; resolves once the last one ended (its row is then deleted by `forget`). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.writing;
  }

  /**
   * Deletes the row of the writer's connection `client` as the server stops, last on it: it
   * holds the shard. Gives up after `forgetLimitsMs`, so that a database that no longer answers
   * does not hold the shutdown: the row then counts until it is a minute old.
   */
  async forget(client: pg.Client, broken: boolean): Promise<void> {
    const hold = this.holds.get(client);
    if (this.limits === undefined || hold === undefined || broken) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, forgetLimitsMs);
    });
    const forgotten = client.query(forgetLimitsSql, [hold.shard]).catch(() => {});
    await Promise.race([forgotten, late]);
    clearTimeout(timer);
  }
}
