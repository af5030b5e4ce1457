/**
 * The SQLite store: one data directory (its lock, the database in WAL mode,
 * migrations: open.ts), every statement prepared once, on first use, by the
 * capability modules beside this file (prepare-on-use.ts), and the group
 * committer as the one writer.
 *
 * How it runs the engine's work: better-sqlite3 answers at once, so every
 * operation here completes without yielding. A write unit runs inside the
 * group committer's batch, synchronously, in its own savepoint (group-commit.ts);
 * a read unit runs at once on the same connection, so a read of several
 * statements is one consistent view (nothing else runs in between) and never
 * sees half a batch.
 *
 * What only this store has: an online backup (SQLite's backup API), the disk
 * reserve (disk-reserve.ts), its files' sizes, and the watch on those files
 * (file-identity.ts): once a second (`fileCheckIntervalMs`), at every readiness
 * probe and before closing, it checks that `sepp.db` and `sepp.db-wal` are still
 * the files it opened. When one was deleted or replaced, writes are refused
 * from then on (the server must restart), and a lost WAL is first checkpointed
 * into the database file, so that what was acknowledged survives even a kill -9.
 */
import { closeSync, fdatasyncSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runAtOnce } from '../op.ts';
import {
  type OnlineBackup,
  type ReadUnit,
  StorageFailure,
  type Store,
  type StoreFiles,
  type StoreTx,
  type WriteHooks,
  type WriteUnit,
} from '../store.ts';
import { auditOps, prepareAuditStatements } from './audit.ts';
import { copyDatabase } from './backup.ts';
import { browseOps, prepareBrowseStatements } from './browse.ts';
import { bulkOps, prepareBulkStatements } from './bulk.ts';
import { closeDatabase } from './close.ts';
import { controlOps, prepareControlStatements } from './control.ts';
import { countOps, prepareCountStatements } from './counts.ts';
import { deadLetterOps, prepareDeadLetterStatements } from './dead-letters.ts';
import { dependencyOps, prepareDependencyStatements } from './dependencies.ts';
import { DiskReserve } from './disk-reserve.ts';
import { FileIdentity } from './file-identity.ts';
import { flowOps, prepareFlowStatements } from './flow.ts';
import { type GroupCommitOptions, GroupCommitter } from './group-commit.ts';
import { historyOps, prepareHistoryStatements } from './history.ts';
import { jobOps, prepareJobInserts, prepareJobStatements } from './jobs.ts';
import { keyOps, prepareKeyStatements } from './keys.ts';
import { leaseOps, prepareAckDeletes, prepareKeptCompletes, prepareLeaseStatements } from './leases.ts';
import { busyTimeoutMs, type Db, databaseFileName, type OpenOptions, openDataDir } from './open.ts';
import { prepareOnUse } from './prepare-on-use.ts';
import { prepareQueueStatements, queueOps } from './queues.ts';
import { prepareScheduleStatements, scheduleOps } from './schedules.ts';
import { prepareSessionStatements, sessionOps } from './sessions.ts';
import { prepareSettingStatements, settingOps } from './settings.ts';

/** The store's capabilities: what a unit's `tx` holds besides its scope. */
export type SqliteCapabilities = Omit<StoreTx, 'afterCommit' | 'followUp' | 'durability'>;

/** Builds the capabilities over `db`, their statements prepared on first use (prepare-on-use.ts). */
export function sqliteCapabilities(connection: Db): SqliteCapabilities {
  const db = prepareOnUse(connection);
  const dependencies = prepareDependencyStatements(db);
  return {
    queues: queueOps(prepareQueueStatements(db)),
    counts: countOps(prepareCountStatements(db)),
    jobs: jobOps(prepareJobStatements(db), prepareJobInserts(db), dependencies),
    keys: keyOps(prepareKeyStatements(db)),
    leases: leaseOps(prepareLeaseStatements(db), prepareAckDeletes(db), prepareKeptCompletes(db)),
    flow: flowOps(prepareFlowStatements(db)),
    control: controlOps(prepareControlStatements(db)),
    bulk: bulkOps(prepareBulkStatements(db)),
    deadLetters: deadLetterOps(prepareDeadLetterStatements(db)),
    browse: browseOps(prepareBrowseStatements(db)),
    schedules: scheduleOps(prepareScheduleStatements(db)),
    audit: auditOps(prepareAuditStatements(db)),
    settings: settingOps(prepareSettingStatements(db)),
    sessions: sessionOps(prepareSessionStatements(db)),
    history: historyOps(prepareHistoryStatements(db)),
    dependencies: dependencyOps(dependencies),
  };
}

/**
 * Syncs the WAL of a connection that runs with synchronous=NORMAL: an fdatasync of the
 * `-wal` file (what SQLite's own WAL sync does on Linux: the data and the size, not the
 * times), on a descriptor of its own (it flushes the file, whoever wrote it),
 * opened at the first sync — after a commit, so the file exists. An in-memory
 * database has no WAL: nothing to sync.
 */
class WalSync {
  private fd: number | undefined;
  private readonly path: string | undefined;

  constructor(db: Db) {
    this.path = db.memory || db.name === '' ? undefined : `${db.name}-wal`;
  }

  sync(): void {
    if (this.path === undefined) return;
    this.fd ??= openSync(this.path, 'r');
    fdatasyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** How often the store checks that its files are still the ones it opened, by default. */
export const defaultFileCheckIntervalMs = 1000;

/** What a store over a data directory is given besides the connection. */
export interface DataDirStoreOptions extends GroupCommitOptions {
  /** Where the database's files are (the disk reserve, their sizes, the watch on them). */
  dataDir?: string;
  /** Room kept for a full disk, in bytes (0: none); the store takes it when asked (`diskReserve.take()`). */
  diskReserveBytes?: number;
  /** How often to check that the database and its WAL are still the files opened (0: only when asked). */
  fileCheckIntervalMs?: number;
  /**
   * Told once (`lost`), with what happened and what to do, when they are not
   * (writes are refused from then on); then, when sepp.db itself was lost,
   * whether the copy of the data it still holds was saved (`rescued`, `rescue_failed`).
   */
  onFilesLost?: (event: 'lost' | 'rescued' | 'rescue_failed', detail: string) => void;
}

export interface SqliteStoreOptions extends OpenOptions, Omit<DataDirStoreOptions, 'dataDir'> {}

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly backup: OnlineBackup;
  readonly diskReserve: DiskReserve | undefined;
  readonly files: StoreFiles | undefined;
  private readonly caps: SqliteCapabilities;
  private readonly writer: GroupCommitter<StoreTx>;
  private readonly walSync: WalSync;
  private closed = false;
  private readonly identity: FileIdentity | undefined;
  private readonly fileCheck: ReturnType<typeof setInterval> | undefined;
  private readonly onFilesLost: DataDirStoreOptions['onFilesLost'];
  private readonly dataDir: string | undefined;
  /** Why writes are refused, once the files were found deleted or replaced. */
  private filesLost: StorageFailure | undefined;

  /**
   * A store over an open database: `dataDir` names where its files are (the disk
   * reserve, their sizes); without it the store has neither (an in-memory or scratch database).
   */
  constructor(
    /** The connection; close the store, not the connection. */
    readonly db: Db,
    options: DataDirStoreOptions = {},
  ) {
    this.caps = sqliteCapabilities(db);
    this.walSync = new WalSync(db);
    this.writer = new GroupCommitter<StoreTx>(db, this.caps, {
      ...options,
      syncWal: () => this.walSync.sync(),
    });
    this.backup = { copyTo: (destinationPath, onProgress) => copyDatabase(db, destinationPath, onProgress) };
    const { dataDir } = options;
    this.diskReserve =
      dataDir === undefined
        ? undefined
        : new DiskReserve(
            dataDir,
            options.diskReserveBytes ?? 0,
            () =>
              Number(db.pragma('freelist_count', { simple: true })) *
              Number(db.pragma('page_size', { simple: true })),
            () => truncateWal(db),
          );
    this.onFilesLost = options.onFilesLost;
    this.dataDir = dataDir;
    if (dataDir === undefined) return;
    const databaseFile = join(dataDir, databaseFileName);
    this.files = { ...databaseFiles(databaseFile), problem: () => this.checkFiles() };
    this.identity = new FileIdentity(databaseFile);
    const everyMs = options.fileCheckIntervalMs ?? defaultFileCheckIntervalMs;
    if (everyMs > 0) {
      this.fileCheck = setInterval(() => this.checkFiles(), everyMs);
      // The check never keeps the process alive on its own.
      this.fileCheck.unref();
    }
  }

  /**
   * Checks that the database and its WAL are still the files opened; returns
   * why writes are refused, or null. The first time they are not: a lost WAL
   * is checkpointed into the database file (SQLite still holds the deleted file
   * open, so every commit in it is copied), writes are refused from then on,
   * and `onFilesLost` is told.
   */
  checkFiles(): string | null {
    if (this.filesLost !== undefined) return this.filesLost.message;
    if (this.identity === undefined || this.closed || !this.db.open) return null;
    const lost = this.identity.check();
    if (lost.length === 0) return null;
    const what = lost.map((f) => `${f.what} ${f.path} was deleted or replaced while sepp ran (${f.now})`);
    const message = `${what.join('; ')}: writes are refused from now on. ${this.rescue(lost.every((f) => f.path.endsWith('-wal')))} Restart sepp to write again.`;
    this.filesLost = new StorageFailure(message, { cause: undefined, diskFull: false });
    this.writer.refuse(this.filesLost);
    this.onFilesLost?.('lost', message);
    return message;
  }

  /**
   * Saves what can be saved of the lost files; says what it did and what is
   * left to do. A lost WAL is checkpointed into sepp.db. A lost sepp.db is
   * copied, as SQLite still holds it open, to a new file beside it (an online
   * backup: the data directory's `sepp-rescued-INODE.db`), told when done.
   */
  private rescue(walOnly: boolean): string {
    if (!walOnly) {
      const copy = join(this.dataDir ?? '.', `sepp-rescued-${this.identity?.databaseInode ?? 0}.db`);
      copyDatabase(this.db, copy).then(
        () =>
          this.onFilesLost?.(
            'rescued',
            `the database sepp held open is saved as ${copy}: stop sepp, move the file now at sepp.db aside, and put ${copy} in its place as sepp.db`,
          ),
        (error: unknown) =>
          this.onFilesLost?.(
            'rescue_failed',
            `saving the database sepp holds open as ${copy} failed (${error instanceof Error ? error.message : String(error)}): the old file lives only as long as sepp runs; do not stop sepp, see docs/operations.md ("Files deleted or replaced under a running server")`,
          ),
      );
      return `The database file at that path is not the one sepp writes to, and a restart would lose what sepp holds: sepp is saving it as ${copy} (logged as storage.files_rescued when done); then stop sepp and put that copy in place as sepp.db.`;
    }
    const backup =
      'do not stop sepp; see docs/operations.md ("Files deleted or replaced under a running server")';
    try {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[];
      if (result !== undefined && result.busy === 0)
        return 'Every commit of the lost WAL was copied into the database file (a checkpoint), so nothing acknowledged is lost, even if sepp is killed now.';
      return `Copying the lost WAL into the database file could not finish (another process is reading the database): ${backup}.`;
    } catch (error) {
      return `Copying the lost WAL into the database file failed (${error instanceof Error ? error.message : String(error)}): ${backup}.`;
    }
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
    // A last look before the final checkpoint: one that copies a lost WAL into a lost file saves nothing.
    this.checkFiles();
    this.closed = true;
    if (this.fileCheck !== undefined) clearInterval(this.fileCheck);
    try {
      this.writer.close();
      this.walSync.close();
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
  return new SqliteStore(db, { ...options, dataDir, defaultDurability: options.durability });
}

/**
 * Checkpoints the WAL into the database file and truncates it, without waiting
 * for readers of other processes (one that holds a snapshot makes it stop
 * short: a later call tries again). Not with external checkpoints: the
 * replicator must see every frame first.
 */
function truncateWal(db: Db): void {
  if (db.pragma('wal_autocheckpoint', { simple: true }) === 0) return;
  db.pragma('busy_timeout = 0');
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}

function databaseFiles(databaseFile: string): Pick<StoreFiles, 'sizes'> {
  const sizeOf = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  return {
    // A missing WAL (just checkpointed and truncated, or not yet created) is size 0, not an error.
    sizes: () => ({ database: sizeOf(databaseFile), wal: sizeOf(`${databaseFile}-wal`) }),
  };
}
