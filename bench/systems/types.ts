/**
 * The seam between the benchmark harness and one queueing system (a peer, or sepp).
 *
 * A driver owns everything specific to its system: the server command line, the client
 * library and its connection settings, how a "job" maps onto the system's primitives.
 * The harness owns everything else: ports, temporary data directories, process tracking
 * (every server is stopped by PID, also on Ctrl-C), the workloads, timing, CPU and RSS
 * sampling, the strace fsync check and the report. So adding sepp is one file that
 * implements `SystemDriver` and one line in `registry.ts`.
 *
 * Lifecycle, driven by the harness for one system at a time:
 *   1. `start(ctx)` — spawn the server(s) through `ctx.spawn` (never `child_process`
 *      directly, so the harness can stop them on any exit), wait until they accept
 *      connections, open any shared client connection.
 *   2. For every workload run: `createQueue(name)` once with a fresh name, then
 *      `openClient(name, role)` once per concurrent actor (a producer, a worker, or — for
 *      W2 — one client doing both), then `close()` on each client.
 *   3. `stop()` — close shared connections, then stop the server(s) by PID through the
 *      handles `ctx.spawn` returned.
 *
 * Durability contract: every promise that "acknowledges" (enqueue, enqueueBatch,
 * Lease.ack, LeaseBatch.ack) resolves only when the system has confirmed the operation,
 * i.e. when a client of that system would consider it done. Whether that confirmation
 * implies an fsync is the system's configuration, stated in `durability` and checked by
 * the harness with strace.
 */

/** How the harness lets a driver run server processes; all of them are tracked by PID. */
export interface StartContext {
  /** A fresh, empty directory for the server's data, removed after `stop()`. */
  readonly dataDir: string;
  /** Returns a TCP port on 127.0.0.1 that was free a moment ago. */
  freePort(): Promise<number>;
  /** Starts a server process; its stdout/stderr go to a log file in the run's temp dir. */
  spawn(spec: SpawnSpec): Promise<ServerProcess>;
  /** Resolves once 127.0.0.1:port accepts TCP connections, or rejects after `timeoutMs`. */
  waitForPort(port: number, timeoutMs: number): Promise<void>;
  /** Progress messages for the operator (stderr). */
  log(message: string): void;
}

export interface SpawnSpec {
  /** Short name used for the log file and in messages, e.g. `redis`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** Variables the server needs besides PATH, HOME and the locale (the harness's own are not passed). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface ServerProcess {
  readonly pid: number;
  readonly logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** A job a worker holds. */
export interface Lease {
  /**
   * Acknowledges the job (it is done and must not be delivered again); resolves when the
   * system has confirmed the ack. `nextWanted` is true when this client will call
   * `reserve()` again right after: a driver may then fetch the next job in the same round
   * trip (BullMQ's own Worker does this with `moveToFinished(fetchNext)`) and hand it out
   * on that next `reserve()`. It must never fetch ahead when `nextWanted` is false, since
   * the harness counts jobs exactly.
   */
  ack(nextWanted: boolean): Promise<void>;
}

/** Up to `max` jobs a worker holds together. */
export interface LeaseBatch {
  readonly count: number;
  /** Acknowledges every job of the batch; resolves when all acks are confirmed. */
  ack(): Promise<void>;
}

/** One actor's client: a producer, a worker, or both (W2). Never used concurrently. */
export interface QueueClient {
  /** Enqueues one job; resolves when the system has accepted it. */
  enqueue(payload: Buffer): Promise<void>;
  /** Reserves one job, waiting up to `waitMs` for one; null if none arrived in time. */
  reserve(waitMs: number): Promise<Lease | null>;
  /** Enqueues the payloads as one batch (see `SystemDriver.batch` for how). */
  enqueueBatch(payloads: readonly Buffer[]): Promise<void>;
  /** Reserves up to `max` jobs, waiting up to `waitMs`; null if none arrived in time. */
  reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null>;
  /** Releases this client's own resources (not the shared ones). */
  close(): Promise<void>;
}

export type ClientRole = 'producer' | 'worker' | 'both';

/** How a system does the batch operations of W3, for the report. */
export interface BatchSupport {
  /** `native`: one request carries the batch; `pipelined`: N requests written back to back. */
  readonly enqueue: 'native' | 'pipelined';
  readonly reserve: 'native' | 'pipelined';
  readonly ack: 'native' | 'pipelined';
}

export interface SystemDriver {
  /** CLI name, e.g. `bullmq`, `nats210`. */
  readonly id: string;
  /** Row label in the tables, e.g. `BullMQ 6.7 / Redis 7.0 (fsync always)`. Final after start(). */
  readonly label: string;
  /** What an acknowledgement means on disk, e.g. `fsync before ack` or `no fsync (2.9 default)`. */
  readonly durability: string;
  readonly batch: BatchSupport;
  start(ctx: StartContext): Promise<void>;
  /** Stops everything `start` started; safe to call after a failed start. */
  stop(): Promise<void>;
  /** PIDs of the server processes, for /proc CPU and RSS sampling and strace. */
  serverPids(): readonly number[];
  /** Creates an empty queue named `name` (a stream, tube or BullMQ queue). */
  createQueue(name: string): Promise<void>;
  openClient(queue: string, role: ClientRole): Promise<QueueClient>;
  /** Versions, server flags and client settings, one line, for the report. */
  describeSettings(): string;
  /**
   * Optional monotonically increasing server counters (e.g. sepp's `commits` and
   * `jobs_committed` from its metrics). The harness reads them before and after every
   * timed phase and stores the differences in the phase's result; a `commits` counter
   * also gives the report's "jobs per commit" (the mean group-commit batch).
   */
  counters?(): Promise<Readonly<Record<string, number>>>;
}

/**
 * Client settings given on the command line as `--set <system>.<key>=<value>`, e.g.
 * `--set bullmq.connection=per-client`. Each driver documents its keys and defaults.
 */
export type DriverSettings = ReadonlyMap<string, string>;

export type DriverFactory = (settings: DriverSettings) => SystemDriver;
