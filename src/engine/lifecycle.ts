/**
 * The engine's open → draining → closed life: the gate every write and read
 * passes (refused once closing), readiness, and the shutdown order of the
 * engine's parts.
 */
import type { ReadUnit, Store, WriteUnit } from '../store/store.ts';
import { SeppError } from './errors.ts';

/** Zero of a job id: a lookup no job answers, for readiness probes. */
const noJobId = '00000000-0000-0000-0000-000000000000';

export class EngineLifecycle {
  private closing = false;
  /** Set by drainWaiters(): reserves stop waiting, writes still work. */
  private draining = false;
  private closed: Promise<void> | undefined;
  /** Set by shutOut(): why this server refuses every call from now on (waits end with it at once). */
  private refusal: SeppError | undefined;

  constructor(
    private readonly store: Store,
    /** What close() stops before the store closes: maintenance, timers, waiters, subscribers. */
    private readonly stopParts: () => void,
    /** Answers every waiting long-poll with no jobs (draining). */
    private readonly settleWaiters: () => void,
  ) {}

  get isClosed(): boolean {
    return this.closing;
  }

  /** True once reserves must stop waiting for jobs: draining or closed (shut out: see shutOutBy). */
  get stopsWaiting(): boolean {
    return this.closing || this.draining;
  }

  /** Why this server refuses every call from now on (shutOut), or undefined while it serves. */
  get shutOutBy(): SeppError | undefined {
    return this.refusal;
  }

  /**
   * The engine's one write path: runs `unit` in a store transaction; resolves
   * after its commit is durable, rejects with a SeppError (the store maps its
   * failures with the hooks the engine attached).
   */
  write<T>(unit: WriteUnit<T>): Promise<T> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.store.write(unit);
  }

  /** A read unit, unless the engine is closed (then the same answer as a write). */
  read<T>(unit: ReadUnit<T>): Promise<T> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.store.read(unit);
  }

  /** Calls after close() get the same answer as writes, not the store's; once shut out, its refusal. */
  checkOpen(): void {
    if (this.closing) throw shuttingDown();
    if (this.refusal !== undefined) throw this.refusal;
  }

  /**
   * Rejects (unavailable) unless the store answers a read now (or is too busy to take one
   * more, its read queue full) and can write:
   * for readiness probes, so one index lookup (of an id no job has), never a
   * scan, and the store's check of its files (SQLite: two stat() calls).
   */
  async checkReadable(): Promise<void> {
    await this.read((view) => view.jobs.attempt(noJobId)).catch((error: unknown) => {
      // Refused at once since every read connection is busy and as many reads wait (PostgreSQL's
      // store.max_waiting_reads): the store answers, it is busy, and writes go on. Not ready would
      // move a flood of reads from this server to the others behind a load balancer.
      if (error instanceof SeppError && error.code === 'resource_exhausted') return;
      throw error;
    });
    // A store whose files were deleted or replaced still reads, but refuses writes.
    const problem = this.store.files?.problem() ?? null;
    if (problem !== null) throw new SeppError('unavailable', problem);
  }

  /** Answers every waiting long-poll with no jobs; later reserves return at once. */
  drainWaiters(): void {
    this.draining = true;
    this.settleWaiters();
  }

  /**
   * This server will refuse every call from now on (its store said so: a newer sepp migrated
   * the schema past it): waiting long-polls end with `refusal` now rather than when their wait
   * would, so that their clients go to another server at once. The first refusal stays.
   */
  shutOut(refusal: SeppError): void {
    if (this.refusal !== undefined || this.closing) return;
    this.refusal = refusal;
    this.settleWaiters();
  }

  /** Refuses new work, answers long-polls, writes what is queued and closes the store. */
  close(): Promise<void> {
    if (this.closed !== undefined) return this.closed;
    this.closing = true;
    this.stopParts();
    this.closed = this.store.close();
    return this.closed;
  }
}

/** The error every call gets once the engine is closing. */
export function shuttingDown(): SeppError {
  return new SeppError('unavailable', 'sepp is shutting down');
}
