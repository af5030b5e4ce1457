/**
 * The SQLite store: one data directory (its lock, the database in WAL mode,
 * migrations: open.ts), every statement prepared once by the capability
 * modules beside this file, and the group committer as the one writer.
 *
 * How it runs the engine's work: better-sqlite3 answers at once, so every
 * operation here completes without yielding. A write unit runs inside the
 * group committer's batch, synchronously, in its own savepoint (group-commit.ts);
 * a read unit runs at once on the same connection, so a read of several
 * statements is one consistent view (nothing else runs in between) and never
 * sees half a batch.
 *
 * What only this store has: an online backup (SQLite's backup API), the disk
 * reserve (disk-reserve.ts) and its files' sizes.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { runAtOnce } from '../op.ts';
import type { OnlineBackup, ReadUnit, Store, StoreFiles, StoreTx, WriteHooks, WriteUnit } from '../store.ts';
import { auditOps, prepareAuditStatements } from './audit.ts';
import { copyDatabase } from './backup.ts';
import { browseOps, prepareBrowseStatements } from './browse.ts';
import { closeDatabase } from './close.ts';
import { controlOps, prepareControlStatements } from './control.ts';
import { countOps, prepareCountStatements } from './counts.ts';
import { deadLetterOps, prepareDeadLetterStatements } from './dead-letters.ts';
import { DiskReserve } from './disk-reserve.ts';
import { flowOps, prepareFlowStatements } from './flow.ts';
import { type GroupCommitOptions, GroupCommitter } from './group-commit.ts';
import { jobOps, prepareJobInserts, prepareJobStatements } from './jobs.ts';
import { keyOps, prepareKeyStatements } from './keys.ts';
import { leaseOps, prepareAckDeletes, prepareLeaseStatements } from './leases.ts';
import { type Db, databaseFileName, type OpenOptions, openDataDir } from './open.ts';
import { prepareQueueStatements, queueOps } from './queues.ts';
import { prepareScheduleStatements, scheduleOps } from './schedules.ts';
import { prepareSessionStatements, sessionOps } from './sessions.ts';
import { prepareSettingStatements, settingOps } from './settings.ts';

/** The store's capabilities: what a unit's `tx` holds besides its scope. */
export type SqliteCapabilities = Omit<StoreTx, 'afterCommit' | 'followUp'>;

/** Prepares every statement on `db` and builds the capabilities over them. */
export function sqliteCapabilities(db: Db): SqliteCapabilities {
  return {
    queues: queueOps(prepareQueueStatements(db)),
    counts: countOps(prepareCountStatements(db)),
    jobs: jobOps(prepareJobStatements(db), prepareJobInserts(db)),
    keys: keyOps(prepareKeyStatements(db)),
    leases: leaseOps(prepareLeaseStatements(db), prepareAckDeletes(db)),
    flow: flowOps(prepareFlowStatements(db)),
    control: controlOps(prepareControlStatements(db)),
    deadLetters: deadLetterOps(prepareDeadLetterStatements(db)),
    browse: browseOps(prepareBrowseStatements(db)),
    schedules: scheduleOps(prepareScheduleStatements(db)),
    audit: auditOps(prepareAuditStatements(db)),
    settings: settingOps(prepareSettingStatements(db)),
    sessions: sessionOps(prepareSessionStatements(db)),
  };
}

export interface SqliteStoreOptions extends OpenOptions, GroupCommitOptions {
  /** Room kept for a full disk, in bytes (0: none); the store takes it when asked (`diskReserve.take()`). */
  diskReserveBytes?: number;
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly backup: OnlineBackup;
  readonly diskReserve: DiskReserve | undefined;
  readonly files: StoreFiles | undefined;
  private readonly caps: SqliteCapabilities;
  private readonly writer: GroupCommitter<StoreTx>;
  private closed = false;

  /**
   * A store over an open database: `dataDir` names where its files are (the disk
   * reserve, their sizes); without it the store has neither (an in-memory or scratch database).
   */
  constructor(
    /** The connection; close the store, not the connection. */
    readonly db: Db,
    options: GroupCommitOptions & { dataDir?: string; diskReserveBytes?: number } = {},
  ) {
    this.caps = sqliteCapabilities(db);
    this.writer = new GroupCommitter<StoreTx>(db, this.caps, options);
    this.backup = { copyTo: (destinationPath, onProgress) => copyDatabase(db, destinationPath, onProgress) };
    const { dataDir } = options;
    this.diskReserve =
      dataDir === undefined ? undefined : new DiskReserve(dataDir, options.diskReserveBytes ?? 0);
    this.files = dataDir === undefined ? undefined : databaseFiles(join(dataDir, databaseFileName));
  }

  attach(hooks: WriteHooks): void {
    this.writer.hooks = hooks;
  }

  write<T>(unit: WriteUnit<T>): Promise<T> {
    return this.writer.submit(unit);
  }

  read<T>(unit: ReadUnit<T>): Promise<T> {
    try {
      return Promise.resolve(runAtOnce(unit(this.caps)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Units waiting for the next batch. */
  get pendingWrites(): number {
    return this.writer.pending;
  }

  /**
   * Writes what is queued, refuses writes from now on, checkpoints the WAL into
   * the database file (unless checkpoints are external) and closes it, releasing
   * the data directory's lock.
   */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    try {
      this.writer.close();
      if (this.db.open) closeDatabase(this.db);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** Opens the SQLite store of a data directory (see open.ts: the lock, WAL mode, migrations). */
export function openSqliteStore(dataDir: string, options: SqliteStoreOptions): SqliteStore {
  const db = openDataDir(dataDir, options);
  return new SqliteStore(db, { ...options, dataDir });
}

function databaseFiles(databaseFile: string): StoreFiles {
  const sizeOf = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  return {
    // A missing WAL (just checkpointed and truncated, or not yet created) is size 0, not an error.
    sizes: () => ({ database: sizeOf(databaseFile), wal: sizeOf(`${databaseFile}-wal`) }),
  };
}
