/**
 * Worker: runs handlers for the jobs of some queues, `concurrency` at a time.
 *
 * States: idle (created, not started) → running (asking for jobs for every
 * free slot) → closing (asks for nothing more; jobs already leased run to
 * the end and are settled) → closed.
 *
 * The Worker owns its states, its lanes (a Work stream or a Reserve poller each,
 * worker-active.ts) and what it says about the server: an outage, a refusal that
 * stops it. A job's life, from delivery to settlement, with the slots jobs take and
 * the jobs held ahead (`prefetch`), is its JobRunner's (worker-runner.ts).
 */
import { EventEmitter } from 'node:events';
import { status } from '@grpc/grpc-js';
import type { Connection } from './connection.ts';
import { SeppError } from './errors.ts';
import { ReserveTransport } from './reserve-transport.ts';
import { WorkStreamTransport } from './work-stream-transport.ts';
import type { TransportHost } from './work-transport.ts';
import { abortGraceMs, type Lane, makeLanes } from './worker-active.ts';
import type { WorkerClock, WorkerTimer } from './worker-clock.ts';
import {
  resolveWorkerOptions,
  type WorkerEvents,
  type WorkerLogger,
  type WorkerOptions,
} from './worker-options.ts';
import { Outage } from './worker-outage.ts';
import { JobRunner } from './worker-runner.ts';

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
  private readonly shutdownTimeoutMs: number;
  private readonly clock: WorkerClock;
  private readonly outage: Outage<Lane>;
  private readonly lanes: Lane[];
  private readonly runner: JobRunner;
  private stateName: 'idle' | 'running' | 'closing' | 'closed' = 'idle';
  private closing: Promise<void> | undefined;
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
    this.client = client;
    this.connection = client.connection;
    const resolved = resolveWorkerOptions(options, this.connection.options.transport);
    const { clock, workerId } = resolved;
    this.shutdownTimeoutMs = resolved.shutdownTimeoutMs;
    this.clock = clock;
    this.workerId = workerId;
    this.logger = resolved.logger;
    this.closedOnce = new Promise((resolve) => this.once('closed', resolve));
    const config = {
      queues: resolved.queues,
      leaseMs: resolved.leaseMs,
      workerId,
      pollWaitMs: resolved.pollWaitMs,
      reconnectBaseDelayMs: resolved.reconnectBaseDelayMs,
      reconnectMaxDelayMs: resolved.reconnectMaxDelayMs,
      clock,
    };
    this.lanes = makeLanes(resolved.concurrency, resolved.prefetch, resolved.laneCount, (lane) => {
      const host: TransportHost = {
        freeSlots: () =>
          this.stateName === 'running'
            ? lane.capacity + lane.prefetch - lane.busy - this.runner.heldIn(lane)
            : 0,
        idleSlots: () => (this.stateName === 'running' ? lane.capacity - lane.busy : 0),
        // Read at each grant: `prefetch: 'auto'` moves the lane's prefetch.
        get refillJobs() {
          return Math.max(1, Math.ceil(lane.prefetch / 2));
        },
        deliver: (job, unasked) => this.runner.deliver(lane, job, unasked),
        report: (error) => this.unavailable(lane, error),
        connected: () => this.connected(lane),
        stop: (error) => this.stop(error),
        cancel: (jobId, attempt, error) => this.runner.cancelRunning(jobId, attempt, error),
        timedOut: (jobId, attempt, error) => this.runner.timedOutRunning(jobId, attempt, error),
      };
      return resolved.transport === 'unary'
        ? new ReserveTransport(this.connection, config, host)
        : new WorkStreamTransport(this.connection, config, host);
    });
    this.runner = new JobRunner(this, resolved, this.lanes, {
      target: this.connection.target,
      serverMaxReserveJobs: () => {
        const max = this.connection.serverMaxReserveJobs;
        // Not known yet (the server could not answer): asked again, at most every 30 s.
        if (max === 0) void this.connection.learnServerBounds();
        // Auto leases ahead only where close gives held jobs back uncounted: none from an older server.
        return this.canGiveBack() ? max : 0;
      },
      canGiveBack: () => this.canGiveBack(),
      taking: () => this.stateName === 'running',
      report: (error) => this.report(error),
    });
    this.outage = new Outage(this.lanes.length, resolved.maxUnavailableMs);
    if (resolved.autostart) process.nextTick(() => this.start());
  }

  /** `idle`, `running`, `closing` or `closed`. */
  get state(): 'idle' | 'running' | 'closing' | 'closed' {
    return this.stateName;
  }

  /** Jobs whose handlers are running. */
  get running(): number {
    return this.runner.busy;
  }

  /** Jobs leased ahead (`prefetch`) and waiting for a slot. */
  get held(): number {
    return this.runner.held;
  }

  /**
   * The most jobs this worker leases ahead now: `prefetch`, or with `prefetch: 'auto'` the
   * limit it last set itself (0 until its first `concurrency` jobs have run, 0 against a server
   * without give-backs, and 0 for good once a job came from a queue with flow limits).
   */
  get prefetchLimit(): number {
    return this.runner.prefetchLimit;
  }

  /** Starts taking jobs (done automatically unless `autostart` is false). */
  start(): this {
    if (this.stateName !== 'idle') return this;
    this.stateName = 'running';
    this.client.track(this, true);
    // Held jobs go back at close uncounted only on a server with `nack_give_back`, and `prefetch:
    // 'auto'` holds jobs only within its max_reserve_jobs: learn both (no wait).
    void this.connection.learnServerBounds();
    for (const lane of this.lanes) lane.transport.start();
    return this;
  }

  /** Whether the server undoes a give-back (`nack_give_back`); false while not known. */
  private canGiveBack(): boolean {
    return this.connection.serverFeatures?.has('nack_give_back') === true;
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
    // How held jobs go back depends on the server's features: wait for its answer if one is on the way.
    if (this.runner.held > 0) await this.connection.learnServerBounds();
    this.runner.giveBackHeld();
    if (wasRunning) {
      if (!(await this.runner.waitDrained(timeoutMs))) {
        const reason = new SeppError(
          status.CANCELLED,
          `the worker is shutting down (waited ${timeoutMs} ms)`,
          {
            code: 'cancelled',
          },
        );
        this.runner.abortAll(reason);
        if (!(await this.runner.waitDrained(abortGraceMs))) this.runner.abandonAll(timeoutMs + abortGraceMs);
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
    this.runner.stop();
    this.stateName = 'closed';
    this.client.track(this, false);
    this.emit('closed');
  }
}
