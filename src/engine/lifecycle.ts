/**
 * The engine's open → draining → closed life: the gate every write passes
 * (refused once closing), the check reads make after close, readiness, and
 * the shutdown order of the engine's parts.
 */
import { closeDatabase } from '../store/sqlite/close.ts';
import type { Transaction } from '../store/sqlite/group-commit.ts';
import type { EngineContext } from './context.ts';
import { SeppError, toSeppError } from './errors.ts';

export class EngineLifecycle {
  private closing = false;
  /** Set by drainWaiters(): reserves stop waiting, writes still work. */
  private draining = false;

  constructor(
    private readonly ctx: EngineContext,
    /** Stops time-driven maintenance (the first thing close() does). */
    private readonly stopMaintenance: () => void,
  ) {}

  get closed(): boolean {
    return this.closing;
  }

  /** True once reserves must stop waiting for jobs: draining or closed. */
  get stopsWaiting(): boolean {
    return this.closing || this.draining;
  }

  /** Submits a write operation; resolves after its commit is durable, rejects with a SeppError. */
  write<T>(op: (tx: Transaction) => T): Promise<T> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.ctx.writer.submit(op).catch((error: unknown) => {
      throw toSeppError(error);
    });
  }

  /** Reads after close() get the same answer as writes, not the driver's "connection is not open". */
  checkOpen(): void {
    if (this.closing) throw shuttingDown();
  }

  /** `read()`, unless the engine is closed; a failure rejects, as an asynchronous store's would. */
  read<T>(read: () => T): Promise<T> {
    try {
      this.checkOpen();
      return Promise.resolve(read());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Throws (unavailable) unless the database answers a read now: for readiness
   * probes, so one index lookup (of an id no job has), never a scan.
   */
  checkReadable(): void {
    this.checkOpen();
    this.ctx.sql.attemptById.get('00000000-0000-0000-0000-000000000000');
  }

  /** Answers every waiting long-poll with no jobs; later reserves return at once. */
  drainWaiters(): void {
    this.draining = true;
    this.ctx.waiters.settleAll('closed');
  }

  /** Refuses new work, answers long-polls, writes what is queued, checkpoints the WAL and closes the database. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.stopMaintenance();
    this.ctx.flow.stop();
    this.ctx.waiters.settleAll('closed');
    this.ctx.events.endAll(shuttingDown());
    this.ctx.writer.close();
    closeDatabase(this.ctx.db);
  }
}

/** The error every call gets once the engine is closing. */
export function shuttingDown(): SeppError {
  return new SeppError('unavailable', 'sepp is shutting down');
}
