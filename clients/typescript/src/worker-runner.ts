/**
 * A Worker's jobs, from delivery to settlement (the Python SDK's JobRunner, _runner.py).
 * The Worker (worker.ts) owns its states, its lanes and what it says about the server; this
 * owns every job it was handed and the slots they take.
 *
 * A job's life here: delivered (takes a slot) → its handler runs with an
 * AbortSignal while the lease keeper extends its lease every third of the
 * lease → ack on success, nack on throw (RetryAfter / DeadLetter choose the
 * directive) → the slot frees. A lease found lost (an extend or settlement
 * says so) aborts the signal, and the job is never settled by this worker.
 * A job cancelled while it runs (the Work stream says so at once; an extend
 * or ack answers `job_cancelled` otherwise) aborts the signal with a
 * JobCancelledError; when the handler returns, however it ends, the job is
 * nacked, which the server turns into `cancelled` — never an ack or a retry.
 * An attempt past its hard timeout (the Work stream says so once the server
 * ended it; an extend answers `job_timed_out` otherwise) aborts the signal with
 * a JobTimeoutError and, as a lost lease, is never settled here: the server
 * already failed it (reason `timeout`) and its retry policy decides what follows.
 *
 * With `prefetch`, a job delivered while every slot of its lane is busy is
 * held (leased, its lease kept by the lease keeper, its handler not started)
 * until a slot frees (worker-held-jobs.ts); a held job cancelled, timed out or
 * lost is dropped without running (so is one whose lease ran out unextended:
 * see `beginHeld`), and at close held jobs are given back (see `giveBackHeld`).
 * With `prefetch: 'auto'` how many may be held follows the handlers' run time
 * (worker-auto-prefetch.ts), told each run as its settlement is queued, and drops to none
 * for good once a job says its queue has flow limits.
 */
import type { EventEmitter } from 'node:events';
import { status } from '@grpc/grpc-js';
import { JobCancelledError, JobTimeoutError, LeaseLostError, type SeppError, toSeppError } from './errors.ts';
import type { JobResult as ProtoJobResult, LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import { LeaseKeeper } from './lease-keeper.ts';
import { ProgressReporter } from './progress-reporter.ts';
import { encodeResult, isJsonContentType } from './results.ts';
import { memberRuns } from './running-members.ts';
import { endJobSpan, runInContext, startJobSpan } from './trace.ts';
import type { ProgressFields } from './work-transport.ts';
import { type Active, callHandler, type Lane, normalise, settledWithin } from './worker-active.ts';
import { AutoPrefetch } from './worker-auto-prefetch.ts';
import { HeldJobs } from './worker-held-jobs.ts';
import { abortWorkerJob, DeadLetter, reportProgressTo, WorkerJob } from './worker-job.ts';
import type { ResolvedWorkerOptions, WorkerEvents } from './worker-options.ts';
import { Settler } from './worker-settler.ts';

/** What a JobRunner needs from its Worker besides the Worker's options and events. */
export interface JobRunnerHost {
  /** The connection's target: a batch member's lease token goes only there (running-members.ts). */
  readonly target: string;
  /** The server's `limits.max_reserve_jobs` as the connection learned it; 0: not known (yet). */
  serverMaxReserveJobs(): number;
  /**
   * Whether the server undoes a give-back (its `nack_give_back` feature). Without it close
   * gives held jobs back as before give-backs: with a nack that counts an attempt, and one
   * on its last attempt is kept to run instead.
   */
  canGiveBack(): boolean;
  /** True while the worker takes jobs: a freed place asks for another job only then. */
  taking(): boolean;
  /** Reports an error the worker goes on after (said once per message without 'error' listeners). */
  report(error: SeppError): void;
}

export class JobRunner {
  private readonly active = new Set<Active>();
  private readonly heldJobs: HeldJobs;
  private readonly keeper: LeaseKeeper<Active>;
  private readonly settler: Settler;
  /** With `prefetch: 'auto'`: the held-ahead limit, moved by each run's time. */
  private readonly autoPrefetch: AutoPrefetch | undefined;
  private drained: (() => void) | undefined;
  /** A job came past the jobs asked for (told once: the server, not this worker, is at fault). */
  private warnedUnasked = false;
  /** Jobs whose handlers are running. */
  busy = 0;

  constructor(
    /** The Worker, whose events tell what happens to each job. */
    private readonly events: EventEmitter<WorkerEvents>,
    private readonly options: ResolvedWorkerOptions,
    lanes: readonly Lane[],
    private readonly host: JobRunnerHost,
  ) {
    const { clock, leaseMs, workerId, logger, reconnectBaseDelayMs, reconnectMaxDelayMs } = options;
    this.settler = new Settler({
      workerId,
      clock,
      logger,
      reconnectBaseDelayMs,
      reconnectMaxDelayMs,
      report: (error) => host.report(error),
    });
    this.heldJobs = new HeldJobs(lanes, clock);
    this.autoPrefetch = options.autoPrefetch
      ? new AutoPrefetch(lanes, options.concurrency, leaseMs, () => host.serverMaxReserveJobs())
      : undefined;
    this.keeper = new LeaseKeeper<Active>(clock, Math.max(1, Math.floor(leaseMs / 3)), (a) =>
      this.extendLease(a),
    );
  }

  /** Jobs leased ahead (`prefetch`) and waiting for a slot. */
  get held(): number {
    return this.heldJobs.size;
  }

  /** Jobs `lane` holds leased ahead. */
  heldIn(lane: Lane): number {
    return this.heldJobs.sizeOf(lane);
  }

  /** With `prefetch: 'auto'`, what its lanes may hold ahead now (within their bounds); else `prefetch`. */
  get prefetchLimit(): number {
    return this.autoPrefetch?.lanesLimit ?? this.options.prefetch;
  }

  /** A job leased to `lane`; `unasked` (past the credit or max_jobs asked): given back at once, never held. */
  deliver(lane: Lane, proto: ProtoLeasedJob, unasked = false): void {
    if (proto.flowLimited && this.autoPrefetch?.flowLimited(proto.queue) === true) {
      this.options.logger.info(
        `sepp worker ${this.options.workerId}: prefetch 'auto' holds no jobs ahead from now on: ` +
          `queue ${proto.queue} has flow limits (max_leased or a rate limit)`,
      );
    }
    let data: unknown = proto.payload;
    let decodeError: DeadLetter | undefined;
    if (isJsonContentType(proto.contentType)) {
      try {
        data = JSON.parse(proto.payload.toString('utf8'));
      } catch (error) {
        // Retrying cannot make a payload valid JSON.
        decodeError = new DeadLetter(`payload is not valid JSON (${normalise(error).message})`);
      }
    }
    const job = new WorkerJob(proto, data);
    const active: Active = {
      job,
      lane,
      dueAtMs: 0,
      leaseEndsAtMs: this.options.clock.nowMs() + this.options.leaseMs,
      extending: false,
      lost: false,
      cancelled: undefined,
      stoppedForShutdown: false,
      abandoned: false,
      slotFreed: true,
      decodeError,
      progress: undefined,
      handlerDone: false,
      settling: false,
    };
    this.active.add(active);
    this.keeper.add(active);
    if (unasked) {
      if (!this.warnedUnasked) {
        this.warnedUnasked = true;
        this.options.logger.warn(
          `sepp worker ${this.options.workerId}: the server sent job ${proto.jobId} past the jobs asked for ` +
            '(credit or max_jobs); it and any more such are given back unstarted',
        );
      }
      void this.giveBack(active, 'was sent it past the jobs it asked for');
    } else if (lane.busy < lane.capacity) this.begin(active);
    else if (!this.heldJobs.hold(active, this.host.taking(), !this.host.canGiveBack()))
      void this.giveBack(active);
  }

  /** The job takes a slot of its lane and its handler starts. */
  private begin(active: Active): void {
    const { lane } = active;
    active.slotFreed = false;
    this.busy++;
    lane.busy++;
    reportProgressTo(active.job, this.progressBound, active);
    void this.run(active);
  }

  /** A job not started (taken out of the held ones at shutdown, or delivered while closing): back to the queue at once. */
  private async giveBack(active: Active, why = 'is closing'): Promise<void> {
    this.keeper.remove(active);
    await this.settler.giveBack(active, this.host.canGiveBack(), why);
    this.finishJob(active);
  }

  /**
   * A job taken out of the held ones, cancelled, timed out or lost: it never runs
   * here; its place is credit again, and its event says so as for a running job.
   */
  private dropHeld(active: Active, error: SeppError): void {
    if (this.host.taking()) active.lane.transport.release();
    this.keeper.remove(active);
    this.options.logger.warn(
      `sepp worker ${this.options.workerId}: held job ${active.job.id} dropped: ${error.message}`,
    );
    if (error instanceof JobCancelledError) {
      this.events.emit('cancelled', active.job, error);
      // The nack makes the job cancelled now rather than when its lease runs out.
      void this.settler.cancelled(active, error).then(() => this.finishJob(active));
      return;
    }
    if (error instanceof JobTimeoutError) this.events.emit('timedOut', active.job, error);
    else if (error instanceof LeaseLostError) this.events.emit('leaseLost', active.job, error);
    this.finishJob(active);
  }

  private async run(active: Active): Promise<void> {
    const { job } = active;
    const { handlers, fallback, workerId, clock } = this.options;
    const startedAtMs = clock.nowMs();
    this.events.emit('started', job);
    const traced = startJobSpan(job);
    let failure: unknown;
    let ok = false;
    let value: unknown;
    // A batch member's handler may add to its sealed batch: the add proves it with this lease's token
    // (none from a server older than lease tokens, which takes the attempt), sent only to the
    // target this worker leased it from (running-members.ts).
    const memberDone =
      job.batchId === null
        ? undefined
        : memberRuns(this.host.target, job.id, { token: job.leaseToken ?? '', attempt: job.attempt });
    try {
      if (active.decodeError !== undefined) throw active.decodeError;
      // Own properties only: a job type such as "toString" must not find Object.prototype's.
      const handler = Object.hasOwn(handlers, job.type) ? handlers[job.type] : fallback;
      if (handler === undefined) {
        const known = Object.keys(handlers).join(', ');
        throw new Error(`no handler for job type "${job.type}" on worker ${workerId} (handlers: ${known})`);
      }
      value = await (traced === undefined
        ? callHandler(handler, job)
        : runInContext(traced.context, () => callHandler(handler, job)));
      ok = true;
    } catch (error) {
      failure = error;
    }
    memberDone?.();
    active.handlerDone = true;
    active.progress?.close();
    let result: ProtoJobResult | undefined;
    if (ok) {
      try {
        result = encodeResult(value);
      } catch (error) {
        // A return value with no JSON form is the handler's bug: fail the attempt and say so.
        ok = false;
        failure = error;
      }
    }
    if (traced !== undefined) endJobSpan(traced.span, ok ? undefined : failure);
    if (active.lost || active.abandoned) {
      this.finishJob(active);
      return;
    }
    active.settling = true;
    // Before the slot frees: the credit it asks for follows the new limit.
    this.autoPrefetch?.ran(clock.nowMs() - startedAtMs);
    const { transport } = active.lane;
    if (!transport.freesSlotOnSettle) this.freeSlot(active);
    if (active.cancelled !== undefined) {
      await this.settler.cancelled(active, active.cancelled);
      this.finishJob(active);
      return;
    }
    try {
      if (!ok) await this.fail(active, normalise(failure));
      else {
        // Inline, not a method of its own: one promise less per job on the hot path.
        try {
          await this.settler.withRetry(active, () => transport.ack(job, result));
        } catch (error) {
          const e = toSeppError(error);
          // The server refused the result (larger than its max_result_bytes, or than a message it
          // takes at all): the attempt fails, saying why, rather than running again at its lease's end.
          const tooLarge = e.grpcCode === status.RESOURCE_EXHAUSTED && e.retry === 'never';
          if (result === undefined || (e.grpcCode !== status.INVALID_ARGUMENT && !tooLarge)) throw e;
          await this.fail(active, e);
          return this.finishJob(active);
        }
        this.events.emit('completed', job, value);
      }
    } catch (error) {
      const e = toSeppError(error);
      if (e instanceof LeaseLostError || e instanceof JobCancelledError) this.settlementFailed(active, e);
      else this.settlementLost(active, e);
    }
    this.finishJob(active);
  }

  /**
   * An ack or nack that failed for good (its retries ran out with the lease, or the server
   * refused it): said for each job, never folded into `report`'s one line per message — the job
   * runs again once its lease ends, and who reads the log must learn which. An attempt close
   * abandoned while settling was told then.
   */
  private settlementLost(active: Active, error: SeppError): void {
    if (active.abandoned) return;
    this.options.logger.error(
      `sepp worker ${this.options.workerId}: settling job ${active.job.id} failed: ${error.message}; ` +
        'it runs again once its lease ends',
    );
    if (this.events.listenerCount('error') > 0) this.events.emit('error', error);
  }

  /** The server says a lease was cancelled: stop that job if it runs here (a notice for another lease is ignored). */
  cancelRunning(jobId: string, attempt: number, error: JobCancelledError): void {
    const active = this.activeAttempt(jobId, attempt);
    if (active !== undefined) this.markCancelled(active, error);
  }

  /** The server ended an attempt by its hard timeout: stop that job if it runs here (else ignore). */
  timedOutRunning(jobId: string, attempt: number, error: JobTimeoutError): void {
    const active = this.activeAttempt(jobId, attempt);
    if (active !== undefined) this.lose(active, error);
  }

  private activeAttempt(jobId: string, attempt: number): Active | undefined {
    for (const active of this.active) {
      if (active.job.id === jobId && active.job.attempt === attempt) return active;
    }
    return undefined;
  }

  /** A settlement, extend or progress report refused: a lost or cancelled lease ends the job here; anything else is reported. */
  private settlementFailed(active: Active, error: SeppError): void {
    if (error instanceof LeaseLostError) this.lose(active, error);
    else if (error instanceof JobCancelledError) this.markCancelled(active, error);
    else this.host.report(error);
  }

  private markCancelled(active: Active, error: JobCancelledError): void {
    if (active.cancelled !== undefined || active.lost || !this.active.has(active)) return;
    active.cancelled = error;
    if (this.heldJobs.remove(active)) {
      this.dropHeld(active, error);
      return;
    }
    // Its lease is not extended any more: the server refuses, and the job ends cancelled when it runs out.
    this.keeper.remove(active);
    abortWorkerJob(active.job, error);
    this.events.emit('cancelled', active.job, error);
  }

  private async fail(active: Active, error: Error): Promise<void> {
    const outcome = await this.settler.fail(active, error);
    this.events.emit('failed', active.job, error, outcome);
  }

  /** A handler's `job.progress(…)`: through the job's reporter, on its lane's transport. */
  private readonly progressBound = (owner: unknown, fields: ProgressFields): Promise<void> => {
    const active = owner as Active;
    if (active.handlerDone || active.lost || active.abandoned || active.cancelled !== undefined) {
      return Promise.resolve();
    }
    active.progress ??= new ProgressReporter(
      (report) => active.lane.transport.progress(active.job, report),
      (error) => this.leaseCallFailed(active, error),
    );
    return active.progress.report(fields);
  };

  /** Frees the job's slot, once, for its lane's next held job, and asks for a job to take its place. */
  private freeSlot(active: Active): void {
    if (active.slotFreed) return;
    active.slotFreed = true;
    const { lane } = active;
    this.busy--;
    lane.busy--;
    this.beginHeld(lane);
    if (this.host.taking()) lane.transport.release();
  }

  /**
   * Starts the lane's oldest held job whose lease is still ours by the worker's
   * reckoning; those before it whose leases ran out unextended are dropped as
   * lost, never started (`HeldJobs.takeNext`).
   */
  private beginHeld(lane: Lane): void {
    const next = this.heldJobs.takeNext(lane, (late, error) => {
      late.lost = true;
      this.dropHeld(late, error);
    });
    if (next !== undefined) this.begin(next);
  }

  private finishJob(active: Active): void {
    this.keeper.remove(active);
    if (!this.active.delete(active)) return;
    this.freeSlot(active);
    if (this.active.size === 0) this.drained?.();
  }

  private extendLease(active: Active): void {
    if (active.extending || active.lost || active.abandoned || active.cancelled !== undefined) return;
    const { clock, leaseMs } = this.options;
    active.extending = true;
    // The server extends when the call arrives, so the lease surely lasts `leaseMs` from its sending.
    const sentAtMs = clock.nowMs();
    active.lane.transport.extend(active.job, leaseMs).then(
      (deadline) => {
        active.extending = false;
        active.leaseEndsAtMs = sentAtMs + leaseMs;
        if (this.active.has(active)) this.events.emit('extended', active.job, deadline);
      },
      (error: unknown) => {
        active.extending = false;
        // Anything but a lost or cancelled lease is retried at the next period: a lease gets two tries.
        this.leaseCallFailed(active, error);
      },
    );
  }

  /**
   * An extend or progress report refused. One that reached the server after our own
   * ack or nack is answered NOT_FOUND (or job_cancelled): the settlement's answer decides.
   */
  private leaseCallFailed(active: Active, error: unknown): void {
    const e = toSeppError(error, true);
    if (active.settling && (e instanceof LeaseLostError || e instanceof JobCancelledError)) return;
    this.settlementFailed(active, e);
  }

  private lose(active: Active, error: LeaseLostError): void {
    if (active.lost || !this.active.has(active)) return;
    active.lost = true;
    if (this.heldJobs.remove(active)) {
      this.dropHeld(active, error);
      return;
    }
    this.keeper.remove(active);
    abortWorkerJob(active.job, error);
    const { logger, workerId } = this.options;
    if (error instanceof JobTimeoutError) {
      logger.warn(`sepp worker ${workerId}: job ${active.job.id} timed out: ${error.message}`);
      this.events.emit('timedOut', active.job, error);
      return;
    }
    logger.warn(`sepp worker ${workerId}: job ${active.job.id} lost its lease: ${error.message}`);
    this.events.emit('leaseLost', active.job, error);
  }

  /**
   * At close: every held job goes back to the queue for other workers now, not when its lease
   * ends, with a give-back (no attempt counted, so one on its last attempt goes back too). From
   * a server without give-backs, one on its last attempt stays held to run (see `canGiveBack`).
   */
  giveBackHeld(): void {
    for (const active of this.heldJobs.takeToGiveBack(!this.host.canGiveBack())) void this.giveBack(active);
  }

  /**
   * At close, once `close`'s timeout passed: held jobs left (on their last attempt, from a
   * server without give-backs) will not start now, their leases run out; running jobs have
   * their signals aborted with `reason`.
   */
  abortAll(reason: SeppError): void {
    for (const active of this.heldJobs.takeAll()) {
      active.abandoned = true;
      this.finishJob(active);
    }
    for (const active of this.active) {
      active.stoppedForShutdown = true;
      abortWorkerJob(active.job, reason);
    }
  }

  /**
   * At close, once the grace after `abortAll` passed too (`waitedMs` in all): jobs still
   * running are abandoned, each said (their leases expire and they run again).
   */
  abandonAll(waitedMs: number): void {
    const { logger, workerId } = this.options;
    for (const active of [...this.active]) {
      // Its ack or nack still unanswered (the server unreachable): say so, once, for this job.
      if (active.settling && !active.lost) {
        logger.error(
          `sepp worker ${workerId}: settling job ${active.job.id} failed: the worker closed ` +
            `before its ack or nack was answered (waited ${waitedMs} ms); it runs ` +
            'again once its lease ends',
        );
      } else if (!active.lost) {
        logger.warn(
          `sepp worker ${workerId}: abandoning job ${active.job.id} (its handler did not ` +
            'return); its lease expires and it runs again',
        );
      }
      active.abandoned = true;
      this.finishJob(active);
    }
  }

  /** Resolves true once no job is active, false after `timeoutMs`. */
  async waitDrained(timeoutMs: number): Promise<boolean> {
    if (this.active.size === 0) return true;
    const drained = await settledWithin(this.options.clock, timeoutMs, (done) => {
      this.drained = done;
    });
    this.drained = undefined;
    return drained;
  }

  /** At close, last: no lease is extended any more. */
  stop(): void {
    this.keeper.stop();
  }
}
