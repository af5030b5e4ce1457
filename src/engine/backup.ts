/**
 * Online backup: SQLite's backup API copies the live database a few hundred
 * pages per step, so other work goes on between steps; writes made during the
 * copy are included. One backup at a time.
 */

import { isStorageFailure } from '../store/sqlite/group-commit.ts';
import type { Db } from '../store/sqlite/open.ts';
import { SeppError, toSeppError } from './errors.ts';

/** Pages copied per backup step: small enough that each step is a short pause for everything else. */
const backupPagesPerStep = 256;

export class OnlineBackup {
  private running = false;

  constructor(private readonly db: Db) {}

  async copyTo(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void> {
    if (this.running)
      throw new SeppError('resource_exhausted', 'a backup is already running; try again when it ends');
    this.running = true;
    try {
      await this.db.backup(destinationPath, {
        progress: ({ totalPages, remainingPages }) => {
          onProgress?.(totalPages - remainingPages, totalPages);
          return backupPagesPerStep;
        },
      });
    } catch (error) {
      throw isStorageFailure(error)
        ? new SeppError(
            'unavailable',
            `backup failed: ${error instanceof Error ? error.message : String(error)}`,
            {
              cause: error,
            },
          )
        : toSeppError(error);
    } finally {
      this.running = false;
    }
  }
}
