import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type JobSpec, type LeasedJob, SeppClient } from '../../clients/typescript/src/index.ts';
import { sumSeries } from '../lib/prometheus-text.ts';
import { commandOutput, packageVersion } from '../lib/versions.ts';
import { PostgresPeerServer } from './postgres-peer.ts';
import { ensureSeppBundle, seppBundlePath } from './sepp-bundle.ts';
import { SeppWorkerPool } from './sepp-worker-pool.ts';
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
 * sepp itself, as its users run it: the production bundle (`node dist/sepp.cjs serve`,
 * rebuilt first when missing or older than its sources) and the public SDK (@sepp-queue/client). Three
 * variants of one driver:
 *
 *   sepp          the SDK's default path, durability `full` (every group commit fdatasync'd
 *                 before any reply). Enqueue: `SeppClient.enqueue()`, which coalesces the
 *                 enqueues of one event-loop turn into one message on the client's Produce
 *                 stream. Drain: one SDK `Worker` per queue, concurrency = the bench workers
 *                 of that queue, on Work streams (see sepp-worker-pool.ts).
 *   sepp-unary    the same with the SDK's `transport: 'unary'`: enqueues of one turn go as
 *                 one unary EnqueueBatch call; the Worker long-polls unary Reserve for its
 *                 free slots and sends the acks of one turn as one AckBatch call.
 *   sepp-relaxed  the default path with durability `relaxed` (SQLite synchronous=NORMAL:
 *                 survives a process crash, not a power cut; no fsync per commit).
 *   sepp-pg       the default path on the PostgreSQL store (issue 37): a fresh PostgreSQL
 *                 cluster per start, with the settings pg-boss and graphile-worker get
 *                 (postgres-peer.ts); the server CPU counted is sepp's and PostgreSQL's.
 *
 * W3's batches use the SDK's batch calls on every variant: `enqueueBatch` (a Produce
 * message, or an EnqueueBatch call with the unary transport), `reserve({ maxJobs })` (a
 * unary Reserve) and `ackBatch` (a unary AckBatch) — all native.
 *
 * Settings (`--set sepp.<key>=<value>`, for all three variants):
 *   connection  shared (default) | per-client — one SeppClient (one HTTP/2 connection, one
 *               Produce stream) for every producer and worker, as the SDK recommends, or one
 *               per client: no coalescing across producers, so with the unary transport each
 *               enqueue is its own call, as a hand-written client would make it.
 *   drain       worker (default) | calls — the SDK's Worker, or `reserve({ maxJobs: 1 })` →
 *               `ack()`, one unary Reserve and one unary Ack per job, the harness's own
 *               reserve → ack loop made literally. per-client needs calls: per-client
 *               Workers would each lease a job ahead that only their own client can take.
 *   prefetch    auto (default, the SDK's) | 0 | 50 | 200 | 500 — the Worker's `prefetch`: jobs
 *               leased ahead beyond its slots (as graphile-worker's `localQueue.size`); `auto`
 *               holds about a second of work once the first runs finished. `sepp.prefetch`
 *               sets every variant; `<variant>.prefetch` (`sepp-pg.prefetch=500`) one, so a
 *               run can set it on `sepp-pg` and leave it at the default on `sepp-pg-base`.
 *   streams     default | 1 | 2 | 4 — the Worker's Work streams (`streams`; default: the SDK's
 *               one per 1,000 slots); `<variant>.streams` one variant, as for prefetch.
 */

type Variant = 'sepp' | 'sepp-base' | 'sepp-unary' | 'sepp-relaxed' | 'sepp-pg' | 'sepp-pg-base';

/**
 * `sepp-base` and `sepp-pg-base` run another tree's bundle (a checkout of main with
 * `npm run build` done), named by this variable, beside `sepp` and `sepp-pg`, so a change is measured against its base in one
 * interleaved run: `SEPP_BENCH_BASE_BUNDLE=/path/to/main/dist/sepp.cjs`.
 */
const baseBundleVariable = 'SEPP_BENCH_BASE_BUNDLE';

interface VariantSpec {
  readonly transport: 'stream' | 'unary';
  readonly durability: 'full' | 'relaxed';
  readonly path: string;
  readonly store: 'sqlite' | 'postgres';
  /** The bundle comes from SEPP_BENCH_BASE_BUNDLE, not this tree's dist/. */
  readonly baseBundle?: true;
}

const variants: Readonly<Record<Variant, VariantSpec>> = {
  sepp: { transport: 'stream', durability: 'full', path: 'streams', store: 'sqlite' },
  'sepp-base': {
    transport: 'stream',
    durability: 'full',
    path: 'streams, base bundle',
    store: 'sqlite',
    baseBundle: true,
  },
  'sepp-unary': { transport: 'unary', durability: 'full', path: 'unary calls', store: 'sqlite' },
  'sepp-relaxed': {
    transport: 'stream',
    durability: 'relaxed',
    path: 'streams, relaxed: no fsync',
    store: 'sqlite',
  },
  'sepp-pg': {
    transport: 'stream',
    durability: 'full',
    path: 'streams, PostgreSQL store',
    store: 'postgres',
  },
  'sepp-pg-base': {
    transport: 'stream',
    durability: 'full',
    path: 'streams, PostgreSQL store, base bundle',
    store: 'postgres',
    baseBundle: true,
  },
};

/** The bundle a variant runs. */
function bundleOf(spec: VariantSpec): string {
  if (spec.baseBundle !== true) return seppBundlePath;
  const path = process.env[baseBundleVariable];
  if (path === undefined || path === '') {
    throw new Error(
      `sepp-base and sepp-pg-base run the bundle named by ${baseBundleVariable}, which is not set`,
    );
  }
  return path;
}

/** The variable the sepp-pg server reads its PostgreSQL password from. */
const passwordVariable = 'SEPP_BENCH_POSTGRES_PASSWORD';

/** The job type every bench job carries; the Worker runs them all with its fallback handler. */
const jobType = 'bench';

class SeppQueueClient implements QueueClient {
  constructor(
    private readonly client: SeppClient,
    private readonly queue: string,
    private readonly pool: SeppWorkerPool | undefined,
    private readonly release: () => Promise<void>,
  ) {}

  async enqueue(payload: Buffer): Promise<void> {
    await this.client.enqueue(this.queue, jobType, payload);
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    const jobs: JobSpec[] = payloads.map((payload) => ({ queue: this.queue, type: jobType, payload }));
    const outcomes = await this.client.enqueueBatch(jobs);
    const refused = outcomes.find((o) => !o.ok);
    if (refused !== undefined && !refused.ok) {
      throw new Error(`sepp refused a job of the batch: ${refused.reason}: ${refused.message}`);
    }
  }

  private leaseOf(job: LeasedJob): Lease {
    return { ack: () => this.client.ack(job) };
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    if (this.pool !== undefined) return this.pool.reserve(waitMs);
    const [job] = await this.client.reserve({ queues: [this.queue], maxJobs: 1, waitMs: Math.round(waitMs) });
    return job === undefined ? null : this.leaseOf(job);
  }

  async reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    const jobs = await this.client.reserve({
      queues: [this.queue],
      maxJobs: max,
      waitMs: Math.round(waitMs),
    });
    if (jobs.length === 0) return null;
    return {
      count: jobs.length,
      ack: async () => {
        const results = await this.client.ackBatch(jobs);
        const failed = results.find((r) => r.outcome !== 'ok');
        if (failed !== undefined) throw new Error(`sepp AckBatch: ${failed.outcome}: ${failed.message}`);
      },
    };
  }

  close(): Promise<void> {
    return this.release();
  }
}

export function seppDriver(
  variant: Variant,
  settings: DriverSettings,
  postgres: PostgresPeerServer = new PostgresPeerServer(),
): SystemDriver {
  const spec = variants[variant];
  const connection = choice(settings, 'sepp.connection', ['shared', 'per-client'], 'shared');
  const drain = choice(settings, 'sepp.drain', ['worker', 'calls'], 'worker');
  const streamCounts = ['default', '1', '2', '4'] as const;
  const streamsChosen = choice(
    settings,
    `${variant}.streams`,
    streamCounts,
    choice(settings, 'sepp.streams', streamCounts, 'default'),
  );
  const streams = streamsChosen === 'default' ? undefined : Number(streamsChosen);
  const prefetches = ['auto', '0', '50', '200', '500'] as const;
  const prefetchChosen = choice(
    settings,
    `${variant}.prefetch`,
    prefetches,
    choice(settings, 'sepp.prefetch', prefetches, 'auto'),
  );
  const prefetch = prefetchChosen === 'auto' ? prefetchChosen : Number(prefetchChosen);
  if (connection === 'per-client' && drain === 'worker') {
    throw new Error(
      '--set sepp.connection=per-client needs --set sepp.drain=calls: a Worker per client leases jobs ' +
        'ahead that only its own client can take, which strands jobs at the end of a phase',
    );
  }
  let server: ServerProcess | undefined;
  let grpcAddress = '';
  let adminPort = 0;
  let version = '';
  let shared: SeppClient | undefined;
  let log: (message: string) => void = () => {};
  const pools = new Map<string, SeppWorkerPool>();

  const connect = () => SeppClient.connect(grpcAddress, { transport: spec.transport });

  return {
    id: variant,
    get label() {
      const on = spec.store === 'postgres' ? ` / PostgreSQL ${postgres.version}` : '';
      const ahead = `, prefetch ${prefetch}${streams === undefined ? '' : `, ${streams} Work stream${streams === 1 ? '' : 's'}`}`;
      return `${version || 'sepp'} (${spec.path}${ahead})${on}`;
    },
    durability:
      spec.store === 'postgres'
        ? 'fsync before ack (PostgreSQL synchronous_commit=on: each commit flushed before sepp answers)'
        : spec.durability === 'full'
          ? 'fsync before ack (durability full: SQLite fsyncs the WAL once per group commit)'
          : 'no fsync before ack (durability relaxed: synchronous=NORMAL, survives a process crash only)',
    batch: { enqueue: 'native', reserve: 'native', ack: 'native' },

    async start(ctx: StartContext) {
      log = ctx.log;
      const bundle = bundleOf(spec);
      if (spec.baseBundle !== true) ensureSeppBundle(ctx.log);
      version = commandOutput(process.execPath, [bundle, '--version']).replace(/ \(.*\)$/, '');
      const grpcPort = await ctx.freePort();
      adminPort = await ctx.freePort();
      grpcAddress = `127.0.0.1:${grpcPort}`;
      const store: string[] = [];
      let env: Record<string, string> | undefined;
      if (spec.store === 'postgres') {
        const cluster = await postgres.start();
        const database = await cluster.createDatabase('sepp');
        const config = join(ctx.dataDir, 'sepp.toml');
        writeFileSync(
          config,
          `[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\n` +
            `password_env = "${passwordVariable}"\n`,
        );
        store.push('--config', config);
        env = { [passwordVariable]: cluster.password };
      }
      server = await ctx.spawn({
        name: variant,
        command: process.execPath,
        ...(env === undefined ? {} : { env }),
        args: [
          // SEPP_BENCH_SERVER_CPU_PROF=DIR: each server writes its CPU profile there when it stops.
          ...(process.env.SEPP_BENCH_SERVER_CPU_PROF === undefined
            ? []
            : ['--cpu-prof', '--cpu-prof-dir', process.env.SEPP_BENCH_SERVER_CPU_PROF]),
          bundle,
          'serve',
          '--data-dir',
          ctx.dataDir,
          '--grpc-listen',
          grpcAddress,
          '--admin-listen',
          `127.0.0.1:${adminPort}`,
          '--durability',
          spec.durability,
          '--log-level',
          'warn',
          ...store,
        ],
        // Not the caller's directory: a sepp.toml lying there would change the settings.
        cwd: ctx.dataDir,
      });
      await ctx.waitForPort(grpcPort, 15_000);
      await ctx.waitForPort(adminPort, 15_000);
      if (connection === 'shared') {
        shared = connect();
        await shared.ready(10_000);
      }
    },

    async stop() {
      await Promise.all([...pools.values()].map((p) => p.close()));
      pools.clear();
      await shared?.close();
      shared = undefined;
      await server?.stop(10_000);
      server = undefined;
      if (spec.store === 'postgres') await postgres.stop();
    },

    serverPids: () => [...(server === undefined ? [] : [server.pid]), ...postgres.pids()],

    async createQueue(_name: string) {
      // sepp creates a queue on its first enqueue (engine.strict_queues is off by default).
    },

    async openClient(queue: string, role: ClientRole) {
      const own = shared === undefined ? connect() : undefined;
      const client = shared ?? own;
      if (client === undefined) throw new Error('sepp driver not started');
      await client.ready(10_000);
      let pool: SeppWorkerPool | undefined;
      if (role !== 'producer' && drain === 'worker') {
        pool = pools.get(queue) ?? new SeppWorkerPool(client, queue, log, prefetch, streams);
        pools.set(queue, pool);
        pool.join();
      }
      const joined = pool;
      return new SeppQueueClient(client, queue, pool, async () => {
        if (joined?.leave()) {
          pools.delete(queue);
          await joined.close();
        }
        await own?.close();
      });
    },

    describeSettings() {
      const drainText =
        drain === 'worker'
          ? spec.transport === 'stream'
            ? `drain = one SDK Worker per queue (concurrency = bench workers, ${streams === undefined ? 'one Work stream per 1,000 slots' : `${streams} Work stream${streams === 1 ? '' : 's'}`}; ` +
              'reserve() takes a pushed job, ack() ends its handler and waits for the durable ack)'
            : 'drain = one SDK Worker per queue (concurrency = bench workers; one unary Reserve long poll ' +
              'for its free slots, acks of one turn as one AckBatch; reserve()/ack() as for sepp)'
          : 'drain = reserve({maxJobs: 1}) → ack(), one unary Reserve and Ack per job';
      const enqueueText =
        spec.transport === 'stream'
          ? 'enqueue = SeppClient.enqueue(), coalesced per event-loop turn onto the Produce stream'
          : 'enqueue = SeppClient.enqueue(), coalesced per event-loop turn into one EnqueueBatch call';
      const served =
        spec.store === 'postgres'
          ? `[store] kind = "postgres" (pool_size 10) on ${postgres.describe()}`
          : `--durability ${spec.durability}`;
      return (
        `node ${process.version} dist/sepp.cjs serve ${served}; ` +
        `@sepp-queue/client transport=${spec.transport}, connection=${connection} (one SeppClient ` +
        `${connection === 'shared' ? 'for all clients' : 'per client'}); ${enqueueText}; ${drainText}; ` +
        `W3: enqueueBatch, reserve({maxJobs}), ackBatch; @grpc/grpc-js ${packageVersion('@grpc/grpc-js')}`
      );
    },

    async counters() {
      const response = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
      if (!response.ok) throw new Error(`sepp /metrics answered ${response.status}`);
      const text = await response.text();
      return {
        commits: sumSeries(text, 'sepp_commit_batch_size_count', 'outcome="ok"'),
        operations: sumSeries(text, 'sepp_commit_batch_size_sum', 'outcome="ok"'),
        jobs_enqueued: sumSeries(text, 'sepp_jobs_enqueued_total'),
        jobs_reserved: sumSeries(text, 'sepp_jobs_reserved_total'),
        jobs_acked: sumSeries(text, 'sepp_jobs_acked_total'),
      };
    },
  };
}
