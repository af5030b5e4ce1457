/**
 * The PostgreSQL store (issue 37; docs/decisions/0100-postgres-store-design.md):
 * the Store interface over a PostgreSQL database that several sepp servers may
 * share. Each server has one writer connection (writer.ts: batches of units,
 * one transaction each, a savepoint per unit) and a pool of read connections
 * (readers.ts); every operation is a prepared statement on the unit's
 * connection, and the engine's units wait for it through `resume` (op.ts).
 *
 * Opening is asynchronous (connect, migrate under an advisory lock, take a
 * counter shard): `start()` does it, and the first write or read waits for it,
 * so a store can be made where a synchronous one is expected.
 *
 * Workflows (job dependencies, flows, batches) work as on SQLite (dependencies.ts says
 * how several servers make each release and each batch's end happen once). What only the
 * SQLite store has — an online backup, the disk reserve, its files — this store does not have: the engine answers FAILED_PRECONDITION
 * naming the kind (`postgres`) when asked for a backup; use pg_dump or the
 * provider's backups.
 */
import type pg from 'pg';
import { parsePostgresUrl } from '../postgres-url.ts';
import {
  ReadsRefused,
  type ReadUnit,
  type ReplicationMode,
  StorageFailure,
  type Store,
  type StoreDescription,
  type StoreView,
  TextRefused,
  type WriteHooks,
  type WriteUnit,
} from '../store.ts';
import { auditOps } from './audit.ts';
import { browseOps } from './browse.ts';
import { bulkOps } from './bulk.ts';
import { connectPostgres, type PostgresConnectOptions, storageFailure } from './connect.ts';
import { controlOps } from './control.ts';
import { countOps } from './counts.ts';
import { deadLetterOps } from './dead-letters.ts';
import { dependencyOps } from './dependencies.ts';
import { flowOps } from './flow.ts';
import { historyOps } from './history.ts';
import { jobOps } from './jobs.ts';
import { keyOps } from './keys.ts';
import { leaseOps } from './leases.ts';
import {
  type AppliedMigration,
  mayRunOn,
  migrate,
  migratedWhileRunning,
  type SchemaOps,
  type SchemaRule,
  schemaOps,
  schemaRule,
} from './migrate.ts';
import { queueOps } from './queues.ts';
import { ReadPool } from './readers.ts';
import { scheduleOps } from './schedules.ts';
import {
  defaultLimitsIntervalMs,
  type EnqueueLimits,
  type ServerLimitOps,
  ServerLimitsRecord,
  serverLimitOps,
} from './server-limits.ts';
import { sessionOps } from './sessions.ts';
import { settingOps } from './settings.ts';
import { PostgresSignals } from './signals.ts';
import type { Connection } from './sql.ts';
import { type StatisticsOps, statisticsOps } from './statistics.ts';
import { type Capabilities, PostgresWriter, type WriterSession, writerSession } from './writer.ts';

export interface PostgresStoreOptions extends PostgresConnectOptions {
  /** Connections of this server: one writer, the rest for reads (at least 2). */
  readonly poolSize: number;
  /**
   * Reads that may wait for a read connection at once; one more is refused at once
   * (ReadsRefused, readers.ts). Default `defaultMaxWaitingReads`.
   */
  readonly maxWaitingReads?: number;
  /**
   * Read calls one caller may have in flight while reads wait for a connection (the engine's
   * ReadShares refuses one more). Default `defaultMaxWaitingReadsPerKey`.
   */
  readonly maxWaitingReadsPerKey?: number;
  /** Told of each read refused that way, with how many were refused so far (for the log). */
  readonly onReadsRefused?: (refusedTotal: number) => void;
  /** Told what the start applied (one line per migration, for the log). */
  readonly onMigrated?: (applied: readonly AppliedMigration[]) => void;
  /**
   * Told each time the writer connects (the start, and again after a failover or a lost
   * connection): the host and the database's replication mode, for the log.
   */
  readonly onConnected?: (connected: { host: string; replication: ReplicationFacts }) => void;
  readonly maxBatchOperations?: number;
  /** How often each server's engine polls for what a lost signal would have told it; default 1 s. */
  readonly pollIntervalMs?: number;
  /**
   * How often the store looks whether a growing table needs an ANALYZE (statistics.ts);
   * default 1 s; 0: never (a test calls `refreshStatistics` itself).
   */
  readonly statisticsIntervalMs?: number;
  /**
   * Told when that look fails (the database unreachable, an ANALYZE refused), once until it
   * works again: meanwhile the plans rest on autovacuum's statistics only.
   */
  readonly onStatisticsFailed?: (error: unknown) => void;
  /**
   * How often the store looks whether a newer sepp migrated the schema past this server while it runs
   * (`checkSchema`); default 1 s; 0: never (a test calls `checkSchema` itself).
   */
  readonly schemaCheckIntervalMs?: number;
  /** Told once when it did: from then on every read and write is refused with `why`. */
  readonly onSchemaMigrated?: (why: string) => void;
  /**
   * This server's `[limits]` that sepp.enqueue checks, recorded in the schema for it
   * (server-limits.ts; `recordLimits` after a reload); absent, none are recorded.
   */
  readonly limits?: EnqueueLimits;
  /** How often they are recorded again; default 10 s; 0: only at connect and by `recordLimits`. */
  readonly limitsIntervalMs?: number;
}

/** Every capability over one connection. */
export function postgresCapabilities(c: Connection): Capabilities {
  return {
    queues: queueOps(c),
    counts: countOps(c),
    jobs: jobOps(c),
    keys: keyOps(c),
    leases: leaseOps(c),
    flow: flowOps(c),
    control: controlOps(c),
    bulk: bulkOps(c),
    deadLetters: deadLetterOps(c),
    browse: browseOps(c),
    schedules: scheduleOps(c),
    audit: auditOps(c),
    settings: settingOps(c),
    sessions: sessionOps(c),
    history: historyOps(c),
    dependencies: dependencyOps(c),
  };
}

/** The primary's replication as its writer last read it (docs/replication.md). */
export interface ReplicationFacts {
  readonly mode: ReplicationMode;
  /** Standbys streaming from the primary now. */
  readonly standbys: number;
  /** `synchronous_standby_names` and `synchronous_commit` as the primary has them. */
  readonly synchronousStandbyNames: string;
  readonly synchronousCommit: string;
}

/**
 * Synchronous when a commit waits for a standby (synchronous_standby_names is set and
 * synchronous_commit is on, remote_apply or remote_write); asynchronous when standbys
 * stream but commits do not wait for them; none without a standby.
 */
const replicationQuery = `SELECT current_setting('synchronous_commit') AS commit,
  current_setting('synchronous_standby_names') AS names,
  (SELECT count(*) FROM pg_stat_replication) AS standbys`;

async function readReplication(client: pg.Client): Promise<ReplicationFacts> {
  const { rows } = await client.query<{ commit: string; names: string; standbys: number }>(replicationQuery);
  const { commit = 'on', names = '', standbys = 0 } = rows[0] ?? {};
  const waits = names.trim() !== '' && ['on', 'remote_apply', 'remote_write'].includes(commit);
  const mode: ReplicationMode = waits ? 'synchronous' : standbys > 0 ? 'asynchronous' : 'none';
  return { mode, standbys: Number(standbys), synchronousStandbyNames: names, synchronousCommit: commit };
}

/** Reads that may wait for a read connection unless the options say otherwise (store.max_waiting_reads). */
export const defaultMaxWaitingReads = 1000;
/** Each caller's share of them unless the options say otherwise (store.max_waiting_reads_per_key). */
export const defaultMaxWaitingReadsPerKey = 100;

/** The advisory-lock class of counter shards (the second key is the shard number). */
const shardLockClass = 0x5e9a;
/** Most servers on one schema: shards are numbered 1 to this. */
const maxShards = 1024;

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  private readonly writer: PostgresWriter;
  private readonly readers: ReadPool<
    Capabilities & {
      readonly statistics: StatisticsOps;
      readonly schema: SchemaOps;
      readonly serverLimits: ServerLimitOps;
    }
  >;
  /** This server's limits row for sepp.enqueue (the options' limits, then a reload's). */
  private readonly serverLimits: ServerLimitsRecord;
  readonly signals: PostgresSignals;
  /** Reads waiting for a read connection now, each caller's share of them, and the reads refused. */
  readonly readQueue: {
    readonly waiting: number;
    readonly sharePerCaller: number;
    readonly refusedTotal: number;
  };
  private started: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /**
   * What `describe` shows that holds while the store runs, worked out once: the configured
   * host (until a writer connects), the database and the bounds. They come from the store
   * settings, which a reload does not change (they take a restart: config/config-view.ts).
   */
  private readonly configured: Omit<
    StoreDescription,
    'kind' | 'replication' | 'standbys' | 'signalsConnected' | 'schema'
  >;

  constructor(private readonly options: PostgresStoreOptions) {
    this.writer = new PostgresWriter({
      connect: () => this.connectWriter(),
      ...(options.maxBatchOperations === undefined ? {} : { maxBatchOperations: options.maxBatchOperations }),
    });
    this.readers = new ReadPool(
      {
        size: Math.max(1, options.poolSize - 1),
        maxWaiting: options.maxWaitingReads ?? defaultMaxWaitingReads,
        ...(options.onReadsRefused === undefined ? {} : { onRefused: options.onReadsRefused }),
      },
      (onError) => this.connectClient(onError),
      (c) => ({
        ...(postgresCapabilities(c) satisfies StoreView),
        statistics: statisticsOps(c),
        schema: schemaOps(c),
        serverLimits: serverLimitOps(c),
      }),
    );
    this.serverLimits = new ServerLimitsRecord(options.limits, {
      writer: () => this.writer.current?.client,
      recordIfHeld: (hold, limits) =>
        this.readers.read((view) => view.serverLimits.recordIfHeld(hold, shardLockClass, limits), true),
    });
    const readers = this.readers;
    this.readQueue = {
      get waiting() {
        return readers.waitingReads;
      },
      get refusedTotal() {
        return readers.refusedTotal;
      },
      sharePerCaller: options.maxWaitingReadsPerKey ?? defaultMaxWaitingReadsPerKey,
    };
    this.signals = new PostgresSignals(
      (onError) => this.connectClient(onError),
      options.schema,
      options.pollIntervalMs ?? 1000,
    );
    const target = parsePostgresUrl(options.url);
    const url = new URL(target instanceof Error ? options.url : target.hosts[0]!.url);
    this.configured = {
      host: `${url.hostname}:${url.port === '' ? '5432' : url.port}`,
      database: decodeURIComponent(url.pathname.replace(/^\//, '')) || null,
      poolSize: options.poolSize,
      maxWaitingReads: options.maxWaitingReads ?? defaultMaxWaitingReads,
      maxWaitingReadsPerKey: this.readQueue.sharePerCaller,
      statementTimeoutMs: options.statementTimeoutMs,
    };
  }

  /** Connects, applies the migrations and takes a counter shard; rejects with a StorageFailure or a schema error. */
  start(): Promise<void> {
    // A start that failed (the database was not reachable) is tried again by the next call.
    this.started ??= this.writer.open().catch((error: unknown) => {
      this.started = undefined;
      throw error;
    });
    return this.started;
  }

  describe(): StoreDescription {
    const writer = this.writer.current?.client;
    return {
      kind: this.kind,
      ...this.configured,
      // The host the writer is connected to (of several, after a failover: the new primary).
      ...(writer === undefined ? {} : { host: `${writer.host}:${writer.port}` }),
      replication: this.replication?.mode ?? null,
      standbys: this.replication?.standbys ?? null,
      schema: this.options.schema,
      signalsConnected: this.signals.listening,
    };
  }

  attach(hooks: WriteHooks): void {
    this.writer.hooks = hooks;
  }

  /** Queued at once, in order; the writer's first batch connects and migrates if nothing did yet. */
  write<T>(unit: WriteUnit<T>): Promise<T> {
    if (this.closing !== undefined) return Promise.reject(this.writer.hooks.closed());
    if (this.overtaken !== undefined) return Promise.reject(this.writer.hooks.commitFailed(this.overtaken));
    return this.writer.submit(unit);
  }

  read<T>(unit: ReadUnit<T>): Promise<T> {
    if (this.closing !== undefined) return Promise.reject(this.writer.hooks.closed());
    if (this.overtaken !== undefined) return Promise.reject(this.writer.hooks.commitFailed(this.overtaken));
    return this.start().then(() =>
      this.readers.read(unit).catch((error: unknown) => {
        if (error instanceof StorageFailure) throw this.writer.hooks.commitFailed(storageFailure(error));
        if (error instanceof ReadsRefused) throw this.writer.hooks.readsRefused?.(error) ?? error;
        if (error instanceof TextRefused) throw this.writer.hooks.unitFailed(error);
        throw error;
      }),
    );
  }

  /** Units waiting for the next batch. */
  get pendingWrites(): number {
    return this.writer.pending;
  }

  /** The counter shard this server's writer holds now (undefined while it is not connected). */
  get shard(): number | undefined {
    return this.writer.current === undefined ? undefined : this.shardOf.get(this.writer.current);
  }

  /**
   * Analyzes the tables that grew since their last ANALYZE (statistics.ts), on a read
   * connection; answers their names. Every `statisticsIntervalMs` once the writer connected.
   */
  refreshStatistics(): Promise<string[]> {
    if (this.closing !== undefined) return Promise.reject(this.writer.hooks.closed());
    if (this.overtaken !== undefined) return Promise.resolve([]);
    return this.start().then(() => this.readers.read((view) => view.statistics.refresh()));
  }

  /**
   * Set once a newer sepp migrated the schema while this server ran with a migration whose
   * rule excludes this server (migrate.ts `SchemaRule`): this server's statements were written
   * for the schema it migrated to, and the newer one's tables and columns would not be kept by
   * them (a count it does not know of, a column it leaves out), so every read and write is
   * refused from then on. A migration whose rule admits it leaves it serving.
   */
  private overtaken: StorageFailure | undefined;

  /**
   * Looks whether a newer sepp migrated the schema past this server since it migrated it;
   * answers why everything is refused, or null. Every `schemaCheckIntervalMs` once the writer
   * connected, and on every reconnection of the writer.
   */
  async checkSchema(): Promise<string | null> {
    if (this.overtaken === undefined) {
      await this.start();
      this.noteSchemaRule(await this.readers.read((view) => view.schema.rule()));
    }
    return this.overtaken?.message ?? null;
  }

  private noteSchemaRule(rule: SchemaRule): void {
    if (mayRunOn(rule) || this.overtaken !== undefined) return;
    const why = migratedWhileRunning(this.options.schema, rule);
    this.overtaken = new StorageFailure(why, { cause: undefined, diskFull: false, lasting: true });
    this.options.onSchemaMigrated?.(why);
  }

  /**
   * Records `limits` as this server's for sepp.enqueue (after a reload), and from then on at
   * each look; resolves once written (server-limits.ts says when it is not).
   */
  recordLimits(limits: EnqueueLimits): Promise<void> {
    return this.serverLimits.record(limits);
  }

  private readonly timers: ReturnType<typeof setInterval>[] = [];

  /**
   * Runs `look` every `everyMs` (0: never), one at a time, from the first connection of the
   * writer on; a failure waits for the next look and is told to `failed` once until one works.
   */
  private repeat(everyMs: number, look: () => Promise<unknown>, failed?: (error: unknown) => void): void {
    if (everyMs <= 0 || this.closing !== undefined) return;
    let running = false;
    let failing = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      look()
        .then(
          () => {
            failing = false;
          },
          (error: unknown) => {
            if (failing || this.closing !== undefined) return;
            failing = true;
            failed?.(error);
          },
        )
        .finally(() => {
          running = false;
        });
    }, everyMs);
    timer.unref();
    this.timers.push(timer);
  }

  private watching = false;

  /** Starts the looks at the statistics and at the schema's version, once. */
  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    this.repeat(
      this.options.statisticsIntervalMs ?? 1000,
      () => this.refreshStatistics(),
      this.options.onStatisticsFailed,
    );
    // A failed look is an outage of the database, which the engine's calls report.
    this.repeat(this.options.schemaCheckIntervalMs ?? 1000, () => this.checkSchema());
    this.repeat(this.options.limitsIntervalMs ?? defaultLimitsIntervalMs, () => this.serverLimits.look());
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      // A look writing the limits row ends first: the row it writes is deleted as the writer closes.
      await this.serverLimits.stop();
      await this.writer.close((session) => this.serverLimits.forget(session.client, session.broken));
      await this.readers.close();
      await this.signals.close();
    })();
    return this.closing;
  }

  private readonly shardOf = new WeakMap<WriterSession, number>();
  private migrated = false;
  /** The primary's replication, read each time the writer connects. */
  private replication: ReplicationFacts | undefined;

  private connectClient(onError: (error: Error) => void, pipeline = false): Promise<pg.Client> {
    return connectPostgres({ ...this.options, pipeline }, onError);
  }

  /** The writer's connection: migrated (once per store), with a counter shard of its own. */
  private async connectWriter(): Promise<WriterSession> {
    let session: WriterSession | undefined;
    const client = await this.connectClient(() => {
      if (session !== undefined) session.broken = true;
    }, true);
    try {
      if (!this.migrated) {
        const applied = await migrate(client, this.options.schema);
        this.migrated = true;
        if (applied.length > 0) this.options.onMigrated?.(applied);
      } else {
        // A reconnection (PostgreSQL restarted, a failover): a rolling upgrade may have migrated meanwhile.
        this.noteSchemaRule(await schemaRule(client));
        if (this.overtaken !== undefined) throw this.overtaken;
      }
      const taken = await client.query<{ shard: number }>(
        `SELECT s AS shard FROM generate_series(1, ${maxShards}) AS s
          WHERE pg_try_advisory_lock(${shardLockClass}, s) LIMIT 1`,
      );
      const shard = taken.rows[0]?.shard;
      if (shard === undefined)
        throw new Error(`every one of the ${maxShards} counter shards is held by a server`);
      // The shard's limits row is this server's now: sepp.enqueue follows it at once.
      await this.serverLimits.connected(client, shard);
      this.replication = await readReplication(client);
      this.options.onConnected?.({ host: `${client.host}:${client.port}`, replication: this.replication });
      session = writerSession(client, shard, postgresCapabilities);
      // The listener comes once the schema is there; it does not hold the writer back.
      void this.signals.start();
      this.watch();
      this.shardOf.set(session, shard);
      return session;
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
  }
}
