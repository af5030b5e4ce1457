/**
 * Online backup: SQLite's backup API copies the live database a few hundred
 * pages per step, so other work goes on between steps; writes made during the
 * copy are included.
 */
import { isStorageFailure, storageFailure } from './group-commit.ts';
import type { Db } from './open.ts';

/** Pages copied per backup step: small enough that each step is a short pause for everything else. */
const backupPagesPerStep = 256;

/** Copies the live database to `destinationPath`; a failure of the storage rejects with a StorageFailure. */
export async function copyDatabase(
  db: Db,
  destinationPath: string,
  onProgress?: (pagesDone: number, pagesTotal: number) => void,
): Promise<void> {
  try {
    await db.backup(destinationPath, {
      progress: ({ totalPages, remainingPages }) => {
        onProgress?.(totalPages - remainingPages, totalPages);
        return backupPagesPerStep;
      },
    });
  } catch (error) {
    throw isStorageFailure(error) ? storageFailure(error) : error;
  }
}
