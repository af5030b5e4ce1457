/**
 * One server per data directory. The database itself is opened in normal
 * (shared) locking mode so that other processes can read it, so the guard is a
 * lock of its own: a small SQLite file, `sepp.lock`, held in EXCLUSIVE locking
 * mode for as long as the server runs.
 *
 * SQLite's locks are POSIX advisory locks (fcntl) on the file. The kernel drops
 * them when the process exits, however it exits, `kill -9` included, so the
 * lock never goes stale: there is no PID file to clean up and nothing to
 * guess. Within one process SQLite tracks its own locks, so a second open in
 * the same process is refused as well. (Like any lock file, it guards nothing
 * once deleted while a server runs: the next server would lock a new file.)
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';

export const lockFileName = 'sepp.lock';

export class DataDirInUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

/** Takes the data directory's lock, or throws DataDirInUseError at once. Close the returned connection to release it. */
export function lockDataDir(dataDir: string, nativeBinding?: string): Database.Database {
  const path = join(dataDir, lockFileName);
  const lock = new Database(path, {
    timeout: 0,
    ...(nativeBinding === undefined ? {} : { nativeBinding }),
  });
  try {
    // A rollback-journal database in EXCLUSIVE locking mode keeps the EXCLUSIVE
    // lock that BEGIN EXCLUSIVE takes until the connection closes. Its journal is
    // kept in memory: on disk it would stay beside the lock (zeroed, not deleted,
    // in EXCLUSIVE mode) and look like something worth keeping.
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.pragma('journal_mode = MEMORY');
    lock.exec('BEGIN EXCLUSIVE; COMMIT;');
    return lock;
  } catch (error) {
    lock.close();
    if (isBusy(error)) {
      throw new DataDirInUseError(
        `the data directory ${dataDir} is in use by another sepp (it holds ${path}): stop that server, or give this one another data directory`,
      );
    }
    throw error;
  }
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  return error instanceof Error && 'code' in error && String(error.code).startsWith('SQLITE_BUSY');
}
