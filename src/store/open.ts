/**
 * Opens the data directory's SQLite database: WAL mode, the durability pragma,
 * an exclusive lock so two servers can never share one data directory, then
 * the embedded migrations.
 */
import { closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from './migrate.ts';

export type Durability = 'full' | 'relaxed';
export type Db = Database.Database;

export const databaseFileName = 'sepp.db';

export interface OpenOptions {
  /** `full`: fsync on every commit (synchronous=FULL). `relaxed`: synchronous=NORMAL — survives a process crash, not a power cut. */
  durability: Durability;
  /** Path of the better-sqlite3 addon when it is not in node_modules (the single executable). */
  nativeBinding?: string;
  /** Page cache per connection, in KiB. */
  cacheKiB?: number;
}

export class DataDirInUseError extends Error {
  constructor(path: string) {
    super(
      `the database ${path} is in use by another process (is another sepp running on this data directory?)`,
    );
    this.name = 'DataDirInUseError';
  }
}

export function openDataDir(dataDir: string, options: OpenOptions): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, databaseFileName);
  createOwnerOnly(path);
  return openDatabase(path, options);
}

/**
 * Creates the database file readable and writable by its owner alone (0600),
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
  // timeout 0: never wait for a lock. The driver's default (5 s) applies from the
  // first statement, so a second server on a locked directory would hang that
  // long before failing; `busy_timeout = 0` below comes too late to prevent it.
  const db = new Database(path, {
    timeout: 0,
    ...(options.nativeBinding === undefined ? {} : { nativeBinding: options.nativeBinding }),
  });
  try {
    // Exclusive locking: this process alone reads and writes the file while it runs;
    // the WAL index lives in process memory. Operators inspect copies made by `sepp backup`.
    // It must come before the first access in WAL mode (`journal_mode` reads the file):
    // set after it, an existing database keeps its WAL index in a shared `-shm` file.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}`);
    db.pragma(`cache_size = -${options.cacheKiB ?? 16 * 1024}`);
    db.pragma('temp_store = MEMORY');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 0');
    // Keep the WAL from growing without bound after a burst.
    db.pragma('journal_size_limit = 67108864');
    takeLock(db);
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    // Another process holds the exclusive lock: the first statement that reads
    // the file (already `journal_mode = WAL`) fails with SQLITE_BUSY.
    if (isBusy(error)) throw new DataDirInUseError(path);
    throw error;
  }
}

/** In exclusive mode the lock is taken by the first write: take it now, so a second server fails at start. */
function takeLock(db: Db): void {
  db.exec('BEGIN IMMEDIATE; COMMIT;');
}

function isBusy(error: unknown): boolean {
  return error instanceof Error && 'code' in error && String(error.code).startsWith('SQLITE_BUSY');
}
