import { setTimeout as sleep } from 'node:timers/promises';
import { PgBoss } from 'pg-boss';
import { packageVersion } from '../lib/versions.ts';
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
 * pg-boss 12 on its own fresh PostgreSQL 15 (tests/helpers/postgres.ts: every PostgreSQL
 * peer runs on the same server settings, fsync on and synchronous_commit on, so a `send`
 * or `complete` resolves after its commit is on disk). One `PgBoss` instance and its pg
 * pool serve every producer and worker, as one application process would.
 *
 * How the harness's operations map onto pg-boss:
 *   enqueue       `send(queue, { p })`: one INSERT (a statement of its own, so a commit).
 *   reserve       `fetch(queue, { batchSize: 1 })`: one UPDATE … FOR UPDATE SKIP LOCKED that
 *                 moves a job to `active`. pg-boss's `fetch` does not wait, so an empty fetch
 *                 is retried every `pollMs` until the harness's wait ends; `work()` would
 *                 poll at least every 0.5 s (pollingIntervalSeconds ≥ 0.5), which only W2's
 *                 latency would notice, since W1 and W3 drain a full queue.
 *   ack           `complete(queue, id)`: one UPDATE to `completed` (the row stays until
 *                 maintenance deletes it, deleteAfterSeconds, 7 days by default).
 *   W3            `insert(queue, jobs)` (one multi-row INSERT), `fetch` with `batchSize`,
 *                 `complete(queue, ids)` (one UPDATE for the batch): native on all three.
 *
 * The queue is created with the `standard` policy (no singleton rules to check) and
 * `partition: false` (the shared job table, pg-boss's default). The instance runs with
 * `schedule: false` (no cron is used); maintenance (`supervise`) keeps its default, as in
 * production. LISTEN/NOTIFY (`useListenNotify`) is off: `fetch` does not use it.
 *
 * Settings (`--set pgboss.<key>=<value>`):
 *   pool      10 (default) | 20 | 50 — the pg pool's `max` connections. 50 producers share
 *             them; PostgreSQL groups concurrent commits into one WAL flush, so more
 *             connections can mean more jobs per fsync, at the cost of more backends on two
 *             cores.
 *   pollms    25 (default) | 5 | 100 — the wait between empty fetches in `reserve`.
 *
 * Server CPU is the postmaster and every backend (their CPU is counted live and once
 * reaped); peak RSS is the postmaster's alone, since the backends share its buffers.
 */

type JobData = { p: string };

class PgBossClient implements QueueClient {
  private readonly payloadText = new PayloadText();

  constructor(
    private readonly boss: PgBoss,
    private readonly queue: string,
    private readonly pollMs: number,
  ) {}

  private data(payload: Buffer): JobData {
    return { p: this.payloadText.of(payload) };
  }

  async enqueue(payload: Buffer): Promise<void> {
    await this.boss.send(this.queue, this.data(payload));
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    await this.boss.insert(
      this.queue,
      payloads.map((p) => ({ data: this.data(p) })),
    );
  }

  /** Fetches up to `max` jobs, retrying an empty fetch every pollMs until `waitMs` passed. */
  private async fetch(max: number, waitMs: number): Promise<string[]> {
    const deadline = performance.now() + waitMs;
    for (;;) {
      const jobs = await this.boss.fetch<JobData>(this.queue, { batchSize: max });
      if (jobs.length > 0) return jobs.map((j) => j.id);
      if (performance.now() >= deadline) return [];
      await sleep(this.pollMs);
    }
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    const [id] = await this.fetch(1, waitMs);
    if (id === undefined) return null;
    return { ack: async () => void (await this.complete([id])) };
  }

  async reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    const ids = await this.fetch(max, waitMs);
    if (ids.length === 0) return null;
    return { count: ids.length, ack: () => this.complete(ids) };
  }

  private async complete(ids: string[]): Promise<void> {
    const response: object = await this.boss.complete(this.queue, ids);
    // Its type declares no fields; at run time the response counts the rows it changed.
    const affected = 'affected' in response ? response.affected : undefined;
    if (affected !== ids.length)
      throw new Error(`pg-boss completed ${String(affected)} of ${ids.length} jobs`);
  }

  async close(): Promise<void> {
    // The instance and its pool are shared; the driver's stop() closes them.
  }
}

/** `postgres` is injectable so a test can reach the peer's database. */
export function pgbossDriver(
  settings: DriverSettings,
  postgres: PostgresPeerServer = new PostgresPeerServer(),
): SystemDriver {
  const poolMax = Number(choice(settings, 'pgboss.pool', ['10', '20', '50'], '10'));
  const pollMs = Number(choice(settings, 'pgboss.pollms', ['25', '5', '100'], '25'));
  let boss: PgBoss | undefined;
  let log: (message: string) => void = () => {};

  return {
    id: 'pgboss',
    get label() {
      return `pg-boss ${packageVersion('pg-boss')} / PostgreSQL ${postgres.version}`;
    },
    durability: 'fsync before ack (fsync=on, synchronous_commit=on)',
    batch: { enqueue: 'native', reserve: 'native', ack: 'native' },

    async start(ctx: StartContext) {
      log = ctx.log;
      const cluster = await postgres.start();
      const started = new PgBoss({
        ...cluster.connection('postgres'),
        max: poolMax,
        schema: 'pgboss',
        schedule: false,
      });
      // An EventEmitter without an `error` listener would throw; the run should show it instead.
      started.on('error', (error) => log(`pg-boss: ${error.message}`));
      boss = started;
      await started.start();
    },

    async stop() {
      await boss?.stop({ graceful: false, close: true, timeout: 5000 });
      boss = undefined;
      await postgres.stop();
    },

    serverPids: () => postgres.pids(),

    async createQueue(name: string) {
      await need(boss).createQueue(name, { policy: 'standard' });
    },

    async openClient(queue: string, _role: ClientRole) {
      return new PgBossClient(need(boss), queue, pollMs);
    },

    describeSettings() {
      return (
        `${postgres.describe()}; ` +
        `pg-boss ${packageVersion('pg-boss')}, pg ${packageVersion('pg')}; one PgBoss instance, ` +
        `pool max=${poolMax}, schedule=false, supervise=default, queue policy=standard, ` +
        `reserve=fetch(batchSize) polled every ${pollMs} ms when empty, ack=complete(ids)`
      );
    },
  };
}

function need(boss: PgBoss | undefined): PgBoss {
  if (boss === undefined) throw new Error('pg-boss is not started');
  return boss;
}
