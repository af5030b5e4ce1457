/**
 * Group commit: the one writer of the database.
 *
 * Every write is submitted as an operation. Operations that arrive while a
 * batch is being written wait for the next one; a batch runs all its
 * operations in one transaction, each inside its own savepoint, then commits
 * once — one fsync for the whole batch. Each caller's promise settles only
 * after that commit returned, so nothing is acknowledged before it is durable.
 *
 * States of the writer: idle (nothing queued) → scheduled (a flush is queued
 * with setImmediate) → flushing (a transaction is open) → idle or scheduled.
 * better-sqlite3 is synchronous, so a flush runs to completion without any
 * other JavaScript interleaving; submissions made during it (by after-commit
 * hooks) go to the next batch. An operation's follow-ups (`tx.followUp`) are
 * the exception: they join the batch being written, after their operation
 * succeeded, so what it made possible (a waiting reserve taking a new job)
 * shares its commit and its fsync instead of needing one more.
 */
import type { Db } from './open.ts';

export interface Transaction {
  /** Runs after the batch's commit is durable, before the callers' promises settle, in submission order. */
  afterCommit(hook: () => void): void;
  /**
   * Runs `run` as a further operation of this same batch, after this operation (only if
   * it succeeds; otherwise the promise rejects with its error), in its own savepoint.
   * The promise settles like submit's: after the commit is durable.
   */
  followUp<T>(run: (tx: Transaction) => T): Promise<T>;
}

export interface BatchStats {
  operations: number;
  /** Wall time of the whole batch: BEGIN, operations, COMMIT (the fsync). */
  durationMs: number;
  ok: boolean;
}

export interface GroupCommitOptions {
  /** Builds the error every caller of a batch gets when its commit fails (disk full, I/O error). */
  commitFailed: (cause: unknown) => Error;
  /** Builds the error for operations submitted after close(). */
  closed: () => Error;
  /** Called when an after-commit hook or onBatch throws (a bug): the batch's callers are still answered. */
  onHookError?: (error: unknown) => void;
  /** Called after every batch, for telemetry. */
  onBatch?: (stats: BatchStats) => void;
  /** Most operations in one transaction; the rest wait for the next (follow-ups join their operation's regardless). */
  maxBatchOperations?: number;
  /** A monotonic clock for measuring batches, in milliseconds. */
  monotonicMs?: () => number;
}

interface PendingOp {
  run: (tx: Transaction) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** SQLite result codes that mean the storage itself failed: the whole batch fails, nothing is acknowledged. */
const storageFailure = /^SQLITE_(FULL|IOERR|NOMEM|CORRUPT|CANTOPEN|READONLY|NOTADB|PROTOCOL|BUSY|LOCKED)/;

export function isStorageFailure(error: unknown): boolean {
  return error instanceof Error && 'code' in error && storageFailure.test(String(error.code));
}

export class GroupCommitter {
  private queue: PendingOp[] = [];
  private scheduled = false;
  private flushing = false;
  private closedForWrites = false;
  private readonly maxBatchOperations: number;
  private readonly monotonicMs: () => number;
  private readonly begin;
  private readonly commit;
  private readonly rollback;
  private readonly savepoint;
  private readonly release;
  private readonly rollbackTo;

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions,
  ) {
    this.maxBatchOperations = options.maxBatchOperations ?? 10_000;
    this.monotonicMs = options.monotonicMs ?? (() => performance.now());
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT op');
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
  }

  /** Queues `run` for the next batch; resolves with its result once the batch is durable. */
  submit<T>(run: (tx: Transaction) => T): Promise<T> {
    if (this.closedForWrites) return Promise.reject(this.options.closed());
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Operations waiting for the next batch. */
  get pending(): number {
    return this.queue.length;
  }

  /** Refuses new operations and writes what is queued. */
  close(): void {
    this.closedForWrites = true;
    while (this.queue.length > 0) this.flush();
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
    try {
      this.begin.run();
      for (const op of batch) {
        if (batchError !== undefined) break;
        const opHooks: (() => void)[] = [];
        let followUps: PendingOp[] | undefined;
        this.savepoint.run();
        try {
          const value = op.run({
            afterCommit: (hook) => opHooks.push(hook),
            followUp: <T>(run: (tx: Transaction) => T) =>
              new Promise<T>((resolve, reject) => {
                followUps ??= [];
                followUps.push({ run, resolve: resolve as (value: unknown) => void, reject });
              }),
          });
          this.release.run();
          results.push({ ok: true, value });
          hooks.push(...opHooks);
          // The loop reaches them after the operations already in the batch.
          if (followUps !== undefined) batch.push(...followUps);
        } catch (error) {
          for (const followUp of followUps ?? []) followUp.reject(error);
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
    this.guard(() =>
      this.options.onBatch?.({
        operations: batch.length,
        durationMs: this.monotonicMs() - startedMs,
        ok: committed,
      }),
    );
    if (committed) {
      for (const hook of hooks) this.guard(hook);
      batch.forEach((op, i) => {
        const result = results[i]!;
        if (result.ok) op.resolve(result.value);
        else op.reject(result.value);
      });
    } else {
      const error = this.options.commitFailed(batchError);
      for (const op of batch) op.reject(error);
    }
    if (this.queue.length > 0) this.schedule();
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.options.onHookError?.(error);
    }
  }
}
