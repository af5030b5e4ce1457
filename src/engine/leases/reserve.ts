/**
 * Reserve: lease up to N ready jobs from the listed queues in order, and
 * long-poll when there are none.
 *
 * The lease and, when nothing was found, the waiter's registration happen in
 * one write operation, so a job committed by any later batch wakes the waiter.
 * A queue's limits (src/engine/flow-control) decide how many of its ready jobs
 * may be leased; a reserve they hold back waits as a throttled waiter.
 * A call whose signal has aborted by the time its operation runs leases
 * nothing: no job is handed to a dead call. If it aborts after the lease was
 * taken, the lease simply expires.
 */

import type { LeaseParams } from '../../store/leases.ts';
import { just, type Op } from '../../store/op.ts';
import type { LeasedRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import { checkQueueList } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { type DependencyQueues, dependencyResultsOf } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import { type FlowControl, hasFlowLimit, leaseUngrouped } from '../flow-control/index.ts';
import { leasedJobFromRow } from '../jobs/index.ts';
import { shuttingDown } from '../lifecycle.ts';
import type { LeasedJob, ReserveRequest } from '../types.ts';
import { leasedJobBytes } from './answer-size.ts';
import { Expiry } from './expiry.ts';
import type { Waiter, WaiterRegistry, WaitOutcome } from './waiters.ts';

/** One try of a reserve: what it asks, and the waiter it registered when it found nothing. */
interface Attempt {
  readonly request: ValidReserve;
  readonly remainingMs: number;
  readonly signal: AbortSignal | undefined;
  waiter?: Waiter;
  wait?: Promise<WaitOutcome>;
}

interface ValidReserve {
  queues: string[];
  maxJobs: number;
  leaseMs: number | undefined;
  waitMs: number;
  workerId: string | null;
  answerBytesMax: number | undefined;
  answerBytesOf: (job: LeasedJob) => number;
  owner: string | undefined;
  queueAllowed: ((queue: string) => boolean) | undefined;
}

/**
 * Thrown inside a reserve's unit when the jobs it leased do not fit the caller's answer:
 * the unit rolls back whole (no attempt counted, no token spent), and the reserve tries
 * again for the `fits` jobs that did, or, when not even the first fits, says so.
 */
class AnswerFull extends SeppError {
  constructor(
    readonly fits: number,
    readonly jobId: string,
    readonly jobBytes: number,
    readonly answerBytesMax: number,
  ) {
    super(
      'resource_exhausted',
      `job ${jobId} takes about ${jobBytes} bytes, more than this reserve's answer may hold ` +
        `(${answerBytesMax} bytes: its max_response_bytes, at most the server's message limit); ` +
        'it stays ready with no attempt counted: reserve it with a larger max_response_bytes ' +
        'from a client that accepts messages that large',
      { requestTooLarge: true },
    );
  }
}

/**
 * The long-poll places (Reserve, the HTTP reserve, a Work stream's wait for jobs) kept for API
 * keys that hold fewer than this many: the last quarter of limits.max_waiters (2,500 of
 * 10,000), so one key cannot take every place, while a server used by one key still has three
 * quarters. Derived rather than a setting of its own: GetServerInfo reports max_waiters.
 */
export function waitersKeptForOthers(maxWaiters: number): number {
  return Math.floor(maxWaiters / 4);
}

/** Whether reserves may still wait (the engine's lifecycle): not once draining, closed or shut out. */
export interface ReserveGate {
  readonly isClosed: boolean;
  readonly stopsWaiting: boolean;
  /** Why every call is refused from now on (lifecycle.ts shutOut): a reserve ends with it. */
  readonly shutOutBy: SeppError | undefined;
}

export class Reserver {
  /** Long-polls waiting per API key: one key may hold all but `waitersKeptForOthers(limits.max_waiters)`. */
  private readonly waitingByOwner = new Map<string, number>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly gate: ReserveGate,
    private readonly flow: FlowControl,
    private readonly waiters: WaiterRegistry,
    private readonly expiry: Expiry,
    /** The queues whose leased jobs may have results of dependencies to get. */
    private readonly dependencyQueues: DependencyQueues,
    /** The lease token of a batch member's attempt (batches/lease-tokens.ts). */
    private readonly leaseTokenOf: (jobId: string, attempt: number) => string,
  ) {}

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  async reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    if (this.gate.isClosed) throw shuttingDown();
    let valid = this.validate(request);
    const deadlineMs = this.ctx.clock.nowMs() + valid.waitMs;
    for (;;) {
      if (signal?.aborted || this.gate.stopsWaiting) return [];
      const attempt: Attempt = {
        request: valid,
        remainingMs: deadlineMs - this.ctx.clock.nowMs(),
        signal,
      };
      let jobs: LeasedJob[];
      try {
        jobs = await this.ctx.write((tx) => this.leaseOrWait(tx, attempt));
      } catch (error) {
        if (attempt.waiter !== undefined) {
          this.waiters.remove(attempt.waiter);
          // Frees its timer and its key's count; nobody awaits its outcome.
          attempt.waiter.settle('aborted');
        }
        // Rolled back whole: lease again only the jobs that fit (the next ones may be others).
        if (error instanceof AnswerFull && error.fits > 0) {
          valid = { ...valid, maxJobs: error.fits };
          continue;
        }
        throw error;
      }
      // A new call of a server shut out gets its store's refusal; one whose store still wrote gets this.
      if (jobs.length === 0 && this.gate.shutOutBy !== undefined) throw this.gate.shutOutBy;
      if (jobs.length > 0 || attempt.wait === undefined) return jobs;
      const outcome = await attempt.wait;
      if (typeof outcome === 'object') return outcome.jobs; // leased in the commit that made them ready
      // Shut out while it waited: the client hears why at once, not when its wait would have ended.
      if (this.gate.shutOutBy !== undefined) throw this.gate.shutOutBy;
      if (outcome !== 'woken') return [];
      if (signal?.aborted) {
        // This call was chosen to take new jobs but is gone: let someone else have them.
        for (const queue of valid.queues) this.waiters.notify(queue, valid.maxJobs);
        return [];
      }
    }
  }

  /** One try of a reserve, in its write unit: lease what it may, or register the waiter. */
  private *leaseOrWait(tx: StoreTx, attempt: Attempt): Op<LeasedJob[]> {
    const { request, remainingMs, signal } = attempt;
    if (signal?.aborted) return [];
    const throttled: string[] = [];
    // A store several servers share serialises limited queues' leases with locks: all at once, in a fixed order.
    if (tx.flow.lockLimits !== undefined) yield* this.lockLimits(tx, request.queues);
    const leased = yield* this.lease(tx, request, throttled);
    if (
      leased.length === 0 &&
      remainingMs > 0 &&
      !this.gate.stopsWaiting &&
      this.gate.shutOutBy === undefined
    ) {
      if (this.waiters.size >= this.ctx.limits.maxWaiters) {
        throw new SeppError(
          'resource_exhausted',
          `too many long-polls are waiting (${this.ctx.limits.maxWaiters}, limits.max_waiters); retry with backoff`,
        );
      }
      const { owner } = request;
      const held = owner === undefined ? 0 : (this.waitingByOwner.get(owner) ?? 0);
      const kept = waitersKeptForOthers(this.ctx.limits.maxWaiters);
      if (owner !== undefined && held >= kept && this.waiters.size >= this.ctx.limits.maxWaiters - kept) {
        throw new SeppError(
          'resource_exhausted',
          `key ${owner} has ${held} long-polls waiting, and the last ${kept} places of limits.max_waiters ` +
            `(${this.ctx.limits.maxWaiters}, a quarter) are kept for keys with fewer; retry with backoff, ` +
            'or give this client a key of its own',
        );
      }
      const registered = this.register(request, remainingMs, signal, throttled);
      attempt.waiter = registered.waiter;
      attempt.wait = registered.wait;
    }
    return leased;
  }

  private validate(request: ReserveRequest): ValidReserve {
    const { limits } = this.ctx;
    if (!Array.isArray(request.queues) || request.queues.length === 0) {
      throw new SeppError('invalid_argument', 'queues: name at least one queue');
    }
    checkQueueList(request.queues, limits);
    const maxJobs = request.maxJobs === undefined || request.maxJobs === 0 ? 1 : request.maxJobs;
    if (!Number.isInteger(maxJobs) || maxJobs < 1 || maxJobs > limits.maxReserveJobs) {
      throw new SeppError(
        'invalid_argument',
        `max_jobs is ${maxJobs}; it must be from 1 to ${limits.maxReserveJobs} (limits.max_reserve_jobs)`,
      );
    }
    const leaseMs = request.leaseMs === undefined || request.leaseMs === 0 ? undefined : request.leaseMs;
    if (leaseMs !== undefined && (!Number.isSafeInteger(leaseMs) || leaseMs < 0)) {
      throw new SeppError(
        'invalid_argument',
        `lease_duration_ms is ${leaseMs}; it must be a positive integer`,
      );
    }
    const waitMs = request.waitMs ?? 0;
    if (!Number.isSafeInteger(waitMs) || waitMs < 0) {
      throw new SeppError(
        'invalid_argument',
        `wait_timeout_ms is ${waitMs}; it must be a non-negative integer`,
      );
    }
    const workerId = request.workerId === undefined || request.workerId === '' ? null : request.workerId;
    if (workerId !== null && Buffer.byteLength(workerId) > limits.maxWorkerIdBytes) {
      throw new SeppError('invalid_argument', `worker_id is longer than ${limits.maxWorkerIdBytes} bytes`);
    }
    const { answerBytesMax } = request;
    if (answerBytesMax !== undefined && (!Number.isSafeInteger(answerBytesMax) || answerBytesMax < 1)) {
      throw new SeppError(
        'invalid_argument',
        `max_response_bytes is ${answerBytesMax}; it must be a positive integer`,
      );
    }
    return {
      queues: [...new Set(request.queues)],
      maxJobs,
      leaseMs,
      waitMs: Math.min(waitMs, limits.maxWaitMs),
      workerId,
      answerBytesMax,
      answerBytesOf: request.answerBytesOf ?? ((job) => leasedJobBytes(job, job.id.length)),
      owner: request.owner,
      queueAllowed: request.queueAllowed,
    };
  }

  /** Takes the store's locks of the limited queues among `queues` (Flow.lockLimits), before any lease. */
  private *lockLimits(tx: StoreTx, queues: readonly string[]): Op<void> {
    const registry = this.ctx.queues;
    const limited = queues.filter(
      (queue) => registry.exists(queue) && !this.flow.isPlain(queue, registry.settingsFor(queue)),
    );
    if (limited.length > 0) yield* tx.flow.lockLimits!(limited);
  }

  /** Leases what the request may have now; `throttled` collects the queues whose limits held ready jobs back. */
  private *lease(tx: StoreTx, request: ValidReserve, throttled: string[]): Op<LeasedJob[]> {
    const { queues, clock } = this.ctx;
    const { flow } = this;
    const nowMs = clock.nowMs();
    const jobs: LeasedJob[] = [];
    let answerBytes = 0;
    for (const queue of request.queues) {
      const remaining = request.maxJobs - jobs.length;
      if (remaining === 0) break;
      if (!queues.exists(queue) || queues.isPaused(queue)) continue;
      // Read per lease, not cached: a changed setting applies to the next lease.
      const settings = queues.settingsFor(queue);
      const flowLimited = hasFlowLimit(settings);
      const leaseMs = Math.min(request.leaseMs ?? settings.defaultLeaseMs, settings.maxLeaseMs);
      const leaseDeadlineMs = nowMs + leaseMs;
      const params: LeaseParams = {
        nowMs,
        leaseDeadlineMs,
        maxLeaseDeadlineMs: nowMs + settings.maxLeaseMs,
        workerId: request.workerId,
        timeoutMs: settings.defaultTimeoutMs === 0 ? null : settings.defaultTimeoutMs,
      };
      let wanted = remaining;
      let leased = 0;
      let totalWaitMs = 0;
      let maxWaitMs = 0;
      // The earliest deadline leased: a hard timeout caps a lease below the one asked for.
      let earliestDeadlineMs = leaseDeadlineMs;
      for (;;) {
        let rows: LeasedRow[];
        if (flow.isPlain(queue, settings)) {
          rows = yield* leaseUngrouped(tx, queue, wanted, params, settings.priorityAgingMs);
        } else {
          const limited = yield* flow.lease(tx, queue, settings, wanted, params);
          rows = limited.rows;
          if (limited.throttled && !throttled.includes(queue)) throttled.push(queue);
        }
        if (rows.length === 0) break;
        yield* this.ctx.count(tx, queue, 'ready', 'leased', rows.length);
        // Jobs whose expiry passed since maintenance last ran are not handed out (expiry.ts);
        // their lease ends at once, which gives their max_leased and group slots back.
        const live = Expiry.hasExpired(rows, nowMs) ? yield* this.expiry.dropExpired(tx, rows, nowMs) : rows;
        // What the dependencies of each ended with, read for all of them at once.
        const results = this.dependencyQueues.has(queue)
          ? yield* dependencyResultsOf(tx, live, this.ctx.limits, request.queueAllowed)
          : undefined;
        for (const row of live) {
          if (row.lease_deadline_ms! < earliestDeadlineMs) earliestDeadlineMs = row.lease_deadline_ms!;
          const job = leasedJobFromRow(row, flowLimited);
          if (job.batchId !== null) job.leaseToken = this.leaseTokenOf(job.id, job.attempt);
          const passed = results?.get(row.seq);
          if (passed !== undefined) job.dependencyResults = passed;
          if (request.answerBytesMax !== undefined) {
            const jobBytes = request.answerBytesOf(job);
            answerBytes += jobBytes;
            if (answerBytes > request.answerBytesMax) {
              throw new AnswerFull(jobs.length, job.id, jobBytes, request.answerBytesMax);
            }
          }
          jobs.push(job);
          const waitedMs = Math.max(0, nowMs - row.run_at_ms);
          totalWaitMs += waitedMs;
          if (waitedMs > maxWaitMs) maxWaitMs = waitedMs;
        }
        leased += live.length;
        wanted -= live.length;
        // Expired rows leave a gap: lease again for it (each pass takes expired jobs out for good).
        if (live.length === rows.length || wanted === 0) break;
      }
      if (leased === 0) continue;
      if (this.ctx.events.recording) {
        for (const job of jobs.slice(jobs.length - leased)) {
          this.ctx.record(tx, {
            kind: 'leased',
            sequence: 0,
            atMs: nowMs,
            jobId: job.id,
            queue,
            type: job.type,
            attempt: job.attempt,
            leaseDeadlineMs,
            workerId: request.workerId,
          });
        }
      }
      // Jobs with their own lease_ms end at this deadline or later; with a timeout, maybe earlier.
      this.ctx.wakeAt(tx, earliestDeadlineMs);
      this.ctx.emit(tx, { kind: 'reserved', queue, count: leased, totalWaitMs, maxWaitMs });
    }
    return jobs;
  }

  private register(
    request: ValidReserve,
    waitMs: number,
    signal: AbortSignal | undefined,
    throttled: readonly string[],
  ): { waiter: Waiter; wait: Promise<WaitOutcome> } {
    const { clock } = this.ctx;
    const { waiters } = this;
    let settle!: (outcome: WaitOutcome) => void;
    const wait = new Promise<WaitOutcome>((resolve) => {
      settle = resolve;
    });
    let done = false;
    const { owner } = request;
    if (owner !== undefined) this.waitingByOwner.set(owner, (this.waitingByOwner.get(owner) ?? 0) + 1);
    const finish = (outcome: WaitOutcome) => {
      if (done) return;
      done = true;
      if (owner !== undefined) {
        const left = (this.waitingByOwner.get(owner) ?? 1) - 1;
        if (left > 0) this.waitingByOwner.set(owner, left);
        else this.waitingByOwner.delete(owner);
      }
      timer.cancel();
      signal?.removeEventListener('abort', onAbort);
      settle(outcome);
    };
    const waiter: Waiter = {
      queues: request.queues,
      maxJobs: request.maxJobs,
      // As the reserve's own operation: a call that is gone takes nothing, and the queues'
      // limits hold (a waiter they still hold back takes nothing and is woken to wait again).
      take: (tx) => (signal?.aborted ? just([]) : this.lease(tx, request, [])),
      settle: finish,
      ...(throttled.length > 0 ? { throttled } : {}),
    };
    const onAbort = () => {
      waiters.remove(waiter);
      finish('aborted');
    };
    const timer = clock.setTimer(waitMs, () => {
      waiters.remove(waiter);
      finish('timeout');
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    waiters.add(waiter);
    return { waiter, wait };
  }
}
