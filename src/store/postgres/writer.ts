/**
 * The PostgreSQL store's writer: one connection per sepp server that runs the
 * engine's write units in batches, as the SQLite store's group committer does.
 * Units that arrive while a batch is being written wait for the next one; a
 * batch is one transaction, each unit in its own savepoint (when the batch has
 * more than one), committed once. So a unit sees every unit submitted before
 * it, its caller is answered only after the commit that holds it returned, and
 * a burst of units shares one commit and one WAL flush.
 *
 * What differs from SQLite: a unit's statements go over the network, so the
 * writer drives each unit with `resume` (src/store/op.ts), awaiting every
 * statement; other JavaScript runs meanwhile and new units queue for the next
 * batch. Concurrency comes from several sepp servers (each with its writer),
 * which PostgreSQL's row locks and SKIP LOCKED keep apart.
 *
 * The connection is pipelined: what nobody waits for — BEGIN, the savepoints, the
 * count deltas (counts.ts: one statement per batch, before the COMMIT) — is sent at
 * once, ahead of its answer, and travels with the next statement a unit waits for,
 * so a batch costs a round trip per statement whose answer a unit needs, plus the
 * COMMIT. Those answers (`Ahead`) are checked
 * when a unit fails and before the COMMIT is trusted: a failed one aborted the
 * transaction (PostgreSQL then answers COMMIT with ROLLBACK), and fails the batch.
 *
 * The writer's connection holds an advisory lock on a counter shard (counts.ts)
 * for as long as it lives; a broken connection fails the batch it was writing
 * (a StorageFailure: nothing of it is acknowledged) and the next batch connects
 * again, with a shard of its own again.
 */
import type pg from 'pg';
import { resume } from '../op.ts';
import {
  type CommitStats,
  needsSync,
  StorageFailure,
  type StoreTx,
  stricterDurability,
  type UnitDurability,
  type WriteHooks,
  type WriteUnit,
} from '../store.ts';
import { command, connectionOf, storageFailure } from './connect.ts';
import { ShardDeltas } from './counts.ts';
import { type Connection, LocksBusy, type WriteTransaction } from './sql.ts';

/** The capabilities over a connection: what a unit's `tx` holds besides its scope. */
export type Capabilities = Omit<StoreTx, 'afterCommit' | 'followUp' | 'durability'>;

interface PendingUnit {
  unit: WriteUnit<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** The answers of what the writer sent ahead in the current transaction (see the top of this file). */
class Ahead {
  private answers: Promise<void>[] = [];
  private failure: { error: unknown } | undefined;

  readonly take = (answer: Promise<unknown>): void => {
    this.answers.push(
      answer.then(
        () => undefined,
        (error: unknown) => {
          this.failure ??= { error };
        },
      ),
    );
  };

  /** Waits for every answer so far; the first failure among them, if any. */
  async failed(): Promise<{ error: unknown } | undefined> {
    const answers = this.answers;
    this.answers = [];
    await Promise.all(answers);
    return this.failure;
  }

  reset(): void {
    this.answers = [];
    this.failure = undefined;
  }
}

/** The writer's connection, its shard's deltas and the capabilities over it. */
export interface WriterSession {
  readonly client: pg.Client;
  /** What this transaction sent ahead of its answers. */
  readonly ahead: Ahead;
  readonly deltas: ShardDeltas;
  readonly caps: Capabilities;
  /** What the current transaction sent (for the key locks, keys.ts). */
  readonly transaction: WriteTransaction;
  broken: boolean;
}

export interface WriterOptions {
  /** Opens a session: connects, takes a shard. Rejects when the database cannot be reached. */
  connect(): Promise<WriterSession>;
  /** Most units in one transaction; the rest wait for the next (follow-ups join their unit's). */
  maxBatchOperations?: number;
  monotonicMs?: () => number;
}

/**
 * Where one batch's wall time went, for bench/pg-drain-profile.ts: the units' part (their
 * statements' round trips, and whatever else the event loop ran meanwhile), the COMMIT's
 * (its round trip and WAL flush), and how long the writer had nothing to write before it.
 */
export interface BatchTrace {
  units: number;
  /** Statements sent in the transaction (BEGIN, savepoints and the COMMIT not counted). */
  statements: number;
  /** Queries of the writer's own: BEGIN, the savepoints' and the COMMIT (each a simple query). */
  commands: number;
  /** Statements whose answer a unit waited for (the rest were sent ahead), and the wall time of those waits. */
  awaited: number;
  awaitedMs: number;
  idleBeforeMs: number;
  /** Units queued for the next batch when this one's COMMIT answered (before its units were answered). */
  queuedAtCommit: number;
  unitsMs: number;
  commitMs: number;
}

/** Set by a benchmark to hear of every batch (never in the server: nothing reads the clock for it otherwise). */
export const writerTrace: { sink: ((trace: BatchTrace) => void) | undefined } = { sink: undefined };

export const plainWriteHooks: WriteHooks = {
  commitFailed: (failure) => failure,
  unitFailed: (error) => (error instanceof Error ? error : new Error(String(error))),
  closed: () => new Error('the store is closed'),
};

class Scope {
  readonly hooks: (() => void)[] = [];
  followUps: PendingUnit[] | undefined;
  /** What the unit asked of its commit (StoreTx.durability); undefined: nothing. */
  asked: UnitDurability | undefined;

  durability(mode: UnitDurability): void {
    this.asked = stricterDurability(this.asked, mode);
  }

  afterCommit(hook: () => void): void {
    this.hooks.push(hook);
  }

  followUp<T>(unit: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.followUps ??= [];
      this.followUps.push({
        unit: unit as WriteUnit<unknown>,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
    });
  }
}

/** Builds a session over a connected client whose deltas go to `shard`. */
export function writerSession(
  client: pg.Client,
  shard: number,
  capabilities: (c: Connection) => Capabilities,
): WriterSession {
  const plain = connectionOf(client, undefined);
  const ahead = new Ahead();
  const deltas = new ShardDeltas(plain, () => shard, ahead.take);
  const transaction: WriteTransaction = { statements: 0, unitStart: 0 };
  return {
    client,
    ahead,
    deltas,
    caps: capabilities(connectionOf(client, deltas, transaction, ahead.take)),
    transaction,
    broken: false,
  };
}

export class PostgresWriter {
  hooks: WriteHooks = plainWriteHooks;
  private queue: PendingUnit[] = [];
  private scheduled = false;
  private running: Promise<void> | undefined;
  private closed = false;
  private session: WriterSession | undefined;
  private readonly maxBatchOperations: number;
  private readonly monotonicMs: () => number;
  /** When the last batch ended (for writerTrace). */
  private lastEndedMs: number | undefined;

  constructor(private readonly options: WriterOptions) {
    this.maxBatchOperations = options.maxBatchOperations ?? 1000;
    this.monotonicMs = options.monotonicMs ?? (() => performance.now());
  }

  submit<T>(unit: WriteUnit<T>): Promise<T> {
    if (this.closed) return Promise.reject(this.hooks.closed());
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit: unit as WriteUnit<unknown>, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Refuses new units, writes what is queued, runs `last` on the session (nothing else runs on
   * it then; its failure is ignored), and ends the connection.
   */
  async close(last?: (session: WriterSession) => Promise<void>): Promise<void> {
    this.closed = true;
    while (this.running !== undefined || this.queue.length > 0) {
      if (this.running === undefined) this.running = this.flush();
      await this.running;
    }
    const session = this.session;
    this.session = undefined;
    if (session !== undefined && last !== undefined) await last(session).catch(() => {});
    await session?.client.end().catch(() => {});
  }

  /** Connects now (the store's start), rather than with the first batch. */
  async open(): Promise<void> {
    await this.connected();
  }

  /** The session, once connected; undefined before the first batch or after a failure. */
  get current(): WriterSession | undefined {
    return this.session;
  }

  private schedule(): void {
    if (this.scheduled || this.running !== undefined) return;
    this.scheduled = true;
    // The end of the current turn, as in SQLite: units submitted together share a batch.
    setImmediate(() => {
      this.scheduled = false;
      if (this.running !== undefined) return;
      this.running = this.flush();
    });
  }

  private async flush(): Promise<void> {
    try {
      await this.writeBatch();
    } finally {
      this.running = undefined;
      if (this.queue.length > 0 && !this.closed) this.schedule();
    }
  }

  private async writeBatch(): Promise<void> {
    if (this.queue.length === 0) return;
    const batch = this.queue.slice(0, this.maxBatchOperations);
    this.queue = this.queue.slice(batch.length);
    const startedMs = this.monotonicMs();
    const results: { ok: boolean; value: unknown; deferred?: boolean }[] = [];
    const hooks: (() => void)[] = [];
    // Follow-ups of failed units are refused when their units are answered, not before.
    const refused: { followUp: PendingUnit; error: unknown }[] = [];
    let committed = false;
    let batchError: unknown;
    let session: WriterSession | undefined;
    /** Whether a unit of the batch needs its commit flushed before it is answered. */
    let syncNeeded = false;
    const trace = writerTrace.sink;
    let unitsDoneMs = startedMs;
    /** The writer's own queries in this batch, for writerTrace. */
    let commands = 0;
    let queuedAtCommit = 0;
    try {
      session = await this.connected();
      const { client, ahead } = session;
      ahead.reset();
      session.deltas.reset();
      ahead.take(command(client, 'BEGIN'));
      commands++;
      session.transaction.statements = 0;
      session.transaction.waits = trace === undefined ? undefined : { count: 0, ms: 0 };
      let savepointOpen = false;
      for (let i = 0; i < batch.length; i++) {
        const pending = batch[i]!;
        const savepoint = i > 0 || batch.length > 1;
        if (savepoint) {
          ahead.take(command(client, savepointOpen ? 'RELEASE SAVEPOINT u; SAVEPOINT u' : 'SAVEPOINT u'));
          commands++;
          savepointOpen = true;
        }
        const scope = new Scope();
        const tx = Object.assign(Object.create(session.caps) as StoreTx, {
          afterCommit: (hook: () => void) => scope.afterCommit(hook),
          followUp: <T>(unit: WriteUnit<T>) => scope.followUp(unit),
          durability: (mode: UnitDurability) => scope.durability(mode),
        });
        session.transaction.unitStart = session.transaction.statements;
        try {
          const value = await resume(pending.unit(tx));
          session.deltas.unitDone();
          results.push({ ok: true, value });
          // PostgreSQL's own setting (synchronous_commit, on by default) is what `default` means here.
          if (!syncNeeded) syncNeeded = needsSync(scope.asked, true);
          for (const hook of scope.hooks) hooks.push(hook);
          if (scope.followUps !== undefined) batch.push(...scope.followUps);
        } catch (unitError) {
          // What was sent ahead failed first: the unit's statement only found the transaction aborted.
          const failedAhead = await ahead.failed();
          const error = failedAhead === undefined ? unitError : storageFailure(failedAhead.error);
          session.deltas.discard();
          // A rolled-back savepoint gave back the locks taken in it: take them again if asked.
          session.deltas.lockedQueues.clear();
          if (error instanceof LocksBusy && savepoint) {
            // Nothing of the unit ran: it goes first in the next batch, where it may wait.
            await command(client, 'ROLLBACK TO SAVEPOINT u; RELEASE SAVEPOINT u');
            savepointOpen = false;
            results.push({ ok: false, value: error, deferred: true });
            continue;
          }
          for (const followUp of scope.followUps ?? []) refused.push({ followUp, error });
          if (error instanceof StorageFailure) {
            batchError = error;
            break;
          }
          if (savepoint) {
            await command(client, 'ROLLBACK TO SAVEPOINT u; RELEASE SAVEPOINT u');
            savepointOpen = false;
          } else {
            // The only unit: its transaction goes with it.
            await command(client, 'ROLLBACK');
          }
          results.push({ ok: false, value: error });
          if (!savepoint) break;
        }
      }
      if (batchError === undefined) {
        const onlyFailed = results.length === 1 && results[0]?.ok === false && batch.length === 1;
        // A batch of relaxed units only (durability per queue) is answered before its WAL is flushed.
        // The count deltas of the batch's units: one statement, with the COMMIT.
        if (trace !== undefined) unitsDoneMs = this.monotonicMs();
        if (!onlyFailed) session.deltas.flushBatch();
        if (!onlyFailed && !syncNeeded) ahead.take(command(client, 'SET LOCAL synchronous_commit = off'));
        if (!onlyFailed) {
          commands++;
          const tag = await command(client, 'COMMIT');
          queuedAtCommit = this.queue.length;
          const failedAhead = await ahead.failed();
          if (failedAhead !== undefined) throw storageFailure(failedAhead.error);
          if (tag !== 'COMMIT') throw storageFailure(`the COMMIT answered ${String(tag)}`);
        }
        committed = true;
      }
    } catch (error) {
      batchError = error;
    }
    if (!committed && session !== undefined) {
      session.deltas.reset();
      await session.client.query('ROLLBACK').catch(() => {});
      // Whatever broke the batch may have broken the connection: the next batch starts afresh.
      this.drop(session);
    }
    // The transaction ended, and its advisory locks with it.
    session?.deltas.lockedQueues.clear();
    const stats: CommitStats = {
      operations: batch.length,
      durationMs: this.monotonicMs() - startedMs,
      ok: committed,
    };
    this.guard(() => this.hooks.afterCommit?.(stats));
    if (trace !== undefined) {
      const endedMs = startedMs + stats.durationMs;
      trace({
        units: batch.length,
        statements: session?.transaction.statements ?? 0,
        commands,
        awaited: session?.transaction.waits?.count ?? 0,
        awaitedMs: session?.transaction.waits?.ms ?? 0,
        idleBeforeMs: this.lastEndedMs === undefined ? 0 : startedMs - this.lastEndedMs,
        queuedAtCommit,
        unitsMs: unitsDoneMs - startedMs,
        commitMs: endedMs - unitsDoneMs,
      });
      this.lastEndedMs = endedMs;
    }
    // Deferred units wrote nothing: they run again, first, whether or not the batch committed.
    const deferred = batch.filter((_, i) => results[i]?.deferred === true);
    if (deferred.length > 0) this.queue.unshift(...deferred);
    for (const { followUp, error } of refused) followUp.reject(error);
    if (committed) {
      for (const hook of hooks) this.guard(hook);
      batch.forEach((pending, i) => {
        const result = results[i];
        if (result === undefined)
          pending.reject(this.hooks.commitFailed(storageFailure('the batch ended early')));
        else if (result.deferred === true) return;
        else if (result.ok) pending.resolve(result.value);
        else pending.reject(this.hooks.unitFailed(result.value));
      });
    } else {
      const error = this.hooks.commitFailed(storageFailure(batchError));
      batch.forEach((pending, i) => {
        if (results[i]?.deferred !== true) pending.reject(error);
      });
    }
  }

  private connecting: Promise<WriterSession> | undefined;

  /** The live session, or a new one (one connection attempt at a time). */
  private connected(): Promise<WriterSession> {
    if (this.session !== undefined && !this.session.broken) return Promise.resolve(this.session);
    if (this.session !== undefined) this.drop(this.session);
    this.connecting ??= this.options.connect().then(
      (session) => {
        this.connecting = undefined;
        this.session = session;
        return session;
      },
      (error: unknown) => {
        this.connecting = undefined;
        throw storageFailure(error);
      },
    );
    return this.connecting;
  }

  private drop(session: WriterSession): void {
    if (this.session === session) this.session = undefined;
    session.broken = true;
    session.client.end().catch(() => {});
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.hooks.hookFailed?.(error);
    }
  }
}
