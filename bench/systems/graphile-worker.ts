import type { Logger, WorkerUtils } from 'graphile-worker';
import { packageVersion } from '../lib/versions.ts';
import { GraphileWorkerPool, type RunFunction } from './graphile-worker-pool.ts';
import { PayloadText } from './payload-text.ts';
import { PostgresPeerServer } from './postgres-peer.ts';
import { choice } from './settings.ts';
import type {
  ClientRole,
  DriverSettings,
  Lease,
  LeaseBatch,
  QueueClient,
  StartContext,
  SystemDriver,
} from './types.ts';

/**
 * graphile-worker 0.18 on its own fresh PostgreSQL 15, with the server settings every
 * PostgreSQL peer shares (tests/helpers/postgres.ts: fsync on, synchronous_commit on).
 * The harness's queue is a graphile-worker task identifier (jobs without a named queue,
 * which graphile-worker runs in parallel; a named queue would serialise them).
 *
 * How the harness's operations map onto graphile-worker:
 *   enqueue   `WorkerUtils.addJob(task, { p })`: one call of the `add_job` SQL function.
 *   reserve   a job handed to the task handler of graphile-worker's runner (`run()`), one
 *             runner per queue; see graphile-worker-pool.ts for how the push-based runner
 *             meets the pull interface and what that costs it.
 *   ack       the handler resolves; the ack resolves when graphile-worker's DELETE of the
 *             job has committed (graphile-worker itself does not wait for it).
 *   W3        `WorkerUtils.addJobs(specs)` (one `add_jobs` call, native); reserve and ack
 *             are native inside the runner (its local queue locks `localQueue.size` jobs
 *             per statement, its completions of one turn go out as one DELETE); the
 *             harness's batch of up to 100 is assembled from the jobs the runner handed
 *             over together. graphile-worker's "batch jobs" (one job whose payload is an
 *             array) are a different thing and are not used.
 *
 * Runner settings are those of graphile-worker's own performance page, its fastest
 * documented configuration: `localQueue: { size: 500 }` (jobs locked and fetched ahead in
 * one statement), `completeJobBatchDelay: 0` and `failJobBatchDelay: 0` (completions of
 * one event-loop turn batched into one statement), prepared statements on (the default),
 * `concurrency` = bench workers × jobs per reserve. Success logging is off
 * (`NO_LOG_SUCCESS=1`, which graphile-worker reads when it is first imported, and a
 * logger that drops every line).
 *
 * Settings (`--set graphile.<key>=<value>`):
 *   pool          10 (default) | 20 | 50 — `max` connections of each pg pool (the producers'
 *                 WorkerUtils, and each queue's runner).
 *   localqueue    500 (default) | 50 | off — the runner's `localQueue.size`; `off` fetches
 *                 one job per statement (graphile-worker's default).
 *   analyze       off (default) | on | never — `on`: `ANALYZE` the jobs table before a drain's
 *                 clock starts; `never`: autovacuum (and so auto-analyze) off for the jobs
 *                 table, so the plans rest on no statistics; `off`: whatever autovacuum does.
 *   diagnose      off (default) | on — log the jobs table's statistics and checkpoints before
 *                 and after each drain, and the plans of the runner's first job fetch
 *                 (custom and generic), as bench/results/graphile-drain-modes-2026-12-07.md
 *                 used them.
 *
 * Server CPU is the postmaster and every backend; peak RSS is the postmaster's alone.
 */

type GraphileModule = typeof import('graphile-worker');

class GraphileClient implements QueueClient {
  private readonly payloadText = new PayloadText();

  constructor(
    private readonly utils: WorkerUtils,
    private readonly task: string,
    private readonly pool: GraphileWorkerPool | undefined,
    private readonly leave: () => Promise<void>,
  ) {}

  private payload(payload: Buffer): { p: string } {
    return { p: this.payloadText.of(payload) };
  }

  private need(): GraphileWorkerPool {
    if (this.pool === undefined) throw new Error('graphile-worker client opened without the worker role');
    return this.pool;
  }

  async enqueue(payload: Buffer): Promise<void> {
    await this.utils.addJob(this.task, this.payload(payload));
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    await this.utils.addJobs(payloads.map((p) => ({ identifier: this.task, payload: this.payload(p) })));
  }

  reserve(waitMs: number): Promise<Lease | null> {
    return this.need().reserve(waitMs);
  }

  reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    return this.need().reserveBatch(max, waitMs);
  }

  close(): Promise<void> {
    return this.leave();
  }
}

/** `postgres` is injectable so a test can reach the peer's database. */
export function graphileDriver(
  settings: DriverSettings,
  postgres: PostgresPeerServer = new PostgresPeerServer(),
): SystemDriver {
  const poolMax = Number(choice(settings, 'graphile.pool', ['10', '20', '50'], '10'));
  const localQueue = choice(settings, 'graphile.localqueue', ['500', '50', 'off'], '500');
  const analyze = choice(settings, 'graphile.analyze', ['off', 'on', 'never'], 'off');
  const diagnose = choice(settings, 'graphile.diagnose', ['off', 'on'], 'off') === 'on';
  const pools = new Map<string, GraphileWorkerPool>();
  const beforeDrain = new Map<string, Promise<void>>();
  let graphile: GraphileModule | undefined;
  let utils: WorkerUtils | undefined;
  let logger: Logger | undefined;
  let log: (message: string) => void = () => {};

  const preset = {
    worker: {
      ...(localQueue === 'off' ? {} : { localQueue: { size: Number(localQueue) } }),
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  };

  async function prepareDrain(workerUtils: WorkerUtils): Promise<void> {
    if (diagnose) log(`graphile diagnose before drain: ${await jobsTableState(workerUtils)}`);
    if (analyze !== 'on') return;
    await workerUtils.withPgClient((c) => c.query('analyze graphile_worker._private_jobs'));
    if (diagnose) log(`graphile diagnose after ANALYZE: ${await jobsTableState(workerUtils)}`);
  }

  return {
    id: 'graphile',
    get label() {
      return `graphile-worker ${packageVersion('graphile-worker')} / PostgreSQL ${postgres.version}`;
    },
    durability: 'fsync before ack (fsync=on, synchronous_commit=on)',
    batch: { enqueue: 'native', reserve: 'native', ack: 'native' },

    async start(ctx: StartContext) {
      log = ctx.log;
      // Read by graphile-worker when its modules load, hence the import here and not above.
      process.env.NO_LOG_SUCCESS ??= '1';
      graphile = await import('graphile-worker');
      logger = new graphile.Logger(() => () => {});
      const cluster = await postgres.start();
      utils = await graphile.makeWorkerUtils({
        connectionString: cluster.url('postgres'),
        maxPoolSize: poolMax,
        logger,
      });
      await utils.migrate();
      if (analyze === 'never') {
        await utils.withPgClient((c) =>
          c.query('alter table graphile_worker._private_jobs set (autovacuum_enabled = false)'),
        );
      }
    },

    async stop() {
      for (const pool of pools.values()) await pool.close();
      pools.clear();
      await utils?.release();
      utils = undefined;
      await postgres.stop();
    },

    serverPids: () => postgres.pids(),

    async createQueue(_name: string) {
      // A task identifier exists once a job names it.
    },

    async openClient(queue: string, role: ClientRole) {
      const workerUtils = needed(utils, 'WorkerUtils');
      if (role === 'producer') return new GraphileClient(workerUtils, queue, undefined, async () => {});
      const module = needed(graphile, 'graphile-worker');
      const cluster = postgres.running;
      let pool = pools.get(queue);
      if (pool === undefined) {
        const run: RunFunction = (options) => module.run(options);
        pool = new GraphileWorkerPool(queue, {
          run,
          pgPool: { ...cluster.connection('postgres'), max: poolMax },
          logger: needed(logger, 'logger'),
          preset,
          report: log,
          ...(diagnose
            ? { onFirstFetch: (text, values) => void explainFetch(workerUtils, text, values, log) }
            : {}),
        });
        pools.set(queue, pool);
        beforeDrain.set(queue, prepareDrain(workerUtils));
      }
      pool.join();
      // Every worker of the queue waits for the statistics and ANALYZE before its clock starts.
      await beforeDrain.get(queue);
      const joined = pool;
      return new GraphileClient(workerUtils, queue, joined, async () => {
        if (joined.leave()) {
          pools.delete(queue);
          beforeDrain.delete(queue);
          await joined.close();
          if (diagnose) log(`graphile diagnose after drain: ${await jobsTableState(workerUtils)}`);
        }
      });
    },

    describeSettings() {
      return (
        `${postgres.describe()}; ` +
        `graphile-worker ${packageVersion('graphile-worker')}, pg ${packageVersion('pg')}; ` +
        `pool max=${poolMax}, localQueue.size=${localQueue}, completeJobBatchDelay=0, failJobBatchDelay=0, ` +
        (analyze === 'on' ? 'ANALYZE of the jobs table before each drain, ' : '') +
        (analyze === 'never' ? 'autovacuum off for the jobs table, ' : '') +
        'concurrency=bench workers x jobs per reserve, NO_LOG_SUCCESS=1; ack waits for the DELETE'
      );
    },
  };
}

function needed<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`graphile-worker driver: ${what} is not started`);
  return value;
}

/** The planner's and the statistics system's view of the jobs table, and the checkpoints so far. */
async function jobsTableState(utils: WorkerUtils): Promise<string> {
  return utils.withPgClient(async (client) => {
    const { rows } = await client.query<Record<string, unknown>>(
      `select c.reltuples::bigint as reltuples, c.relpages, s.n_live_tup, s.n_dead_tup,
              s.n_mod_since_analyze, s.n_ins_since_vacuum, s.analyze_count, s.autoanalyze_count,
              s.autovacuum_count, to_char(s.last_autoanalyze, 'HH24:MI:SS.MS') as last_autoanalyze,
              to_char(now(), 'HH24:MI:SS.MS') as now,
              s.seq_scan, s.seq_tup_read, s.idx_scan, s.idx_tup_fetch,
              io.heap_blks_hit + coalesce(io.heap_blks_read, 0) as heap_blks,
              io.idx_blks_hit + coalesce(io.idx_blks_read, 0) as idx_blks,
              b.checkpoints_timed, b.checkpoints_req
         from pg_stat_user_tables s join pg_class c on c.oid = s.relid
         join pg_statio_user_tables io on io.relid = s.relid, pg_stat_bgwriter b
        where s.schemaname = 'graphile_worker' and s.relname = '_private_jobs'`,
    );
    return JSON.stringify(rows[0] ?? {});
  });
}

/** EXPLAIN of the runner's job fetch with its own values: the custom plan and the generic one. */
async function explainFetch(
  utils: WorkerUtils,
  text: string,
  values: readonly unknown[],
  log: (message: string) => void,
): Promise<void> {
  try {
    await utils.withPgClient(async (client) => {
      const literals = values.map((v) =>
        client.escapeLiteral(Array.isArray(v) ? `{${v.map(String).join(',')}}` : String(v)),
      );
      const plan = async (mode: string): Promise<string> => {
        await client.query(`set plan_cache_mode = ${mode}`);
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(
          `explain execute sepp_bench_fetch(${literals.join(', ')})`,
        );
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      };
      await client.query(`prepare sepp_bench_fetch as ${text}`);
      try {
        log(`graphile diagnose fetch plan (custom):\n${await plan('force_custom_plan')}`);
        log(`graphile diagnose fetch plan (generic):\n${await plan('force_generic_plan')}`);
      } finally {
        await client.query('deallocate sepp_bench_fetch');
        await client.query('reset plan_cache_mode');
      }
    });
  } catch (error) {
    log(`graphile diagnose: EXPLAIN failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
