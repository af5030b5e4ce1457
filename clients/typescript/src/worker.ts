/**
 * Worker: runs handlers for the jobs of some queues, `concurrency` at a time.
 *
 * States: idle (created, not started) → running (asking for jobs for every
 * free slot) → closing (asks for nothing more; jobs already leased run to
 * the end and are settled) → closed.
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
 * see `beginHeld`), and `close()` gives held jobs back (see `giveBack`).
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { status } from '@grpc/grpc-js';
import type { Connection } from './connection.ts';
import { JobCancelledError, JobTimeoutError, LeaseLostError, SeppError, toSeppError } from './errors.ts';
import type { JobResult as ProtoJobResult, LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import { LeaseKeeper } from './lease-keeper.ts';
import { ProgressReporter } from './progress-reporter.ts';
import { ReserveTransport } from './reserve-transport.ts';
import { encodeResult, isJsonContentType } from './results.ts';
import { memberRuns } from './running-members.ts';
import { endJobSpan, runInContext, startJobSpan } from './trace.ts';
import { WorkStreamTransport } from './work-stream-transport.ts';
import type { ProgressFields, TransportHost } from './work-transport.ts';
import {
  type Active,
  abortGraceMs,
  callHandler,
  type Lane,
  makeLanes,
  normalise,
  settledWithin,
} from './worker-active.ts';
import { systemWorkerClock, type WorkerClock, type WorkerTimer } from './worker-clock.ts';
import { HeldJobs } from './worker-held-jobs.ts';
import { abortWorkerJob, DeadLetter, type JobHandler, reportProgressTo, WorkerJob } from './worker-job.ts';
import {
  checkWorkerOptions,
  defaultStreams,
  type WorkerEvents,
  type WorkerLogger,
  type WorkerOptions,
} from './worker-options.ts';
import { Outage } from './worker-outage.ts';
import { Settler } from './worker-settler.ts';

export type { WorkerEvents, WorkerLogger, WorkerOptions } from './worker-options.ts';

/** The parts of a SeppClient a Worker uses. */
export interface WorkerClient {
  /** @internal */
  readonly connection: Connection;
  /** @internal */
  track(worker: Worker, running: boolean): void;
}

/** Runs handlers for jobs from sepp queues. */
export class Worker extends EventEmitter<WorkerEvents> {
  private readonly connection: Connection;
  private readonly client: WorkerClient;
  private readonly queues: readonly string[];
  private readonly leaseMs: number;
  private readonly handlers: Readonly<Record<string, JobHandler>>;
  private readonly fallback: JobHandler | undefined;
  private readonly shutdownTimeoutMs: number;
  private readonly clock: WorkerClock;
  private readonly reconnectBaseDelayMs: number;
  private readonly reconnectMaxDelayMs: number;
  private readonly outage: Outage<Lane>;
  private readonly lanes: Lane[];
  private readonly heldJobs: HeldJobs;
  private readonly keeper: LeaseKeeper<Active>;
  private readonly settler: Settler;
  private readonly active = new Set<Active>();
  private busy = 0;
  private stateName: 'idle' | 'running' | 'closing' | 'closed' = 'idle';
  private closing: Promise<void> | undefined;
  private drained: (() => void) | undefined;
  private lastWarning = '';
  private readonly logger: WorkerLogger;
  /** The error that stopped the worker, if one did. */
  private stoppedBy: SeppError | undefined;
  private readonly closedOnce: Promise<void>;
  /** This worker's id, as the server records it. */
  readonly workerId: string;

  /** Creates a worker on `client` (a SeppClient); it starts on the next tick unless `autostart` is false. */
  constructor(client: WorkerClient, options: WorkerOptions) {
    super();
    const { concurrency, prefetch, leaseMs, maxUnavailableMs } = checkWorkerOptions(options);
    this.client = client;
    this.connection = client.connection;
    this.queues = [...options.queues];

    this.leaseMs = leaseMs;
    this.handlers = options.handlers ?? {};
    this.fallback = options.fallback;
    this.shutdownTimeoutMs = options.shutdownTimeoutMs ?? 30_000;
    this.clock = options.clock ?? systemWorkerClock;
    this.reconnectBaseDelayMs = options.reconnect?.baseDelayMs ?? 200;
    this.reconnectMaxDelayMs = options.reconnect?.maxDelayMs ?? 10_000;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}`;
    this.logger = options.logger ?? console;
    this.closedOnce = new Promise((resolve) => this.once('closed', resolve));
    this.settler = new Settler({
      workerId: this.workerId,
      clock: this.clock,
      logger: this.logger,
      reconnectBaseDelayMs: this.reconnectBaseDelayMs,
      reconnectMaxDelayMs: this.reconnectMaxDelayMs,
      report: (error) => this.report(error),
    });
    const config = {
      queues: this.queues,
      leaseMs,
      workerId: this.workerId,
      pollWaitMs: options.pollWaitMs ?? 30_000,
      reconnectBaseDelayMs: this.reconnectBaseDelayMs,
      reconnectMaxDelayMs: this.reconnectMaxDelayMs,
      clock: this.clock,
    };
    const transport = options.transport ?? this.connection.options.transport;
    const laneCount = Math.min(
      concurrency,
      options.streams ?? defaultStreams(transport, concurrency, prefetch),
    );
    this.lanes = makeLanes(concurrency, prefetch, laneCount, (lane) => {
      const host: TransportHost = {
        freeSlots: () =>
          this.stateName === 'running'
            ? lane.capacity + lane.prefetch - lane.busy - this.heldJobs.sizeOf(lane)
            : 0,
        idleSlots: () => (this.stateName === 'running' ? lane.capacity - lane.busy : 0),
        refillJobs: Math.max(1, Math.ceil(lane.prefetch / 2)),
        deliver: (job) => this.deliver(lane, job),
        report: (error) => this.unavailable(lane, error),
        connected: () => this.connected(lane),
        stop: (error) => this.stop(error),
        cancel: (jobId, attempt, error) => this.cancelRunning(jobId, attempt, error),
        timedOut: (jobId, attempt, error) => this.timedOutRunning(jobId, attempt, error),
      };
      return transport === 'unary'
        ? new ReserveTransport(this.connection, config, host)
        : new WorkStreamTransport(this.connection, config, host);
    });
    this.heldJobs = new HeldJobs(this.lanes, this.clock);
    this.keeper = new LeaseKeeper<Active>(this.clock, Math.max(1, Math.floor(leaseMs / 3)), (a) =>
      this.extendLease(a),
    );
    this.outage = new Outage(this.lanes.length, maxUnavailableMs);
    if (options.autostart !== false) process.nextTick(() => this.start());
  }

  /** `idle`, `running`, `closing` or `closed`. */
  get state(): 'idle' | 'running' | 'closing' | 'closed' {
    return this.stateName;
  }

  /** Jobs whose handlers are running. */
  get running(): number {
    return this.busy;
  }

  /** Jobs leased ahead (`prefetch`) and waiting for a slot. */
  get held(): number {
    return this.heldJobs.size;
  }

  /** Starts taking jobs (done automatically unless `autostart` is false). */
  start(): this {
    if (this.stateName !== 'idle') return this;
    this.stateName = 'running';
    this.client.track(this, true);
    for (const lane of this.lanes) lane.transport.start();
    return this;
  }

  private deliver(lane: Lane, proto: ProtoLeasedJob): void {
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
      leaseEndsAtMs: this.clock.nowMs() + this.leaseMs,
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
    if (lane.busy < lane.capacity) this.begin(active);
    else if (!this.heldJobs.hold(active, this.stateName === 'running')) void this.giveBack(active);
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
  private async giveBack(active: Active): Promise<void> {
    this.keeper.remove(active);
    await this.settler.giveBack(active);
    this.finishJob(active);
  }

  /**
   * A job taken out of the held ones, cancelled, timed out or lost: it never runs
   * here; its place is credit again, and its event says so as for a running job.
   */
  private dropHeld(active: Active, error: SeppError): void {
    if (this.stateName === 'running') active.lane.transport.release();
    this.keeper.remove(active);
    this.logger.warn(`sepp worker ${this.workerId}: held job ${active.job.id} dropped: ${error.message}`);
    if (error instanceof JobCancelledError) {
      this.emit('cancelled', active.job, error);
      // The nack makes the job cancelled now rather than when its lease runs out.
      void this.settler.cancelled(active, error).then(() => this.finishJob(active));
      return;
    }
    if (error instanceof JobTimeoutError) this.emit('timedOut', active.job, error);
    else if (error instanceof LeaseLostError) this.emit('leaseLost', active.job, error);
    this.finishJob(active);
  }

  private async run(active: Active): Promise<void> {
    const { job } = active;
    this.emit('started', job);
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
        : memberRuns(this.connection.target, job.id, { token: job.leaseToken ?? '', attempt: job.attempt });
    try {
      if (active.decodeError !== undefined) throw active.decodeError;
      // Own properties only: a job type such as "toString" must not find Object.prototype's.
      const handler = Object.hasOwn(this.handlers, job.type) ? this.handlers[job.type] : this.fallback;
      if (handler === undefined) {
        const known = Object.keys(this.handlers).join(', ');
        throw new Error(
          `no handler for job type "${job.type}" on worker ${this.workerId} (handlers: ${known})`,
        );
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
        this.emit('completed', job, value);
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
    this.logger.error(
      `sepp worker ${this.workerId}: settling job ${active.job.id} failed: ${error.message}; ` +
        'it runs again once its lease ends',
    );
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  /** The server says a lease was cancelled: stop that job if it runs here (a notice for another lease is ignored). */
  private cancelRunning(jobId: string, attempt: number, error: JobCancelledError): void {
    const active = this.activeAttempt(jobId, attempt);
    if (active !== undefined) this.markCancelled(active, error);
  }

  /** The server ended an attempt by its hard timeout: stop that job if it runs here (else ignore). */
  private timedOutRunning(jobId: string, attempt: number, error: JobTimeoutError): void {
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
    else this.report(error);
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
    this.emit('cancelled', active.job, error);
  }

  private async fail(active: Active, error: Error): Promise<void> {
    const outcome = await this.settler.fail(active, error);
    this.emit('failed', active.job, error, outcome);
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
    if (this.stateName === 'running') lane.transport.release();
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
    active.extending = true;
    // The server extends when the call arrives, so the lease surely lasts `leaseMs` from its sending.
    const sentAtMs = this.clock.nowMs();
    active.lane.transport.extend(active.job, this.leaseMs).then(
      (deadline) => {
        active.extending = false;
        active.leaseEndsAtMs = sentAtMs + this.leaseMs;
        if (this.active.has(active)) this.emit('extended', active.job, deadline);
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
    if (error instanceof JobTimeoutError) {
      this.logger.warn(`sepp worker ${this.workerId}: job ${active.job.id} timed out: ${error.message}`);
      this.emit('timedOut', active.job, error);
      return;
    }
    this.logger.warn(`sepp worker ${this.workerId}: job ${active.job.id} lost its lease: ${error.message}`);
    this.emit('leaseLost', active.job, error);
  }

  private report(error: SeppError): void {
    if (this.listenerCount('error') > 0) {
      this.emit('error', error);
      return;
    }
    // An unhandled 'error' event would crash the process over a passing outage; log once per kind instead.
    if (error.message === this.lastWarning) return;
    this.lastWarning = error.message;
    this.logger.warn(`sepp worker ${this.workerId}: ${error.message}`);
  }

  /**
   * A lane's transport could not get jobs and asks again after a backoff (said, see
   * `report`); once the worker has been cut off longer than `maxUnavailableMs`
   * (worker-outage.ts), it stops as for a fatal status.
   */
  private unavailable(lane: Lane, error: SeppError): void {
    const downMs = this.outage.failed(lane, this.clock.nowMs());
    this.report(error);
    if (downMs === undefined) return;
    this.stop(
      new SeppError(
        status.UNAVAILABLE,
        `sepp at ${this.connection.address} was unreachable for ${(downMs / 1000).toFixed(1)} s, longer than ` +
          `maxUnavailableMs (${this.outage.maxUnavailableMs}); last error: ${error.message}`,
      ),
    );
  }

  /**
   * The server answered a lane: its failures are over. Once no lane fails, the
   * outage is, said once (and its warnings may be said again next time).
   */
  private connected(lane: Lane): void {
    const downMs = this.outage.connected(lane, this.clock.nowMs());
    if (downMs === undefined) return;
    const downS = (downMs / 1000).toFixed(1);
    this.lastWarning = '';
    this.logger.info(
      `sepp worker ${this.workerId}: connected to sepp at ${this.connection.address} again after ${downS} s`,
    );
  }

  /**
   * The server refused the Work stream or a Reserve with a status asking again
   * cannot change (`stopsWorker`: the key, its role or queues, a queue name,
   * the credit, a call it does not know, an error marked `sepp-retry: never`), or stayed unreachable longer than
   * `maxUnavailableMs`, so the worker says why once and closes; `wait()` rejects
   * with the error.
   */
  private stop(error: SeppError): void {
    if (this.stoppedBy !== undefined) return;
    this.stoppedBy = error;
    this.logger.error(`sepp worker ${this.workerId} stopped: ${error.message}`);
    if (this.listenerCount('error') > 0) this.emit('error', error);
    process.nextTick(() => void this.close());
  }

  /**
   * Resolves once the worker has closed (`close()`, or its client's); rejects with
   * the error that stopped it when the server refused to hand it jobs with a status
   * asking again cannot change: its API key, the key's role or queues, a queue name,
   * more jobs at once than the server's `limits.max_reserve_jobs` (docs/protocol.md,
   * "What stops a Worker"), or when the server stayed unreachable longer than
   * `maxUnavailableMs` (code `unavailable`).
   * A program whose only work is the worker ends with it:
   * `worker.wait().catch((e) => { console.error(e.message); process.exitCode = 1; })`.
   */
  async wait(): Promise<void> {
    await this.closedOnce;
    if (this.stoppedBy !== undefined) throw this.stoppedBy;
  }

  /**
   * Stops taking jobs and waits for running ones to finish and be settled. After
   * `timeoutMs` (default `shutdownTimeoutMs`) their signals abort; handlers that
   * stop get nacked for an immediate retry elsewhere, and any still running a
   * second later are abandoned (their leases expire and the jobs come back).
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? this.shutdownTimeoutMs);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    const wasRunning = this.stateName === 'running';
    this.stateName = 'closing';
    for (const lane of this.lanes) lane.transport.stopTaking();
    // Held jobs go back to the queue for other workers now, not when their leases end.
    for (const active of this.heldJobs.takeToGiveBack()) void this.giveBack(active);
    if (wasRunning) {
      if (!(await this.waitDrained(timeoutMs))) {
        const reason = new SeppError(
          status.CANCELLED,
          `the worker is shutting down (waited ${timeoutMs} ms)`,
          {
            code: 'cancelled',
          },
        );
        // Held jobs left (on their last attempt) will not start now: their leases run out.
        for (const active of this.heldJobs.takeAll()) {
          active.abandoned = true;
          this.finishJob(active);
        }
        for (const active of this.active) {
          active.stoppedForShutdown = true;
          abortWorkerJob(active.job, reason);
        }
        if (!(await this.waitDrained(abortGraceMs))) {
          for (const active of [...this.active]) {
            // Its ack or nack still unanswered (the server unreachable): say so, once, for this job.
            if (active.settling && !active.lost) {
              this.logger.error(
                `sepp worker ${this.workerId}: settling job ${active.job.id} failed: the worker closed ` +
                  `before its ack or nack was answered (waited ${timeoutMs + abortGraceMs} ms); it runs ` +
                  'again once its lease ends',
              );
            } else if (!active.lost) {
              this.logger.warn(
                `sepp worker ${this.workerId}: abandoning job ${active.job.id} (its handler did not ` +
                  'return); its lease expires and it runs again',
              );
            }
            active.abandoned = true;
            this.finishJob(active);
          }
        }
      }
      let timer: WorkerTimer | undefined;
      await Promise.race([
        Promise.all(this.lanes.map((lane) => lane.transport.finish())),
        new Promise<void>((resolve) => {
          timer = this.clock.setTimer(abortGraceMs, () => {
            for (const lane of this.lanes) lane.transport.cancel();
            resolve();
          });
        }),
      ]);
      timer?.cancel();
    }
    this.keeper.stop();
    this.stateName = 'closed';
    this.client.track(this, false);
    this.emit('closed');
  }

  /** Resolves true once no job is active, false after `timeoutMs`. */
  private async waitDrained(timeoutMs: number): Promise<boolean> {
    if (this.active.size === 0) return true;
    const drained = await settledWithin(this.clock, timeoutMs, (done) => {
      this.drained = done;
    });
    this.drained = undefined;
    return drained;
  }
}
