/**
 * A sepp server killed with SIGKILL while two share one PostgreSQL database
 * (issue 37): two `sepp serve` processes, a producer and a worker on each,
 * and a worker of the doomed server holding leases it never settles. Before
 * the kill, a cancel made through the doomed server reaches a worker
 * connected to the survivor. After the kill the survivor alone: every job
 * whose enqueue was acknowledged is delivered and acknowledged, the killed
 * server's leases run out and are leased again (attempt 2) by the
 * survivor's worker, no lease of a job is handed out twice, and counts
 * agree with the rows.
 *
 * Real time (leases must run out on real servers), bounded: about 15 s.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LeasedJob, SeppClient } from '../../clients/typescript/src/index.ts';
import { within } from '../helpers/bounded.ts';
import { useCluster } from '../helpers/postgres.ts';
import { countMismatches } from '../helpers/postgres-counts.ts';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.ts';

const queue = 'load';
const leaseMs = 2000;
const passwordVariable = 'SEPP_KILL_TEST_POSTGRES_PASSWORD';

const postgres = useCluster('kill');
let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-pg-kill-'));
});

after(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/*
 * Every wait here that could hang is bounded: the SDK's calls by their deadlines (10 s by
 * default), the rest by helpers/bounded.ts, which fails naming what did not happen.
 */

function startServer(name: string, config: string): Promise<ServerProcess> {
  const started = startServerProcess(join(dir, name), ['--config', config], {
    env: { [passwordVariable]: postgres.cluster.password },
  });
  return within(started, `server ${name} started`, 60_000);
}

/** What the clients saw: acknowledged enqueues, deliveries (id → attempts) and acknowledged acks. */
class Ledger {
  readonly enqueued = new Set<string>();
  readonly deliveries = new Map<string, number[]>();
  readonly acked = new Set<string>();

  delivered(jobs: readonly LeasedJob[]): void {
    for (const job of jobs)
      this.deliveries.set(job.id, [...(this.deliveries.get(job.id) ?? []), job.attempt]);
  }
}

/** Enqueues batches of 20 until `stop`; only accepted answers count as acknowledged. */
async function produce(client: SeppClient, ledger: Ledger, stop: () => boolean): Promise<void> {
  for (let i = 0; !stop(); i++) {
    let outcomes: Awaited<ReturnType<SeppClient['enqueueBatch']>>;
    try {
      outcomes = await client.enqueueBatch(
        Array.from({ length: 20 }, (_, j) => ({ queue, type: 'w1', payload: `job ${i}-${j}` })),
        { deadlineMs: 5000 },
      );
    } catch {
      return; // Its server is gone: what it did not answer was never acknowledged.
    }
    for (const outcome of outcomes) if (outcome.ok) ledger.enqueued.add(outcome.id);
    await sleep(20);
  }
}

/** Leases and acknowledges until `stop`; an ack counts once its answer says ok. */
async function work(
  client: SeppClient,
  ledger: Ledger,
  workerId: string,
  stop: () => boolean,
): Promise<void> {
  while (!stop()) {
    let jobs: LeasedJob[];
    try {
      jobs = await client.reserve({
        queues: [queue],
        maxJobs: 20,
        leaseMs,
        waitMs: 200,
        workerId,
        deadlineMs: 5000,
      });
    } catch {
      return;
    }
    ledger.delivered(jobs);
    if (jobs.length === 0) continue;
    try {
      const results = await client.ackBatch(jobs, { deadlineMs: 5000 });
      results.forEach((result, i) => {
        if (result.outcome === 'ok') ledger.acked.add(jobs[i]!.id);
      });
    } catch {
      return;
    }
  }
}

async function countsOf(client: SeppClient) {
  return (await client.listQueues()).find((q) => q.name === queue)?.counts;
}

test('kill -9 of one of two sepp servers under load: nothing acknowledged lost, its leases delivered again', {
  timeout: 120_000,
}, async () => {
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    `[store]\nkind = "postgres"\nurl = "${postgres.cluster.urlWithoutPassword(postgres.database)}"\npassword_env = "${passwordVariable}"\nschema = "kill"\n`,
  );
  const doomed = await startServer('a', config);
  const survivor = await startServer('b', config);
  const a = SeppClient.connect(`127.0.0.1:${doomed.port}`);
  const b = SeppClient.connect(`127.0.0.1:${survivor.port}`);
  const ledger = new Ledger();
  try {
    // A cancel made through a reaches the worker that holds the job through b.
    const { id: stopId } = await a.enqueue('stop', 'long', 'x');
    let told: () => void = () => {};
    const cancelSeen = new Promise<void>((resolve) => {
      told = resolve;
    });
    const holder = b.worker({
      queues: ['stop'],
      workerId: 'holder',
      handlers: {
        long: (_job, signal) =>
          new Promise<void>((resolve) => {
            signal.addEventListener('abort', () => {
              told();
              resolve();
            });
          }),
      },
    });
    for (let i = 0; (await a.getJob(stopId)).state !== 'leased'; i++) {
      assert.ok(i < 200, 'the worker on b leases the job');
      await sleep(25);
    }
    await a.cancelJob(stopId);
    await within(cancelSeen, 'the cancel made through a reaching the worker on b', 10_000);
    await within(holder.close(), 'the worker on b closed');

    // Load on both servers.
    let stopProducing = false;
    let stopWorking = false;
    const producers = [produce(a, ledger, () => stopProducing), produce(b, ledger, () => stopProducing)];
    const workers = [
      work(a, ledger, 'worker-a', () => stopWorking),
      work(b, ledger, 'worker-b', () => stopWorking),
    ];
    await sleep(1500);
    // A worker of a takes leases it never settles: they are a's when it dies.
    // The two workers may have emptied the queue at this moment: wait for jobs until 10 are held.
    const held: Awaited<ReturnType<typeof a.reserve>> = [];
    for (let i = 0; held.length < 10 && i < 100; i++) {
      held.push(
        ...(await a.reserve({
          queues: [queue],
          maxJobs: 10 - held.length,
          leaseMs,
          waitMs: 200,
          workerId: 'held',
        })),
      );
    }
    assert.equal(held.length, 10, 'the held leases');
    ledger.delivered(held);
    await sleep(500);
    const code = await within(doomed.stop('SIGKILL'), 'the kill -9 of server a');
    assert.equal(code, null, 'killed by a signal');
    const killedAt = performance.now();
    // The survivor's producer and worker go on; a's stop by themselves.
    await sleep(leaseMs + 2000);
    stopProducing = true;
    await within(Promise.all(producers), 'the producers stopped');
    // Drain: b's worker until nothing is ready or leased.
    for (let i = 0; ; i++) {
      const counts = await countsOf(b);
      if (counts?.ready === 0 && counts.leased === 0) break;
      assert.ok(i < 300, `the survivor drains the queue: ${JSON.stringify(counts)}`);
      await sleep(100);
    }
    stopWorking = true;
    await within(Promise.all(workers), 'the workers stopped');
    const drainedAfterMs = Math.round(performance.now() - killedAt);

    const lost = [...ledger.enqueued].filter((id) => !ledger.deliveries.has(id));
    const heldAgain = held.filter((job) => ledger.deliveries.get(job.id)?.includes(job.attempt + 1));
    const twice = [...ledger.deliveries].filter(([, attempts]) => new Set(attempts).size !== attempts.length);
    const neverAcked = [...ledger.enqueued].filter((id) => !ledger.acked.has(id));
    console.log(
      `kill -9 of 1 of 2 servers: ${ledger.enqueued.size} enqueues acknowledged, ${ledger.acked.size} acks ` +
        `acknowledged, ${heldAgain.length}/${held.length} held leases delivered again, ${lost.length} lost, ` +
        `${twice.length} leased twice with one attempt; drained ${drainedAfterMs} ms after the kill`,
    );
    assert.deepEqual(lost, [], 'every acknowledged enqueue was delivered');
    assert.deepEqual(twice, [], 'no attempt was handed out twice');
    assert.equal(
      heldAgain.length,
      held.length,
      "every lease of the killed server's worker was delivered again",
    );
    // An ack a sent whose answer the kill swallowed may have committed (the job is gone) or
    // not (it was delivered again and acked by b): either way nothing is left.
    for (const id of neverAcked) {
      const job = await b.getJob(id).catch(() => undefined);
      assert.ok(job === undefined || job.state === 'completed', `job ${id} ended ${job?.state}`);
    }
    const counts = await countsOf(b);
    assert.deepEqual([counts?.ready, counts?.leased, counts?.scheduled, counts?.dead], [0, 0, 0, 0]);
    assert.deepEqual(await mismatches(), [], 'counts = rows');
  } finally {
    await within(Promise.all([a.close(), b.close()]), 'the clients closed');
    await within(Promise.all([doomed.stop('SIGKILL'), survivor.stop('SIGKILL')]), 'both servers ended');
  }
});

/** counts = rows, read through the Store interface on the schema. */
const mismatches = () => countMismatches(postgres.cluster, postgres.database, 'kill');
