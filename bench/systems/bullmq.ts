import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { commandOutput, packageVersion } from '../lib/versions.ts';
import { WorkerPool } from './bullmq-worker-pool.ts';
import { PayloadText } from './payload-text.ts';
import { choice } from './settings.ts';
import type {
  ClientRole,
  DriverSettings,
  Lease,
  LeaseBatch,
  QueueClient,
  ServerProcess,
  StartContext,
  SystemDriver,
} from './types.ts';

/**
 * BullMQ on Debian's redis-server with `appendonly yes`, `appendfsync always`: Redis
 * fsyncs the AOF before it replies to any write, so every `Queue.add` and every
 * `moveToCompleted` is durable when acknowledged.
 *
 * Drain, by default, uses BullMQ's manual-processing API the way its own Worker main loop
 * does: `getNextJob` (moveToActive) and `moveToCompleted(fetchNext)`, which completes a job
 * and fetches the next one in one Lua call. That is the same Redis work as a `Worker` with
 * a processor, without the event emitting and tracing around it; `drain=worker` runs the
 * real `Worker` instead (see bullmq-worker-pool.ts). W3's batches always use the manual API.
 *
 * Settings (`--set bullmq.<key>=<value>`):
 *   connection    shared (default) | per-client — one ioredis connection for all producers
 *                 and workers (each Worker still gets its own blocking connection), or one
 *                 per client.
 *   pipelining    off (default) | auto — ioredis `enableAutoPipelining`, which writes all
 *                 commands issued in one event-loop tick in one socket write.
 *   fetchnext     on (default) | off — fetch the next job in the ack's round trip.
 *   drain         manual (default) | worker — getNextJob + moveToCompleted, or a Worker.
 *
 * The defaults won interleaved W1 runs (50,000 jobs, 3 rounds each) on our 2-core machine:
 * one shared connection without auto-pipelining used the least client CPU per job (~35 µs
 * to enqueue, ~50 µs to drain) and was the fastest in both phases; per-client connections
 * with auto-pipelining were the worst (~190-300 µs of client CPU per job). The real Worker
 * (per-client connections) drained 10-15% slower than the manual loop.
 */

type JobData = { p: string };

/** A Worker that exposes the protected job factory used by BullMQ's own main loop. */
class PullWorker extends Worker<JobData, null> {
  jobFromData(
    data: Parameters<Worker['nextJobFromJobData']>[0],
    id: string,
    token: string,
  ): Promise<Job<JobData, null>> {
    return this.nextJobFromJobData(data, id, token);
  }
}

let tokenSeq = 0;

class BullmqClient implements QueueClient {
  private prefetched: Job<JobData, null> | undefined;
  private readonly payloadText = new PayloadText();
  private readonly token = `bench-${process.pid}-${++tokenSeq}`;

  constructor(
    private readonly queue: Queue<JobData, null> | undefined,
    private readonly worker: PullWorker | undefined,
    private readonly pool: WorkerPool | undefined,
    private readonly fetchNext: boolean,
    /** What this client alone owns and closes: its Queue unless shared, its connection. */
    private readonly owned: { queue: boolean; connection: Redis | undefined; leavePool: () => Promise<void> },
  ) {}

  /** BullMQ jobs carry JSON; the 256-byte payload travels as a 256-character string. */
  private text(payload: Buffer): string {
    return this.payloadText.of(payload);
  }

  private need<T>(what: T | undefined, role: string): T {
    if (what === undefined) throw new Error(`bullmq client opened without the ${role} role`);
    return what;
  }

  async enqueue(payload: Buffer): Promise<void> {
    await this.need(this.queue, 'producer').add('job', { p: this.text(payload) });
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    await this.need(this.queue, 'producer').addBulk(
      payloads.map((p) => ({ name: 'job', data: { p: this.text(p) } })),
    );
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    if (this.pool !== undefined) return this.pool.reserve(waitMs);
    const worker = this.need(this.worker, 'worker');
    let job = this.prefetched;
    this.prefetched = undefined;
    // Blocks up to the Worker's drainDelay (1 s) when the queue is empty.
    job ??= await worker.getNextJob(this.token, { block: true });
    if (job === undefined) return null;
    const found = job;
    return {
      ack: async (nextWanted) => {
        const fetch = nextWanted && this.fetchNext;
        const next = await found.moveToCompleted(null, this.token, fetch);
        if (fetch && Array.isArray(next) && next[0]) {
          this.prefetched = await worker.jobFromData(next[0], String(next[1]), this.token);
        }
      },
    };
  }

  async reserveBatch(max: number, _waitMs: number): Promise<LeaseBatch | null> {
    const worker = this.need(this.worker, 'worker');
    // BullMQ has no multi-job reserve: `max` moveToActive calls, pipelined on the connection.
    const tokens = Array.from({ length: max }, (_, i) => `${this.token}:${i}`);
    const got = await Promise.all(tokens.map((t) => worker.getNextJob(t, { block: false })));
    const jobs = got.flatMap((job, i) => (job === undefined ? [] : [{ job, token: tokens[i]! }]));
    if (jobs.length === 0) return null;
    return {
      count: jobs.length,
      ack: async () => {
        await Promise.all(jobs.map(({ job, token }) => job.moveToCompleted(null, token, false)));
      },
    };
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.owned.leavePool();
    if (this.owned.queue) await this.queue?.close();
    this.owned.connection?.disconnect();
  }
}

export function bullmqDriver(settings: DriverSettings): SystemDriver {
  const connectionMode = choice(settings, 'bullmq.connection', ['shared', 'per-client'], 'shared');
  const pipelining = choice(settings, 'bullmq.pipelining', ['off', 'auto'], 'off');
  const fetchNext = choice(settings, 'bullmq.fetchnext', ['on', 'off'], 'on') === 'on';
  const drainMode = choice(settings, 'bullmq.drain', ['manual', 'worker'], 'manual');
  const pools = new Map<string, WorkerPool>();
  let server: ServerProcess | undefined;
  let port = 0;
  let shared: Redis | undefined;
  let redisVersion = '';
  const sharedQueues = new Map<string, Queue<JobData, null>>();

  const connect = () =>
    new Redis({
      host: '127.0.0.1',
      port,
      maxRetriesPerRequest: null,
      enableAutoPipelining: pipelining === 'auto',
    });

  return {
    id: 'bullmq',
    get label() {
      return `BullMQ ${packageVersion('bullmq')} / Redis ${redisVersion}`;
    },
    durability: 'fsync before ack (appendfsync always)',
    batch: { enqueue: 'native', reserve: 'pipelined', ack: 'pipelined' },

    async start(ctx: StartContext) {
      redisVersion = /v=(\S+)/.exec(commandOutput('redis-server', ['--version']))?.[1] ?? '?';
      port = await ctx.freePort();
      server = await ctx.spawn({
        name: 'redis',
        command: 'redis-server',
        args: [
          '--bind',
          '127.0.0.1',
          '--port',
          String(port),
          '--dir',
          ctx.dataDir,
          '--appendonly',
          'yes',
          '--appendfsync',
          'always',
          '--save',
          '',
        ],
      });
      await ctx.waitForPort(port, 10_000);
      if (connectionMode === 'shared') shared = connect();
    },

    async stop() {
      await Promise.all([...sharedQueues.values()].map((q) => q.close()));
      sharedQueues.clear();
      shared?.disconnect();
      shared = undefined;
      await server?.stop();
      server = undefined;
    },

    serverPids: () => (server === undefined ? [] : [server.pid]),

    async createQueue(_name: string) {
      // BullMQ creates a queue's keys on first use.
    },

    async openClient(name: string, role: ClientRole) {
      const own = shared === undefined ? connect() : undefined;
      const connection = shared ?? own!;
      const defaults = { defaultJobOptions: { removeOnComplete: true, removeOnFail: true } };
      let queue: Queue<JobData, null> | undefined;
      if (role !== 'worker') {
        if (shared === undefined) queue = new Queue<JobData, null>(name, { connection, ...defaults });
        else {
          queue = sharedQueues.get(name) ?? new Queue<JobData, null>(name, { connection, ...defaults });
          sharedQueues.set(name, queue);
        }
        await queue.waitUntilReady();
      }
      let worker: PullWorker | undefined;
      let pool: WorkerPool | undefined;
      if (role !== 'producer') {
        // W3's batches need the manual API even when single jobs go through a Worker.
        worker = new PullWorker(name, null, { connection, autorun: false, drainDelay: 1 });
        await worker.waitUntilReady();
        if (drainMode === 'worker') {
          // Without a shared connection the pool gets its own, since any one client's may close first.
          pool =
            pools.get(name) ??
            new WorkerPool(name, shared ?? { host: '127.0.0.1', port, maxRetriesPerRequest: null });
          pools.set(name, pool);
          await pool.join();
        }
      }
      const joined = pool;
      const leavePool = async () => {
        if (joined?.leave()) {
          pools.delete(name);
          await joined.close();
        }
      };
      // A shared Queue is closed by stop(), not by each producer.
      return new BullmqClient(queue, worker, pool, fetchNext, {
        queue: shared === undefined,
        connection: own,
        leavePool,
      });
    },

    describeSettings() {
      return (
        `redis-server ${redisVersion} --appendonly yes --appendfsync always --save ""; ` +
        `bullmq ${packageVersion('bullmq')}, ioredis ${packageVersion('ioredis')}; ` +
        `connection=${connectionMode}, enableAutoPipelining=${pipelining === 'auto'}, ` +
        (drainMode === 'manual'
          ? `drain=getNextJob+moveToCompleted(fetchNext=${fetchNext})`
          : 'drain=Worker(concurrency=workers)') +
        ', removeOnComplete=true'
      );
    },
  };
}
