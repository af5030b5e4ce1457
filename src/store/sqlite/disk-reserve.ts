/**
 * Room kept on the data directory's file system for when it fills up.
 *
 * SQLite needs free blocks for every write, deletes included: an ack appends
 * pages to the write-ahead log, and checkpointing jobs committed just before
 * the disk filled grows the database file. On a full disk, then, workers
 * could not lease or ack either, so the queue could not be drained to free
 * space. sepp therefore holds `sepp.reserve`, a file of real (non-zero, so
 * that no compressing file system makes it a hole) blocks, and gives it back
 * when a write fails for want of space (engine/disk-full.ts decides when).
 */
import { randomFillSync } from 'node:crypto';
import { closeSync, openSync, rmSync, statfsSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const reserveFileName = 'sepp.reserve';
const chunkBytes = 1024 * 1024;

export class DiskReserve {
  private readonly path: string;

  constructor(
    private readonly dataDir: string,
    /** 0 keeps no reserve. */
    readonly bytes: number,
    /** Bytes the database can fill again without growing (its free pages). */
    private readonly databaseFreeBytes: () => number = () => 0,
    /** Checkpoints and truncates the WAL (nothing when checkpoints are external). */
    private readonly truncateWal: () => void = () => {},
  ) {
    this.path = join(dataDir, reserveFileName);
  }

  /** True when the reserve file is there at its full size (or none is wanted). */
  get held(): boolean {
    return this.bytes === 0 || (statSync(this.path, { throwIfNoEntry: false })?.size ?? 0) >= this.bytes;
  }

  /** Free bytes on the data directory's file system, for unprivileged writers. */
  freeBytes(): number {
    const fs = statfsSync(this.dataDir);
    return fs.bavail * fs.bsize;
  }

  /** Room inside the database file that deleted rows left: new rows fill it before the file grows. */
  reusableBytes(): number {
    return this.databaseFreeBytes();
  }

  /** After a drain, the WAL holds blocks the queues no longer need: a truncating checkpoint frees them. */
  reclaim(): void {
    this.truncateWal();
  }

  /**
   * Creates the reserve file when it is missing or short. False when the
   * file system has no room for it (nothing of it is left behind then).
   */
  take(): boolean {
    if (this.held) return true;
    const chunk = Buffer.alloc(Math.min(chunkBytes, this.bytes));
    let fd: number | undefined;
    try {
      fd = openSync(this.path, 'w', 0o600);
      for (let written = 0; written < this.bytes; ) {
        randomFillSync(chunk);
        written += writeSync(fd, chunk, 0, Math.min(chunk.length, this.bytes - written));
      }
      return true;
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
      rmSync(this.path, { force: true });
      if (error instanceof Error && 'code' in error && (error.code === 'ENOSPC' || error.code === 'EDQUOT'))
        return false;
      throw error;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Gives the reserve's blocks back to the file system; false when there was none. */
  release(): boolean {
    const had = statSync(this.path, { throwIfNoEntry: false }) !== undefined;
    rmSync(this.path, { force: true });
    return had && this.bytes > 0;
  }
}
