/**
 * Ack, nack and extend: the settlements of a lease, all fenced by the attempt
 * the lease was given. A stale attempt means another delivery has begun since
 * (lease lost); a job that is no longer leased cannot be settled. A lease
 * whose job has a cancel request (cancel.ts) ends the job `cancelled` on ack
 * or nack (an ack is answered `job_cancelled`: the job did not complete), and
 * an extend is refused with `job_cancelled`.
 */

import { dependedOn } from '../../store/dependencies.ts';
import type { AttemptKey } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { AckedRow, AttemptRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { deadOutcome, type FinishedOutcome } from '../finished-outcomes.ts';
import { appendError, errorEntry, maxErrorClassChars } from '../jobs/index.ts';
import type {
  Ack,
  DeadReason,
  ErrorDetail,
  ExtendRequest,
  JobState,
  NackDirective,
  NackRequest,
  NackResult,
  SettleOutcome,
} from '../types.ts';
import { backoffDelayMs } from './backoff.ts';
import { cancelledMessage, finishCancelled } from './cancelled-lease.ts';
import { checkAckResult, resultContentTypeOf } from './results.ts';
import { endedByTimeout, pastTimeout, TimeoutNotices, timedOutMessage } from './timed-out-lease.ts';
import { type TokensBack, undoLeasesIn } from './undone-lease.ts';

/** The jobs of an ack batch kept completed for their dependents: how many per queue, and their rows. */
export interface KeptJobs {
  perQueue: Map<string, number>;
  rows: AckedRow[];
  /**
   * Where `keptCompleted` leaves the jobs whose end (the release of what waits on them, their
   * batch's count) the caller runs for many at once (releaseDependentsOfCompleted); absent, it
   * runs each job's end itself.
   */
  ended?: { id: string; flags: number }[];
}

/** The largest attempt number, and budget (attempt_base + max_attempts), a job may reach: int32 in the proto and PostgreSQL. */
const maxAttemptNumber = 2 ** 31 - 1;

export class Settler {
  /** Who hears of attempts ended by their hard timeout (maintenance ends them). */
  readonly timeouts = new TimeoutNotices();

  constructor(
    private readonly ctx: EngineContext,
    /** Flow control, for the rate-limit tokens of undone leases. */
    private readonly flow: TokensBack,
  ) {}

  /** Completes a leased job, keeping `result` if its queue retains completed jobs (job_cancelled if cancelled). */
  async ack(ack: Ack): Promise<void> {
    checkAckResult(ack, this.ctx.limits);
    const outcome = await this.ctx.write((tx) => this.ackIn(tx, ack));
    if (!outcome.ok) throw new SeppError(outcome.code, outcome.message);
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.ctx.write((tx) => this.nackIn(tx, request));
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.ctx.write((tx) => this.extendIn(tx, request));
  }

  /**
   * Undoes leases whose jobs never reached a worker (undone-lease.ts): ready again, the
   * attempt given back, no failure counted. Resolves with how many went back to ready.
   */
  undoLeases(keys: readonly AttemptKey[]): Promise<number> {
    // One key per job (the last named): the store takes distinct ids.
    const distinct = [...new Map(keys.map((key) => [key.jobId, key])).values()];
    if (distinct.length === 0) return Promise.resolve(0);
    return this.ctx.write((tx) => undoLeasesIn(this.ctx, this.flow, tx, distinct, 'unsent'));
  }

  /**
   * Throws when the ack changed nothing; returns the `job_cancelled` outcome,
   * whose change (the job is now cancelled) must commit before it is answered.
   */
  private *ackIn(tx: StoreTx, ack: Ack): Op<SettleOutcome> {
    const outcome = yield* this.tryAck(tx, ack);
    if (!outcome.ok && outcome.code !== 'job_cancelled') throw new SeppError(outcome.code, outcome.message);
    return outcome;
  }

  /**
   * Acks one job; the caller has checked its result (checkAckResult). `deleteMissed`: the
   * caller's one-statement delete (AckBatches' ackMany) already passed this job over, so
   * the same delete is not tried again (a workflow job in a batch: it saves a statement).
   * `kept`: where the caller gathers the jobs of its batch kept completed for their
   * dependents, to count them, say so and end their attempts once per batch (undefined:
   * done here for this one). `completeMissed`: the caller's one-statement completion of the
   * jobs others wait on (`completeDependedOnMany`) passed this job over too, so the row is read.
   */
  *tryAck(
    tx: StoreTx,
    ack: Ack,
    deleteMissed = false,
    kept?: KeptJobs,
    completeMissed = false,
  ): Op<SettleOutcome> {
    const { queues, clock } = this.ctx;
    const { jobId, attempt } = ack;
    if (!queues.anyKeepsCompleted) {
      if (!deleteMissed) {
        // The common case in one statement; only a refused ack reads the row to say why.
        const deleted = yield* tx.leases.ack(ack);
        if (deleted !== undefined) {
          yield* this.ctx.count(tx, deleted.queue, 'leased', null, 1);
          this.ctx.emit(tx, { kind: 'acked', queue: deleted.queue, count: 1 });
          this.ctx.attemptsEnded(tx, [deleted], 'completed');
          if (this.ctx.events.recording) this.recordCompleted(tx, ack, deleted, false);
          if (this.ctx.outcomes.enabled)
            this.ctx.keepOutcome(tx, completedOutcome(ack, deleted, clock.nowMs()));
          return { ok: true };
        }
      }
      // Not deleted: most often a job others wait on, kept completed in one statement.
      if (!completeMissed && tx.leases.completeDependedOn !== undefined) {
        const row = yield* tx.leases.completeDependedOn({
          jobId,
          attempt,
          nowMs: clock.nowMs(),
          result: ack.result ?? null,
          resultContentType: resultContentTypeOf(ack),
        });
        if (row !== undefined) return yield* this.keptCompleted(tx, ack, row, kept);
      }
    }
    const row = yield* tx.jobs.attempt(jobId);
    const problem = settleProblem(row, jobId, attempt);
    if (problem) return problem;
    if (row!.cancelled_at_ms !== null) {
      // Asked to stop: the attempt ends cancelled, and a result it carried is not kept.
      yield* finishCancelled(this.ctx, tx, row!, null);
      return { ok: false, code: 'job_cancelled', message: cancelledMessage(row!) };
    }
    // A job others depend on is kept: they read its result (docs/decisions/0101-workflows-design.md).
    const retained =
      queues.settingsFor(row!.queue).completedRetentionMs > 0 || dependedOn(row!.dependency_flags);
    if (retained) {
      yield* tx.leases.complete({
        jobId,
        attempt,
        nowMs: clock.nowMs(),
        result: ack.result ?? null,
        resultContentType: resultContentTypeOf(ack),
      });
      yield* this.ctx.count(tx, row!.queue, 'leased', 'completed', 1);
    } else if (row!.dependency_flags !== 0) {
      // A job in a workflow (the one-statement ack leaves it alone): its edges go with it.
      yield* tx.jobs.delete(row!.seq);
      yield* this.ctx.jobDeleted(tx, {
        seq: row!.seq,
        id: jobId,
        flags: row!.dependency_flags,
        state: 'completed',
      });
      yield* this.ctx.count(tx, row!.queue, 'leased', null, 1);
      if (this.ctx.outcomes.enabled) this.ctx.keepOutcome(tx, completedOutcome(ack, row!, clock.nowMs()));
    } else {
      yield* tx.leases.ack(ack);
      yield* this.ctx.count(tx, row!.queue, 'leased', null, 1);
      if (this.ctx.outcomes.enabled) this.ctx.keepOutcome(tx, completedOutcome(ack, row!, clock.nowMs()));
    }
    this.ctx.emit(tx, { kind: 'acked', queue: row!.queue, count: 1 });
    this.ctx.attemptsEnded(tx, [row!], 'completed');
    if (this.ctx.events.recording) this.recordCompleted(tx, ack, row!, retained);
    if (row!.dependency_flags !== 0) {
      yield* this.ctx.jobEnded(tx, { id: jobId, flags: row!.dependency_flags }, 'completed');
    }
    return { ok: true };
  }

  /**
   * The rest of the ack of a job others wait on, once it is completed (`row`, returned by
   * the statement that completed it): counted, said and its attempt ended (here, or once
   * per batch through `kept`), recorded, and what waits on it released (here, or by the
   * caller for the jobs it gathers in `kept.ended`).
   */
  *keptCompleted(
    tx: StoreTx,
    ack: Ack,
    row: AckedRow & { dependency_flags: number },
    kept: KeptJobs | undefined,
  ): Op<SettleOutcome> {
    if (kept === undefined) {
      yield* this.ctx.count(tx, row.queue, 'leased', 'completed', 1);
      this.ctx.emit(tx, { kind: 'acked', queue: row.queue, count: 1 });
      this.ctx.attemptsEnded(tx, [row], 'completed');
    } else {
      kept.perQueue.set(row.queue, (kept.perQueue.get(row.queue) ?? 0) + 1);
      kept.rows.push(row);
    }
    if (this.ctx.events.recording) this.recordCompleted(tx, ack, row, true);
    const ended = { id: ack.jobId, flags: row.dependency_flags };
    if (kept?.ended === undefined) yield* this.ctx.jobEnded(tx, ended, 'completed');
    else kept.ended.push(ended);
    return { ok: true };
  }

  recordCompleted(tx: StoreTx, ack: Ack, job: { queue: string; type: string }, retained: boolean) {
    this.ctx.record(tx, {
      kind: 'completed',
      sequence: 0,
      atMs: this.ctx.clock.nowMs(),
      jobId: ack.jobId,
      queue: job.queue,
      type: job.type,
      attempt: ack.attempt,
      // A copy: the request's bytes may be a view of a whole received message.
      result: ack.result === undefined ? null : new Uint8Array(ack.result),
      resultContentType: resultContentTypeOf(ack),
      retained,
    });
  }

  private *nackIn(tx: StoreTx, request: NackRequest): Op<NackResult> {
    const row = yield* tx.jobs.attempt(request.jobId);
    const problem = settleProblem(row, request.jobId, request.attempt);
    if (problem) throw new SeppError(problem.code, problem.message);
    const directive = request.directive ?? { kind: 'backoff' };
    if (directive.kind === 'give_back') return yield* this.giveBackIn(tx, row!);
    checkDirective(directive, this.ctx.limits.maxScheduleAheadMs);
    const error = truncate(request.error, this.ctx.limits.maxErrorBytes);
    const detail = errorDetail(request, this.ctx.limits.maxErrorBytes);
    if (row!.cancelled_at_ms !== null) {
      yield* finishCancelled(this.ctx, tx, row!, error, detail);
      return { state: 'cancelled', runAtMs: null };
    }
    this.ctx.emit(tx, { kind: 'nacked', queue: row!.queue, count: 1 });
    return yield* this.failAttempt(tx, row!, error, directive, undefined, detail);
  }

  /**
   * A lease its worker never started, given back (a nack's `give_back`): undone
   * (undone-lease.ts), the error ignored, but unlike a lease whose answer was never sent the
   * attempt stays, since this worker holds it: the next lease is attempt + 1, so a late
   * settlement of this one is refused as stale, and the job's budget grows by one so that no
   * attempt is counted. A job asked to stop ends cancelled, as any nack ends it. `row` is
   * leased under the request's attempt. Bounded: a budget that would pass the largest attempt
   * number the wire and the stores hold (int32) is refused, so a worker that gives the same job
   * back forever cannot make its attempt, or the budget a lease tells, overflow.
   */
  private *giveBackIn(tx: StoreTx, row: AttemptRow): Op<NackResult> {
    if (row.cancelled_at_ms !== null) {
      yield* finishCancelled(this.ctx, tx, row, null);
      return { state: 'cancelled', runAtMs: null };
    }
    if (row.attempt_base + 1 + row.max_attempts > maxAttemptNumber) {
      throw new SeppError(
        'failed_precondition',
        `give_back: job ${row.id} has been leased ${row.attempt} times, its budget cannot grow further; ack or nack (retry) it instead`,
      );
    }
    const undone = yield* undoLeasesIn(
      this.ctx,
      this.flow,
      tx,
      [{ jobId: row.id, attempt: row.attempt }],
      'given_back',
    );
    if (undone !== 1)
      throw new Error(`bug: give-back of ${row.id} attempt ${row.attempt} undid ${undone} leases`);
    return { state: 'ready', runAtMs: this.ctx.clock.nowMs() };
  }

  private *extendIn(
    tx: StoreTx,
    { jobId, attempt, leaseMs }: ExtendRequest,
  ): Op<{ leaseDeadlineMs: number }> {
    const { queues, clock } = this.ctx;
    if (!Number.isSafeInteger(leaseMs) || leaseMs < 0) {
      throw new SeppError(
        'invalid_argument',
        `lease_duration_ms is ${leaseMs}; give a positive integer of ms, or 0 for the queue's default_lease_ms`,
      );
    }
    const row = yield* tx.jobs.attempt(jobId);
    const problem = settleProblem(row, jobId, attempt);
    if (problem) {
      // An attempt the server ended by its timeout is told so, not merely that its lease is gone.
      if (row !== undefined && endedByTimeout(row.errors_json, attempt)) {
        throw new SeppError('job_timed_out', timedOutMessage(jobId, attempt, null));
      }
      throw new SeppError(problem.code, problem.message);
    }
    if (row!.cancelled_at_ms !== null) throw new SeppError('job_cancelled', cancelledMessage(row!));
    const nowMs = clock.nowMs();
    // Past its hard timeout the attempt is over: maintenance ends it (its deadline is due now).
    if (pastTimeout(row!, nowMs)) {
      throw new SeppError('job_timed_out', timedOutMessage(jobId, attempt, row!.timeout_at_ms));
    }
    const settings = queues.settingsFor(row!.queue);
    // 0 (unset on the wire) means the queue's default lease, as it does for Reserve.
    const lengthMs = leaseMs === 0 ? settings.defaultLeaseMs : leaseMs;
    // Never past the attempt's hard timeout: the lease-expiry sweep ends it there.
    const leaseDeadlineMs = Math.min(
      nowMs + Math.min(lengthMs, settings.maxLeaseMs),
      row!.timeout_at_ms ?? Number.POSITIVE_INFINITY,
    );
    yield* tx.leases.extend({ jobId, attempt, leaseDeadlineMs });
    this.ctx.wroteTo(tx, row!.queue);
    this.ctx.wakeAt(tx, leaseDeadlineMs);
    return { leaseDeadlineMs };
  }

  /**
   * Ends a failed attempt (nack or lease expiry): dead-letter when asked or when
   * the budget is spent, otherwise back to ready or scheduled per the directive.
   */
  *failAttempt(
    tx: StoreTx,
    row: AttemptRow,
    error: string,
    directive: NackDirective,
    reason?: DeadReason,
    detail: ErrorDetail | null = null,
  ): Op<NackResult> {
    const { clock, queues, limits } = this.ctx;
    const nowMs = clock.nowMs();
    const errorsJson = appendError(
      row.errors_json,
      errorEntry(row.attempt, nowMs, error, detail),
      limits.maxErrorHistory,
    );
    const lastErrorClass = detail?.errorClass ?? null;
    const attemptsUsed = row.attempt - row.attempt_base;
    const exhausted = attemptsUsed >= row.max_attempts;
    this.ctx.attemptsEnded(tx, [row], 'failed');
    const { recording } = this.ctx.events;
    const about = {
      sequence: 0,
      atMs: nowMs,
      jobId: row.id,
      queue: row.queue,
      type: row.type,
      attempt: row.attempt,
    };
    if (directive.kind === 'dead_letter' || exhausted) {
      const deadReason: DeadReason =
        directive.kind === 'dead_letter' ? 'dead_lettered' : (reason ?? 'attempts_exhausted');
      this.ctx.emit(tx, { kind: 'dead_lettered', queue: row.queue, reason: deadReason, count: 1 });
      this.ctx.attemptsEnded(tx, [row], 'dead');
      if (recording) this.ctx.record(tx, { ...about, kind: 'dead_lettered', reason: deadReason, error });
      yield* tx.leases.fail({
        seq: row.seq,
        deadReason,
        nowMs,
        lastError: error,
        lastErrorClass,
        errorsJson,
      });
      yield* this.ctx.count(tx, row.queue, row.state as JobState, 'dead', 1);
      if (this.ctx.outcomes.enabled && queues.settingsFor(row.queue).deadRetentionMs === 0) {
        // Swept at the next pass: its outcome outlives the row.
        this.ctx.keepOutcome(tx, deadOutcome(row, row.attempt, nowMs, error, deadReason));
      }
      if (row.dependency_flags !== 0) {
        yield* this.ctx.jobEnded(tx, { id: row.id, flags: row.dependency_flags }, 'dead');
      }
      return { state: 'dead', runAtMs: null };
    }
    const delayMs =
      directive.kind === 'delay'
        ? directive.delayMs
        : backoffDelayMs(queues.settingsFor(row.queue).backoff, attemptsUsed, this.ctx.random);
    const runAtMs = nowMs + delayMs;
    const state = delayMs > 0 ? 'scheduled' : 'ready';
    yield* tx.leases.retry({ seq: row.seq, state, runAtMs, lastError: error, lastErrorClass, errorsJson });
    yield* this.ctx.count(tx, row.queue, row.state as JobState, state, 1);
    if (state === 'ready') this.ctx.jobsReady(tx, row.queue, 1);
    else this.ctx.wakeAt(tx, runAtMs);
    if (recording) this.ctx.record(tx, { ...about, kind: 'retry_scheduled', state, runAtMs, error });
    return { state, runAtMs };
  }
}

/** The outcome kept of a job deleted on its ack (limits.finishedOutcomeMs). */
export function completedOutcome(
  ack: Ack,
  job: { queue: string; type: string; leased_at_ms: number | null },
  nowMs: number,
): FinishedOutcome {
  const { result } = ack;
  return {
    id: ack.jobId,
    queue: job.queue,
    type: job.type,
    state: 'completed',
    attempt: ack.attempt,
    endedAtMs: nowMs,
    // A copy: the request's bytes may be a view of a whole received message.
    result: result === undefined ? null : new Uint8Array(result),
    resultContentType: resultContentTypeOf(ack),
    lastError: null,
    deadReason: null,
    cancelledBy: null,
    startedAtMs: job.leased_at_ms,
  };
}

/** Why a settlement of `attempt` cannot apply to the job as stored; null when it can. */
export function settleProblem(
  row: AttemptRow | undefined,
  jobId: string,
  attempt: number,
): (SettleOutcome & { ok: false }) | null {
  if (row === undefined) {
    return {
      ok: false,
      code: 'not_found',
      message: `job ${jobId} does not exist (it was acked, cancelled or swept)`,
    };
  }
  // Not leased at all is NOT_FOUND whatever the attempt (work.proto's SettleOutcome): only a
  // job leased under another attempt is a lost lease.
  if (row.state !== 'leased') {
    return {
      ok: false,
      code: 'not_found',
      message:
        row.attempt === attempt
          ? `job ${jobId} is not leased (it is ${row.state}): the lease of attempt ${attempt} ended`
          : `job ${jobId} is not leased (it is ${row.state}, on attempt ${row.attempt}): attempt ${attempt} holds no lease`,
    };
  }
  if (row.attempt !== attempt) {
    return {
      ok: false,
      code: 'lease_lost',
      message: `job ${jobId} attempt ${attempt} no longer holds the lease: the job is on attempt ${row.attempt}`,
    };
  }
  return null;
}

function checkDirective(directive: NackDirective, maxScheduleAheadMs: number): void {
  if (directive.kind !== 'delay') return;
  const { delayMs } = directive;
  if (!Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > maxScheduleAheadMs) {
    throw new SeppError(
      'invalid_argument',
      `retry_delay_ms is ${delayMs}; it must be from 0 to ${maxScheduleAheadMs} (limits.max_schedule_ahead_ms)`,
    );
  }
}

/**
 * The class and stack a nack gave, checked at the boundary: a class is at most 256
 * characters with no control characters (INVALID_ARGUMENT otherwise: it is a name, shown
 * and grouped on as it is); a stack is cut to `max_error_bytes` like the message.
 * Empty means not given.
 */
export function errorDetail(request: NackRequest, maxBytes: number): ErrorDetail | null {
  const errorClass =
    request.errorClass === undefined || request.errorClass === '' ? null : request.errorClass;
  const stack =
    request.stack === undefined || request.stack === '' ? null : truncate(request.stack, maxBytes);
  if (errorClass !== null) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
    if (errorClass.length > maxErrorClassChars || /[\u0000-\u001f\u007f]/.test(errorClass)) {
      throw new SeppError(
        'invalid_argument',
        `error_class must be at most ${maxErrorClassChars} characters without control characters (it is ${errorClass.length})`,
      );
    }
  }
  return errorClass === null && stack === null ? null : { errorClass, stack };
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, on a character boundary, marking the cut. */
export function truncate(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const marker = '… [truncated]';
  const budget = maxBytes - Buffer.byteLength(marker);
  let cut = Buffer.from(text).subarray(0, Math.max(0, budget)).toString();
  // A cut inside a multi-byte character decodes to U+FFFD: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + marker;
}
