/**
 * Group commit: the one writer of the database.
 *
 * Every write is a unit (a generator function, src/store/op.ts) submitted here.
 * Units that arrive while a batch is being written wait for the next one; a
 * batch runs all its units in one transaction, each inside its own savepoint,
 * then commits once — one fsync for the whole batch. Each caller's promise
 * settles only after that commit returned, so nothing is acknowledged before
 * it is durable.
 *
 * States of the writer: idle (nothing queued) → scheduled (a flush is queued
 * with setImmediate: the end of the current turn, not a timer) → flushing (a
 * transaction is open) → idle or scheduled. better-sqlite3 is synchronous and
 * so is every operation of this store, so a unit runs to its end with one
 * `next()` (a unit that yields is a bug: it fails) and a flush runs to
 * completion without any other JavaScript interleaving; units submitted during
 * it (by after-commit hooks) go to the next batch. A unit's follow-ups
 * (`tx.followUp`) are the exception: they join the batch being written, after
 * their unit succeeded, so what it made possible (a waiting reserve taking a
 * new job) shares its commit and its fsync instead of needing one more.
 */
import { type Op, runAtOnce } from '../op.ts';
import {
  type CommitStats,
  StorageFailure,
  stricterDurability,
  type UnitDurability,
  needsSync as unitNeedsSync,
  type WriteHooks,
} from '../store.ts';
import type { Db } from './open.ts';

/** What a unit registers with the batch that runs it (StoreTx has these). */
export interface UnitScope<Tx> {
  /** Runs after the batch's commit is durable, before the callers' promises settle, in submission order. */
  afterCommit(hook: () => void): void;
  /**
   * Runs `unit` as a further unit of this same batch, after this one (only if
   * it succeeds; otherwise the promise rejects with its error), in its own savepoint.
   * The promise settles like submit's: after the commit is durable.
   */
  followUp<T>(unit: (tx: Tx) => Op<T>): Promise<T>;
  /** How durable the unit's commit must be (StoreTx.durability). */
  durability(mode: UnitDurability): void;
}

export interface GroupCommitOptions {
  /**
   * What a unit that asks nothing (or `default`) gets: `full` — its commit is
   * synced (`syncWal`) before it is answered; `relaxed` — not. Default `full`.
   */
  defaultDurability?: 'full' | 'relaxed';
  /**
   * Makes what was committed durable (fsync of the WAL; the connection runs
   * with synchronous=NORMAL, which syncs only at checkpoints). Called after the
   * commit of a batch that holds a unit needing it, before anyone is answered.
   */
  syncWal?: () => void;
  /** Most units in one transaction; the rest wait for the next (follow-ups join their unit's regardless). */
  maxBatchOperations?: number;
  /** A monotonic clock for measuring batches, in milliseconds. */
  monotonicMs?: () => number;
}

interface PendingUnit<Tx> {
  unit: (tx: Tx) => Op<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** SQLite result codes that mean the storage itself failed: the whole batch fails, nothing is acknowledged. */
const storageFailureCodes =
  /^SQLITE_(FULL|IOERR|NOMEM|CORRUPT|CANTOPEN|READONLY|NOTADB|PROTOCOL|BUSY|LOCKED)/;

export function isStorageFailure(error: unknown): boolean {
  return error instanceof Error && 'code' in error && storageFailureCodes.test(String(error.code));
}

/** A failure of the storage as the Store interface reports it (SQLITE_FULL is a full disk). */
export function storageFailure(cause: unknown): StorageFailure {
  const diskFull = cause instanceof Error && 'code' in cause && String(cause.code).startsWith('SQLITE_FULL');
  return new StorageFailure(cause instanceof Error ? cause.message : String(cause), { cause, diskFull });
}

/** Until a store is attached to an engine, failures are reported as they are. */
export const plainWriteHooks: WriteHooks = {
  commitFailed: (failure) => failure,
  unitFailed: (error) => (error instanceof Error ? error : new Error(String(error))),
  closed: () => new Error('the store is closed'),
};

/** A unit's scope: what it registered, and (through its prototype) the store's capabilities. */
class Scope<Tx> implements UnitScope<Tx> {
  readonly hooks: (() => void)[] = [];
  followUps: PendingUnit<Tx>[] | undefined;
  /** What the unit asked of its commit: the strictest of its calls; undefined: nothing. */
  asked: UnitDurability | undefined;

  durability(mode: UnitDurability): void {
    this.asked = stricterDurability(this.asked, mode);
  }

  afterCommit(hook: () => void): void {
    this.hooks.push(hook);
  }

  followUp<T>(unit: (tx: Tx) => Op<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.followUps ??= [];
      this.followUps.push({ unit, resolve: resolve as (value: unknown) => void, reject });
    });
  }
}

/**
 * Writes units of work of type `Tx`: the store's capabilities (`caps`, shared by
 * every unit) plus the unit's own scope. A unit costs one small object (its scope,
 * whose prototype chain reaches `caps`) and its hook list.
 */
export class GroupCommitter<Tx extends UnitScope<Tx>> {
  /** The engine's part (errors, observation): set by the store's attach(). */
  hooks: WriteHooks = plainWriteHooks;
  private queue: PendingUnit<Tx>[] = [];
  private scheduled = false;
  private flushing = false;
  private closedForWrites = false;
  /** Set by refuse(): every unit fails with it from then on. */
  private refusal: StorageFailure | undefined;
  private readonly UnitScope: new () => Scope<Tx>;
  private readonly maxBatchOperations: number;
  private readonly monotonicMs: () => number;
  private readonly defaultFull: boolean;
  private readonly syncWal: (() => void) | undefined;
  private readonly begin;
  private readonly commit;
  private readonly rollback;
  private readonly savepoint;
  private readonly release;
  private readonly rollbackTo;

  constructor(
    private readonly db: Db,
    caps: Omit<Tx, keyof UnitScope<Tx>>,
    options: GroupCommitOptions = {},
  ) {
    // A scope of this store: its prototype chain is the shared capabilities, then Scope's
    // methods, so `tx.leases` is a prototype lookup and a unit allocates only its scope.
    class StoreScope extends Scope<Tx> {}
    Object.setPrototypeOf(StoreScope.prototype, Object.assign(Object.create(Scope.prototype), caps));
    this.UnitScope = StoreScope;
    this.maxBatchOperations = options.maxBatchOperations ?? 10_000;
    this.monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.defaultFull = (options.defaultDurability ?? 'full') === 'full';
    this.syncWal = options.syncWal;
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT op');
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
  }

  /** Queues `unit` for the next batch; resolves with its result once the batch is durable. */
  submit<T>(unit: (tx: Tx) => Op<T>): Promise<T> {
    if (this.closedForWrites) return Promise.reject(this.hooks.closed());
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Units waiting for the next batch. */
  get pending(): number {
    return this.queue.length;
  }

  /** Refuses new units and writes what is queued. */
  close(): void {
    this.closedForWrites = true;
    while (this.queue.length > 0) this.flush();
  }

  /**
   * Refuses every unit from now on, those queued included, with `failure` (the
   * store's files were deleted or replaced under it): nothing more is committed.
   */
  refuse(failure: StorageFailure): void {
    this.refusal = failure;
    if (!this.flushing) this.rejectQueued(failure);
  }

  private rejectQueued(failure: StorageFailure): void {
    const queued = this.queue;
    this.queue = [];
    if (queued.length === 0) return;
    const error = this.hooks.commitFailed(failure);
    for (const pending of queued) pending.reject(error);
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /** Writes one batch now. Public for close() and tests; normally driven by schedule(). */
  flush(): void {
    if (this.flushing || this.queue.length === 0) return;
    if (this.refusal !== undefined) {
      this.rejectQueued(this.refusal);
      return;
    }
    this.flushing = true;
    const batch =
      this.queue.length <= this.maxBatchOperations
        ? this.queue
        : this.queue.slice(0, this.maxBatchOperations);
    this.queue = batch === this.queue ? [] : this.queue.slice(this.maxBatchOperations);
    const startedMs = this.monotonicMs();
    const results: { ok: boolean; value: unknown }[] = [];
    const hooks: (() => void)[] = [];
    let committed = false;
    let batchError: unknown;
    /** Whether a unit of the batch needs its commit synced before it is answered. */
    let needsSync = false;
    try {
      this.begin.run();
      for (const pending of batch) {
        if (batchError !== undefined) break;
        const scope = new this.UnitScope();
        this.savepoint.run();
        try {
          const value = runAtOnce(pending.unit(scope as unknown as Tx));
          this.release.run();
          results.push({ ok: true, value });
          if (!needsSync) needsSync = unitNeedsSync(scope.asked, this.defaultFull);
          for (const hook of scope.hooks) hooks.push(hook);
          // The loop reaches them after the units already in the batch.
          if (scope.followUps !== undefined) batch.push(...scope.followUps);
        } catch (error) {
          for (const followUp of scope.followUps ?? []) followUp.reject(error);
          if (isStorageFailure(error) || !this.db.inTransaction) {
            batchError = error;
          } else {
            this.rollbackTo.run();
            this.release.run();
            results.push({ ok: false, value: error });
          }
        }
      }
      if (batchError === undefined) {
        this.commit.run();
        // Before anyone hears of it: a failed sync fails the batch (its answers say so), though
        // the commit stands and may or may not reach the disk.
        if (needsSync) this.syncWal?.();
        committed = true;
      }
    } catch (error) {
      batchError = error;
    }
    if (!committed && this.db.inTransaction) {
      try {
        this.rollback.run();
      } catch {
        // The transaction is already gone; nothing of it was committed either way.
      }
    }
    this.flushing = false;
    // Observers and hooks run after the commit: one that throws must not keep
    // the callers of a durable batch from their answers, nor stop the writer.
    const stats: CommitStats = {
      operations: batch.length,
      durationMs: this.monotonicMs() - startedMs,
      ok: committed,
    };
    this.guard(() => this.hooks.afterCommit?.(stats));
    if (committed) {
      for (const hook of hooks) this.guard(hook);
      batch.forEach((pending, i) => {
        const result = results[i]!;
        if (result.ok) pending.resolve(result.value);
        else pending.reject(this.hooks.unitFailed(result.value));
      });
    } else {
      const error = this.hooks.commitFailed(storageFailure(batchError));
      for (const pending of batch) pending.reject(error);
    }
    if (this.queue.length > 0) this.schedule();
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.hooks.hookFailed?.(error);
    }
  }
}
