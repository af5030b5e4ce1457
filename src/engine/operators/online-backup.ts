/**
 * Online backup: a copy of the live store to a file while other work goes on,
 * if the store can make one (the SQLite store: SQLite's backup API, a few
 * hundred pages per step). One backup at a time.
 */
import { StorageFailure, type Store } from '../../store/store.ts';
import { SeppError, toSeppError } from '../errors.ts';

export class OnlineBackup {
  private running = false;

  constructor(private readonly store: Store) {}

  /** Throws FAILED_PRECONDITION, naming the store, when the store makes no backups. */
  check(): NonNullable<Store['backup']> {
    const backup = this.store.backup;
    if (backup === undefined) {
      throw new SeppError(
        'failed_precondition',
        `this server's store (${this.store.kind}) makes no backups; back it up with the tools of its database` +
          (this.store.kind === 'postgres' ? ' (pg_dump, or your provider’s backups)' : ''),
      );
    }
    return backup;
  }

  async copyTo(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void> {
    const backup = this.check();
    if (this.running)
      throw new SeppError('resource_exhausted', 'a backup is already running; try again when it ends');
    this.running = true;
    try {
      await backup.copyTo(destinationPath, onProgress);
    } catch (error) {
      throw error instanceof StorageFailure
        ? new SeppError('unavailable', `backup failed: ${error.message}`, { cause: error })
        : toSeppError(error);
    } finally {
      this.running = false;
    }
  }
}
