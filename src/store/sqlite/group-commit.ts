/**
 * Group commit: the one writer of the database.
 *
 * Every write is a unit (a generator function, src/store/op.ts) submitted here.
 * Units that arrive while a batch is being written wait for the next one; a
 * batch runs all its units in one transaction, each inside its own savepoint,
 * then commits once — one fsync for the whole batch. Each caller's promise
 * settles only after that commit is durable, so nothing is acknowledged before
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
 *
 * The sync of a committed batch (the WAL's fdatasync) runs inline, blocking
 * the thread, or — with `syncWalInBackground`, when the sync is needed and other
 * work is waiting (`backgroundSync`) — on libuv's thread pool, and the writer
 * goes on committing the next batches meanwhile. A committed batch then waits,
 * unanswered, in `waiting` (first in, first out). The rules that keep
 * "nothing is acknowledged before it is durable":
 *   1. A batch's hooks and answers run only after a sync that started after its
 *      COMMIT returned has completed (a sync covers the commits numbered up to
 *      `commits` when it started: `coveredThrough`).
 *   2. At most one sync is in flight; when it ends, the next starts if a waiting
 *      batch needs one, and covers every commit before it started.
 *   3. Batches are answered in the order they were committed, so answers stay
 *      in submission order; a batch that needs no sync (only `relaxed` units)
 *      or whose commit failed waits behind those before it, then is answered
 *      at once.
 *   4. A failed sync fails every batch it covered, as a failed inline sync
 *      fails its batch: the answers say so, no hook runs, the commits stand and
 *      may or may not reach the disk.
 *   5. A read's answer (`afterAnswered`) waits for every batch committed before
 *      it ran, so nothing a reader is told depends on a commit not yet durable.
 *   6. close() waits for the sync in flight and the answers it releases.
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
  /**
   * The same sync on libuv's thread pool: calls `done` when it ended, with its
   * error if it failed. Without it every sync is inline (`syncWal`).
   */
  syncWalInBackground?: (done: (error: Error | null) => void) => void;
  /**
   * When a sync goes to the background (given `syncWalInBackground`): `busy`
   * (default) — when more work is waiting or likely to arrive while the disk
   * works: units queued, batches unanswered, the previous background sync saw
   * another batch commit while it ran, or the batch held `busyBatchUnits` units or
   * more (many callers in flight); otherwise inline, as a lone caller's closed loop
   * (W2: nothing arrives while the disk works) only pays the thread pool's round
   * trip. `always`: every sync. `never`: none.
   */
  backgroundSync?: 'busy' | 'always' | 'never';
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

/**
 * A batch of this many units or more has its sync in the background (`busy`): that
 * many callers in flight means an open loop or many clients, whose next requests
 * the thread can decode while the disk works; a lone caller's batch (1-2 units)
 * keeps the inline sync. Measured: docs/decisions/0001.
 */
export const busyBatchUnits = 8;

/** A batch whose transaction ended, until its callers are answered. */
interface EndedBatch<Tx> {
  readonly units: PendingUnit<Tx>[];
  readonly results: { ok: boolean; value: unknown }[];
  readonly hooks: (() => void)[];
  /** The commit's number when it needs a sync before its answers; 0: it does not (or it failed). */
  readonly syncAfter: number;
  readonly startedMs: number;
  /** Why the batch failed (its transaction or its sync); undefined: committed and durable as asked. */
  failure: StorageFailure | undefined;
  /** Reads that saw this commit: answered right after it (rule 5). */
  readers: (() => void)[] | undefined;
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
  private readonly syncWalInBackground: ((done: (error: Error | null) => void) => void) | undefined;
  private readonly backgroundSync: 'busy' | 'always' | 'never';
  /** Batches ended but not yet answered, in commit order (see the top of this file). */
  private waiting: EndedBatch<Tx>[] = [];
  /** Commits so far; numbers the batches that need a sync. */
  private commits = 0;
  /** Every commit numbered up to this is synced. */
  private syncedThrough = 0;
  /** The sync in flight covers the commits numbered up to this; 0: none in flight. */
  private coveredThrough = 0;
  /** Whether another batch committed while the last background sync ran (`busy`). */
  private overlapped = false;
  /** Told when nothing waits any more (close()). */
  private drained: (() => void)[] = [];
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
    this.syncWalInBackground = options.syncWalInBackground;
    this.backgroundSync =
      options.syncWalInBackground === undefined ? 'never' : (options.backgroundSync ?? 'busy');
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

  /**
   * Calls `answer` once every batch committed so far is answered (rule 5): at once,
   * returning false, when none waits; otherwise later, returning true.
   */
  afterAnswered(answer: () => void): boolean {
    const last = this.waiting.at(-1);
    if (last === undefined) return false;
    last.readers ??= [];
    last.readers.push(answer);
    return true;
  }

  /** Refuses new units and writes what is queued; resolves once the last of it is answered (rule 6). */
  close(): Promise<void> {
    this.closedForWrites = true;
    while (this.queue.length > 0) this.flush();
    if (this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
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
    if (this.waiting.length > 0) {
      // Rule 3: refused behind the batches still waiting for their sync, in order.
      this.waiting.push({
        units: queued,
        results: [],
        hooks: [],
        syncAfter: 0,
        startedMs: this.monotonicMs(),
        failure,
        readers: undefined,
      });
      return;
    }
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
    const ended: EndedBatch<Tx> = {
      units: batch,
      results,
      hooks,
      syncAfter: committed && needsSync ? ++this.commits : 0,
      startedMs,
      failure: committed ? undefined : storageFailure(batchError),
      readers: undefined,
    };
    if (ended.syncAfter === 0 || !this.inBackground(batch.length)) {
      if (ended.syncAfter !== 0) {
        // Before anyone hears of it: a failed sync fails the batch (its answers say so), though
        // the commit stands and may or may not reach the disk.
        try {
          this.syncWal?.();
          this.syncedThrough = ended.syncAfter;
        } catch (error) {
          ended.failure = storageFailure(error);
        }
      }
      // Rule 3: behind batches still waiting for their sync, an answerable batch waits its turn.
      if (this.waiting.length === 0) this.answer(ended);
      else this.waiting.push(ended);
    } else {
      if (this.coveredThrough !== 0) this.overlapped = true;
      this.waiting.push(ended);
      this.startSync();
    }
    if (this.queue.length > 0) this.schedule();
  }

  /** Whether the sync of the batch just committed goes to the background (`backgroundSync`). */
  private inBackground(units: number): boolean {
    switch (this.backgroundSync) {
      case 'never':
        return false;
      case 'always':
        return true;
      case 'busy':
        // A sync in flight or batches unanswered: this one must wait for them anyway.
        return this.waiting.length > 0 || this.queue.length > 0 || this.overlapped || units >= busyBatchUnits;
    }
  }

  /** Starts a background sync of every commit so far, unless one is in flight (rule 2). */
  private startSync(): void {
    if (this.coveredThrough !== 0) return;
    const covers = this.commits;
    this.coveredThrough = covers;
    this.overlapped = false;
    this.syncWalInBackground?.((error) => this.synced(covers, error));
  }

  /** The background sync of the commits up to `covers` ended: answers what it released, in order. */
  private synced(covers: number, error: Error | null): void {
    this.coveredThrough = 0;
    if (error === null) this.syncedThrough = covers;
    else {
      // Rule 4: every batch this sync covered fails, as its own failed inline sync would fail it.
      const failure = storageFailure(error);
      for (const ended of this.waiting) {
        if (ended.syncAfter !== 0 && ended.syncAfter <= covers) ended.failure ??= failure;
      }
    }
    while (this.waiting.length > 0) {
      const head = this.waiting[0]!;
      if (head.failure === undefined && head.syncAfter > this.syncedThrough) break;
      this.waiting.shift();
      this.answer(head);
    }
    if (this.waiting.length > 0) this.startSync();
    else for (const resolve of this.drained.splice(0)) resolve();
  }

  /**
   * Answers an ended batch: observers and hooks run first (a committed batch's, once
   * it is durable), then its callers, then the reads that saw it. One that throws must
   * not keep the callers of a durable batch from their answers, nor stop the writer.
   */
  private answer(ended: EndedBatch<Tx>): void {
    const stats: CommitStats = {
      operations: ended.units.length,
      durationMs: this.monotonicMs() - ended.startedMs,
      ok: ended.failure === undefined,
    };
    this.guard(() => this.hooks.afterCommit?.(stats));
    if (ended.failure === undefined) {
      for (const hook of ended.hooks) this.guard(hook);
      ended.units.forEach((pending, i) => {
        const result = ended.results[i]!;
        if (result.ok) pending.resolve(result.value);
        else pending.reject(this.hooks.unitFailed(result.value));
      });
    } else {
      const error = this.hooks.commitFailed(ended.failure);
      for (const pending of ended.units) pending.reject(error);
    }
    for (const reader of ended.readers ?? []) reader();
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.hooks.hookFailed?.(error);
    }
  }
}
