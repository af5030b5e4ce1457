/**
 * Opens the data directory's SQLite database: first the data directory's lock
 * (so two servers can never share one data directory), then the database in
 * WAL mode with normal (shared) locking, so that `sqlite3` and Litestream can
 * read it while the server runs; then the embedded migrations.
 */
import { closeSync, fchmodSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { databaseOpenError, ensureDataDir } from './data-dir.ts';
import { DataDirInUseError, isBusy, lockDataDir, lockFileName } from './data-dir-lock.ts';
import { type AppliedMigration, migrate, schemaVersion } from './migrate.ts';

export { DataDirInUseError, lockFileName } from './data-dir-lock.ts';
export { type AppliedMigration, SchemaTooNewError } from './migrate.ts';

export type Durability = 'full' | 'relaxed';
export type Db = Database.Database;
/** `auto`: sepp checkpoints the WAL itself. `external`: never; a replicator such as Litestream does. */
export type WalCheckpoints = 'auto' | 'external';

export const databaseFileName = 'sepp.db';

/**
 * How long a statement waits for a lock another process holds before it fails
 * with SQLITE_BUSY. Readers (`sqlite3 -readonly`) never hold one that sepp's
 * writes need; Litestream does, briefly: it writes its own bookkeeping rows, and
 * its RESTART checkpoint holds the write lock while it waits up to 1 s for
 * readers. While it waits, the event loop waits too (better-sqlite3 is
 * synchronous), which is better than failing the whole batch.
 */
export const busyTimeoutMs = 5000;

/** SQLite's default auto-checkpoint threshold: a PASSIVE checkpoint after a commit once the WAL holds this many pages. */
const autoCheckpointPages = 1000;

export interface OpenOptions {
  /**
   * What a commit gets unless its units ask otherwise (StoreTx.durability): `full`,
   * synced before it is answered; `relaxed`, not — it survives a process crash, not a
   * power cut. The connection runs with synchronous=NORMAL either way; the group
   * committer syncs the WAL itself for the commits that need it.
   */
  durability: Durability;
  /** Who checkpoints the WAL (default `auto`: sepp). */
  walCheckpoints?: WalCheckpoints;
  /** Path of the better-sqlite3 addon when it is not in node_modules (the single executable). */
  nativeBinding?: string;
  /** Page cache per connection, in KiB. */
  cacheKiB?: number;
  /** Told which migrations opening applied to an existing database (an upgrade), after they committed; not called for a new one. */
  onMigrated?: (applied: readonly AppliedMigration[]) => void;
}

/**
 * Locks the data directory (creating it when needed), then opens its
 * database. The lock is released when the returned connection is closed, or
 * by the OS when the process dies. A directory or file sepp cannot use is a
 * DataDirError that says why (data-dir.ts).
 */
export function openDataDir(dataDir: string, options: OpenOptions): Db {
  ensureDataDir(dataDir);
  const lockPath = join(dataDir, lockFileName);
  const path = join(dataDir, databaseFileName);
  let lock: ReturnType<typeof lockDataDir>;
  try {
    // Both files owner-only, like everything sepp writes to the data directory.
    createOwnerOnly(lockPath);
    lock = lockDataDir(dataDir, options.nativeBinding);
  } catch (error) {
    if (error instanceof DataDirInUseError) throw error;
    throw databaseOpenError(lockPath, error) ?? error;
  }
  let db: Db;
  try {
    createOwnerOnly(path);
    db = openDatabase(path, options);
  } catch (error) {
    lock.close();
    if (error instanceof DataDirInUseError) throw error;
    throw databaseOpenError(path, error) ?? error;
  }
  // The lock lives exactly as long as the connection: every caller closes the
  // database with db.close(), so that call releases the lock too.
  const closeDatabase = db.close.bind(db);
  db.close = () => {
    try {
      closeDatabase();
    } finally {
      if (lock.open) lock.close();
    }
    return db;
  };
  return db;
}

/**
 * Creates a data-directory file readable and writable by its owner alone (0600),
 * whatever the umask; SQLite gives the -wal and -shm files it makes the mode
 * of the database file. An existing file keeps its mode (an operator may have
 * chosen one; the server warns when others can read it).
 */
function createOwnerOnly(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'EEXIST') return;
    throw error;
  }
  try {
    // open() applies the umask, which can only remove bits; fchmod does not.
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

export function openDatabase(path: string, options: OpenOptions): Db {
  const db = new Database(path, {
    timeout: busyTimeoutMs,
    ...(options.nativeBinding === undefined ? {} : { nativeBinding: options.nativeBinding }),
  });
  try {
    // Normal locking mode: the WAL index lives in the shared `-shm` file, so other
    // processes can read the live database (sqlite3, Litestream) without blocking
    // this one. A database last written in EXCLUSIVE mode needs nothing special:
    // its WAL (if any) is replayed into a new `-shm` by the first connection.
    db.pragma('journal_mode = WAL');
    // NORMAL: SQLite syncs at checkpoints only; a commit that must be durable is
    // synced by the group committer (group-commit.ts), per commit, as FULL would.
    db.pragma('synchronous = NORMAL');
    db.pragma(`cache_size = -${options.cacheKiB ?? 16 * 1024}`);
    db.pragma('temp_store = MEMORY');
    db.pragma('foreign_keys = ON');
    // External checkpoints: Litestream must see every WAL frame before it is
    // checkpointed away, so it alone checkpoints (and restarts) the WAL.
    db.pragma(`wal_autocheckpoint = ${options.walCheckpoints === 'external' ? 0 : autoCheckpointPages}`);
    // Keep the WAL from growing without bound after a burst.
    db.pragma('journal_size_limit = 67108864');
    // A new database is created at the current schema without a word; an upgrade is reported.
    const upgrading = schemaVersion(db) > 0;
    const applied = migrate(db);
    if (upgrading && applied.length > 0) options.onMigrated?.(applied);
    return db;
  } catch (error) {
    db.close();
    // Still busy after the timeout: a sepp from before the lock file (it held the
    // database in EXCLUSIVE mode), or a tool holding a write transaction.
    if (isBusy(error)) {
      throw new DataDirInUseError(
        `the database ${path} is locked by another process (an older sepp, or a tool holding a write transaction): stop it and start again`,
      );
    }
    throw error;
  }
}
