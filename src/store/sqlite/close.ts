/** Closing the data directory's database at shutdown (see closeDatabase). */
import { isStorageFailure } from './group-commit.ts';
import type { Db } from './open.ts';

/**
 * Shutdown's last step: checkpoint the WAL into the database file and truncate
 * it, so a stopped server leaves one self-contained file — unless checkpoints
 * are external (Litestream must copy the WAL first). It never waits: a reader
 * still in the WAL (sqlite3, Litestream) leaves it as it is, to be checkpointed
 * on the next start.
 */
export function closeDatabase(db: Db): void {
  if (db.pragma('wal_autocheckpoint', { simple: true }) !== 0) {
    try {
      db.pragma('busy_timeout = 0');
      db.pragma('wal_checkpoint(TRUNCATE)');
    } catch (error) {
      if (!isStorageFailure(error)) throw error;
    }
  }
  db.close();
}
