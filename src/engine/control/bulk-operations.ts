/**
 * Bulk operations: cancel, update (run now, priority), requeue or delete
 * every job a filter matches — the bulk RPCs, PurgeQueue, "all" of the dead
 * letters and the admin UI's "all N matching" — as one server-side operation
 * that keeps the server serving.
 *
 * An operation runs in slices: each slice is one write unit that reads at
 * most a slice's size of index entries from where the last one stopped
 * (bulk-scan.ts) and changes those that match, so no transaction holds more
 * than a bounded amount of work (the size follows the time slices take, see
 * firstSliceRows), and between slices the operation yields turns of the event
 * loop (setImmediate: not a timer) so that what arrived meanwhile — enqueues,
 * leases, acks — is read and committed in a batch of its own, without waiting
 * for the rest of the operation. Its audit entry is written with the first slice (no job changes
 * without it) and its totals are updated with each later one, so the log holds
 * one entry per operation with the filter and the count.
 *
 * States: running → done (every range read), cancelled (CancelBulkOperation
 * between two slices: what earlier slices changed stays changed; a Stop that
 * arrives during the last slice comes too late, and the operation is done) or failed
 * (a slice's write failed, e.g. the server is closing). The registry is in
 * memory and bounded: at most `maxRunning` operations run at once, and the
 * last `keptFinished` finished ones are kept for polling. After a restart an
 * operation is gone, and its audit entry says how far it got (`done: false`).
 */

import { randomUUID } from 'node:crypto';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import type {
  BulkAction,
  BulkOperationInfo,
  CancelNotice,
  JobChanges,
  JobFilter,
  MatchCount,
} from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { BulkActions } from './bulk-actions.ts';
import { afterQueueLookup, type BulkPlan, planBulk } from './bulk-filter.ts';
import {
  checkRequestKey,
  type KeyedRequest,
  keyedRequest,
  operationNotKept,
  otherRequest,
  requestKeyWindowMs,
} from './bulk-keys.ts';
import { countMatching, RangeCursor } from './bulk-scan.ts';

/**
 * How many index entries a slice reads (and so jobs it may change) in one
 * transaction: it starts at `firstSliceRows` and follows the time each slice's
 * write takes until it is durable (measured on the injected clock: the batch,
 * the commit and its fsync — what other writes behind it wait for), scaled
 * toward `sliceWorkMs` (at most halved or doubled per slice), within
 * [`minSliceRows`, `maxSliceRows`] — so a slice holds the writer for about
 * `sliceWorkMs` however costly each row is (indexes, a loaded machine). An
 * enqueue that arrives during a slice waits for the rest of it: at 300,000
 * jobs on an idle 2-core machine a 10 ms target let slices run to 14–16 ms
 * (doubling below 5 ms overshot), plus a WAL checkpoint of ~8 ms in the commit
 * of every few slices (bench/bulk-stall.ts, bench/results/bulk-operations-*.md).
 */
export const firstSliceRows = 256;
export const minSliceRows = 32;
export const maxSliceRows = 2000;
export const sliceWorkMs = 5;
/** Index entries a count (the total before a confirmation) may examine. */
export const countBudget = 100_000;
/** Operations running at once, server-wide. */
export const maxRunning = 4;
/** Finished operations kept for polling. */
const keptFinished = 64;

const actionWords: Record<BulkAction, string> = {
  cancel: 'cancelled',
  update: 'changed',
  requeue: 'requeued',
  delete: 'deleted',
};

/** An operation while it runs: its progress, and what its slices need. */
interface Running {
  info: BulkOperationInfo;
  plan: BulkPlan;
  changes: JobChanges;
  audit: AuditInput | undefined;
  auditId: number | undefined;
  cursor: RangeCursor;
  /** The next slice's size (see firstSliceRows). */
  sliceRows: number;
  stopRequested: boolean;
  /** Ends the wait between two slices (set while the operation waits on `betweenSlices`). */
  wake?: () => void;
  /** What failed it (state `failed`). */
  failure?: unknown;
  /** Resolves when the operation has ended (set as it starts). */
  finished?: Promise<BulkOperationInfo>;
  /** The request key it started under (bulk-keys.ts). */
  keyed?: KeyedRequest;
}

/** An operation as start() answers: its progress now, and its end. */
interface Started {
  info: BulkOperationInfo;
  finished: Promise<BulkOperationInfo>;
}

/**
 * What an operation awaits between two slices, after the turns of the event loop that let other
 * work commit: nothing on a server (the composition root passes none). A test holds an operation
 * with it at a known point — still running, as a Stop must find it — whatever the machine's speed.
 * A Stop ends the wait at once.
 */
export type BetweenSlices = (operation: Readonly<BulkOperationInfo>) => Promise<void>;

export interface BulkStart {
  action: BulkAction;
  filter: JobFilter;
  /** For `update`: `runNow` and/or `priority`. */
  changes?: JobChanges;
  audit?: AuditInput;
  /**
   * Names the request (bulk-keys.ts): a start under a key that already started
   * the same request answers with that operation and starts nothing.
   */
  requestKey?: string;
}

export class BulkOperations {
  private readonly operations = new Map<string, Running>();
  /** Operations taking their first count: they hold a place among the `maxRunning`. */
  private starting = 0;
  /** The kept operations started under a request key, by KeyedRequest.slot. */
  private readonly byKey = new Map<string, Running>();
  /** Keyed starts not yet answered, by slot: a repeat that arrives meanwhile waits for the first. */
  private readonly keyedStarts = new Map<string, Promise<Started>>();
  /** What a slice writes, by action (bulk-actions.ts). */
  private readonly actions: BulkActions;

  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
    /** Tells the workers of leased jobs a cancel asked to stop (the Canceller's listeners), after the commit. */
    notify: (tx: StoreTx, notices: readonly CancelNotice[]) => void,
    /** Checks an update's changes (job-update.ts); throws invalid_argument. */
    private readonly checkChanges: (changes: JobChanges) => void,
    private readonly betweenSlices?: BetweenSlices,
  ) {
    this.actions = new BulkActions(ctx, notify);
  }

  /** The filter checked against the action, as the operation would read it. */
  plan(action: BulkAction, filter: JobFilter, changes: JobChanges = {}): BulkPlan {
    if (action === 'update') this.checkChanges(changes);
    const plan = planBulk(this.ctx, action, filter, actionWords[action]);
    // A ready job is due already: run-now alone changes only scheduled ones.
    if (action === 'update' && changes.priority === undefined) {
      return { ...plan, states: plan.states.filter((s) => s === 'scheduled') };
    }
    return plan;
  }

  /** How many jobs of the jobs list match `filter` in any state (a bounded count, see MatchCount). */
  countListed(filter: JobFilter): Promise<MatchCount> {
    return afterQueueLookup(this.ctx, filter.queue, () => {
      const plan = planBulk(this.ctx, 'list', filter, 'listed');
      return this.ctx.read((view) => countMatching(view, plan, countBudget));
    });
  }

  /** How many jobs the action would apply to now, examining at most `budget` index entries (see MatchCount). */
  count(
    action: BulkAction,
    filter: JobFilter,
    changes: JobChanges = {},
    budget = countBudget,
  ): Promise<MatchCount> {
    return afterQueueLookup(this.ctx, filter.queue, () => {
      const plan = this.plan(action, filter, changes);
      return this.ctx.read((view) => countMatching(view, plan, budget));
    });
  }

  /**
   * Starts an operation; resolves once it has begun (its count taken) with its
   * progress. `finished` resolves when it ends, never rejects (a failure is state `failed`).
   */
  async start(request: BulkStart): Promise<Started> {
    return afterQueueLookup(this.ctx, request.filter.queue, () => this.planAndStart(request));
  }

  private async planAndStart(request: BulkStart): Promise<Started> {
    const changes = request.changes ?? {};
    const plan = this.plan(request.action, request.filter, changes);
    const details = { ...plan.details, ...bulkChanges(changes) };
    const key = checkRequestKey(request.requestKey, 'request_key');
    if (key === undefined) return this.begin(request, plan, changes, details, undefined);
    const keyed = keyedRequest(key, request.audit?.actor ?? '', {
      action: request.action,
      auditAction: request.audit?.action ?? null,
      details,
    });
    for (;;) {
      const pending = this.keyedStarts.get(keyed.slot);
      if (pending === undefined) break;
      await pending.catch(() => undefined);
    }
    const known = this.byKey.get(keyed.slot);
    // After its window a key is free again: the store replaces its row (holdKey).
    if (known !== undefined && known.info.startedAtMs >= this.ctx.clock.nowMs() - requestKeyWindowMs) {
      if (known.keyed?.requestJson !== keyed.requestJson) throw otherRequest(keyed, known.info.startedAtMs);
      return { info: { ...known.info }, finished: known.finished ?? Promise.resolve({ ...known.info }) };
    }
    const starting = this.begin(request, plan, changes, details, keyed);
    this.keyedStarts.set(keyed.slot, starting);
    try {
      return await starting;
    } finally {
      this.keyedStarts.delete(keyed.slot);
    }
  }

  /** Takes the first count and, under a key, holds the key in the store; then the operation runs. */
  private async begin(
    request: BulkStart,
    plan: BulkPlan,
    changes: JobChanges,
    details: Record<string, unknown>,
    keyed: KeyedRequest | undefined,
  ): Promise<Started> {
    if (this.runningCount() + this.starting >= maxRunning) {
      throw new SeppError(
        'resource_exhausted',
        `${maxRunning} bulk operations are running already; wait for one to end (GetBulkOperation) or cancel one`,
      );
    }
    this.starting++;
    const id = randomUUID();
    let begun: { count: MatchCount; lastSeq: number };
    try {
      begun = await this.ctx.read(function* (view) {
        return { count: yield* countMatching(view, plan, countBudget), lastSeq: yield* view.bulk.lastSeq() };
      });
      if (keyed !== undefined) await this.holdKey(keyed, id);
    } finally {
      this.starting--;
    }
    const running: Running = {
      info: {
        id,
        action: request.action,
        details,
        state: 'running',
        matched: begun.count.matched,
        matchedExact: begun.count.exact,
        changed: 0,
        cancelRequested: 0,
        examined: 0,
        slices: 0,
        startedAtMs: this.ctx.clock.nowMs(),
        finishedAtMs: null,
        error: null,
        actor: request.audit?.actor ?? null,
      },
      plan,
      changes,
      audit: request.audit,
      auditId: undefined,
      cursor: new RangeCursor(plan, begun.lastSeq),
      sliceRows: firstSliceRows,
      stopRequested: false,
      ...(keyed === undefined ? {} : { keyed }),
    };
    this.operations.set(running.info.id, running);
    if (keyed !== undefined) this.byKey.set(keyed.slot, running);
    const finished = this.drive(running);
    running.finished = finished;
    return { info: { ...running.info }, finished };
  }

  /**
   * Writes the key's row for operation `id`, before the caller is answered; throws when the
   * key already names an operation (start() found none kept here: see bulk-keys.ts).
   */
  private async holdKey(keyed: KeyedRequest, id: string): Promise<void> {
    const nowMs = this.ctx.clock.nowMs();
    const holder = await this.ctx.write((tx) =>
      tx.bulk.claimKey({
        actor: keyed.actor,
        requestKey: keyed.key,
        operationId: id,
        requestJson: keyed.requestJson,
        nowMs,
        validFromMs: nowMs - requestKeyWindowMs,
      }),
    );
    if (holder.operation_id === id) return;
    if (holder.request_json !== keyed.requestJson) throw otherRequest(keyed, holder.started_at_ms);
    throw operationNotKept(keyed, holder.operation_id, keptFinished);
  }

  /** Starts an operation and resolves when it has ended; rejects with what failed it. */
  async run(request: BulkStart): Promise<BulkOperationInfo> {
    const { info, finished } = await this.start(request);
    const ended = await finished;
    if (ended.state === 'failed')
      throw this.operations.get(info.id)?.failure ?? new Error(ended.error ?? 'failed');
    return ended;
  }

  /** An operation's progress; NOT_FOUND for an id this server does not know (or no longer keeps). */
  get(id: string): BulkOperationInfo {
    return { ...this.find(id).info };
  }

  /** Running operations first, then the finished ones kept, newest first. */
  list(): BulkOperationInfo[] {
    const all = [...this.operations.values()].map((r) => ({ ...r.info }));
    return all.sort(
      (a, b) =>
        Number(b.state === 'running') - Number(a.state === 'running') || b.startedAtMs - a.startedAtMs,
    );
  }

  /** Asks a running operation to stop after its current slice; resolves with it once it has. */
  cancel(id: string): Promise<BulkOperationInfo> {
    const running = this.find(id);
    running.stopRequested = true;
    running.wake?.();
    return running.finished ?? Promise.resolve({ ...running.info });
  }

  private find(id: string): Running {
    const running = this.operations.get(id);
    if (running === undefined) {
      throw new SeppError(
        'not_found',
        `bulk operation ${JSON.stringify(id.slice(0, 64))} is not known here: it never ran on this server, ended before its last restart, or is older than the last ${keptFinished} kept`,
      );
    }
    return running;
  }

  private runningCount(): number {
    let n = 0;
    for (const r of this.operations.values()) if (r.info.state === 'running') n++;
    return n;
  }

  private async drive(running: Running): Promise<BulkOperationInfo> {
    const { info } = running;
    try {
      // The first slice runs even when nothing matches: it writes the audit entry.
      do {
        if (running.stopRequested) {
          info.state = 'cancelled';
          await this.ctx.write((tx) => this.auditSlice(tx, running));
          break;
        }
        const startedMs = this.ctx.clock.nowMs();
        await this.ctx.write((tx) => this.slice(tx, running));
        this.resize(running, this.ctx.clock.nowMs() - startedMs);
        if (!running.cursor.done) await this.between(running);
      } while (!running.cursor.done);
      if (info.state === 'running') info.state = 'done';
    } catch (error) {
      info.state = 'failed';
      running.failure = error;
      info.error = error instanceof Error ? error.message : String(error);
    }
    info.finishedAtMs = this.ctx.clock.nowMs();
    this.forgetOld();
    return { ...info };
  }

  /** Between two slices: turns for other work, then `betweenSlices` unless a Stop came or comes. */
  private async between(running: Running): Promise<void> {
    await yieldTurn();
    const { betweenSlices } = this;
    if (betweenSlices === undefined || running.stopRequested) return;
    await new Promise<void>((resolve) => {
      running.wake = resolve;
      betweenSlices({ ...running.info }).then(resolve, resolve);
    });
    running.wake = undefined;
  }

  /** One slice: the next range step's jobs, changed, and the audit entry written or brought up to date. */
  private *slice(tx: StoreTx, running: Running): Op<void> {
    const step = yield* running.cursor.next(tx, running.sliceRows);
    if (step !== null && step.seqs.length > 0) {
      const { info, plan, changes } = running;
      const slice = { action: info.action, actor: info.actor, changes, residual: plan.residual };
      const done = yield* this.actions.apply(tx, slice, step);
      info.changed += done.changed;
      info.cancelRequested += done.cancelRequested;
    }
    running.info.slices++;
    running.info.examined = running.cursor.examined;
    yield* this.auditSlice(tx, running);
  }

  /**
   * The next slice's size from the time this one's write took until durable
   * (its batch and commit included, fsync too: what an enqueue behind it waits):
   * in proportion to `sliceWorkMs`, at most halved or doubled.
   */
  private resize(running: Running, tookMs: number): void {
    running.sliceRows = nextSliceRows(running.sliceRows, tookMs);
  }

  private *auditSlice(tx: StoreTx, running: Running): Op<void> {
    const { audit, info } = running;
    if (audit === undefined) return;
    // The id last: a short view of the entry (sepp audit's column) shows the filter and counts first.
    const outcome = {
      ...info.details,
      matched: info.matched,
      ...(info.matchedExact ? {} : { matchedAtLeast: true }),
      changed: info.changed,
      ...(info.action === 'cancel' ? { cancelRequested: info.cancelRequested } : {}),
      done: running.cursor.done && info.state === 'running',
      ...(info.state === 'cancelled' ? { stopped: true } : {}),
      operationId: info.id,
    };
    if (running.auditId === undefined) running.auditId = yield* this.audit.write(tx, audit, outcome);
    else yield* this.audit.update(tx, running.auditId, audit, outcome);
  }

  /** Keeps the newest `keptFinished` finished operations. */
  private forgetOld(): void {
    // The map keeps the order they started in.
    const finished = [...this.operations.values()].filter((r) => r.info.state !== 'running');
    for (const old of finished.slice(0, Math.max(0, finished.length - keptFinished))) {
      this.operations.delete(old.info.id);
      if (old.keyed !== undefined && this.byKey.get(old.keyed.slot) === old)
        this.byKey.delete(old.keyed.slot);
    }
  }
}

/** The size of the slice after one of `rows` rows that took `tookMs` until durable (see firstSliceRows). */
export function nextSliceRows(rows: number, tookMs: number): number {
  const scale = Math.min(2, Math.max(0.5, sliceWorkMs / Math.max(tookMs, 0.01)));
  return Math.min(maxSliceRows, Math.max(minSliceRows, Math.floor(rows * scale)));
}

/** An update's changes as its details record them (only what bulk takes). */
function bulkChanges(changes: JobChanges): Record<string, unknown> {
  return {
    ...(changes.runNow === true ? { runNow: true } : {}),
    ...(changes.priority === undefined ? {} : { priority: changes.priority }),
  };
}

/**
 * Lets what arrived during a slice commit before the next one: the first turn
 * reads it (I/O) and submits it, which queues the writer's batch; the second
 * lets that batch run without the next slice in it.
 */
async function yieldTurn(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}
