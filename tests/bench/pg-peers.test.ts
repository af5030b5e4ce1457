/**
 * The benchmark's PostgreSQL peers (bench/systems/pgboss.ts, graphile-worker.ts) drain
 * exactly what was enqueued, one at a time and in batches, and an ack resolves only once
 * the peer's own completion is in the database: for graphile-worker, whose runner does not
 * wait for its completion DELETE, that is what the pool's watch on the DELETEs is for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { freePort, waitForPort } from '../../bench/lib/net.ts';
import { graphileDriver } from '../../bench/systems/graphile-worker.ts';
import { pgbossDriver } from '../../bench/systems/pgboss.ts';
import { PostgresPeerServer } from '../../bench/systems/postgres-peer.ts';
import type { StartContext, SystemDriver } from '../../bench/systems/types.ts';

/** What the drivers logged (graphile-worker's `diagnose` lines). */
const logged: string[] = [];

const context: StartContext = {
  dataDir: '/nonexistent',
  freePort,
  spawn: () => Promise.reject(new Error('the PostgreSQL peers start their server themselves')),
  waitForPort,
  log: (message) => logged.push(message),
};

/**
 * How long a drain may take: a reserve that waited 500 ms for nothing ends it once no job is
 * pending, or after this long (the counts below then fail, naming what was left).
 */
const drainMs = 60_000;

async function exercise(driver: SystemDriver, pending: () => Promise<number>): Promise<void> {
  const payload = Buffer.alloc(256, 'x');
  await driver.createQueue('q1');
  const producer = await driver.openClient('q1', 'producer');
  for (let i = 0; i < 10; i++) await producer.enqueue(payload);
  await producer.enqueueBatch(Array.from({ length: 30 }, () => payload));
  await producer.close();
  assert.equal(await pending(), 40);

  const workers = await Promise.all([driver.openClient('q1', 'worker'), driver.openClient('q1', 'worker')]);
  // Every resolved ack is committed: what is still pending never exceeds the jobs not
  // acked yet (an ack that resolved before the peer's completion committed would).
  let acked = 0;
  const deadline = Date.now() + drainMs;
  await Promise.all(
    workers.map(async (worker) => {
      for (;;) {
        const lease = await worker.reserve(500);
        if (lease === null) {
          if ((await pending()) === 0 || Date.now() > deadline) return;
          continue; // Not handed one yet (a runner starting at load 24 took longer than 500 ms).
        }
        await lease.ack(false);
        acked++;
        const left = 40 - acked;
        const stillPending = await pending();
        assert.ok(stillPending <= left, `${stillPending} jobs pending after ${acked} acks`);
      }
    }),
  );
  assert.equal(await pending(), 0);
  assert.equal(acked, 40);
  await Promise.all(workers.map((w) => w.close()));

  await driver.createQueue('q2');
  const batchProducer = await driver.openClient('q2', 'producer');
  await batchProducer.enqueueBatch(Array.from({ length: 50 }, () => payload));
  await batchProducer.close();
  const batchWorker = await driver.openClient('q2', 'worker');
  let batched = 0;
  const batchDeadline = Date.now() + drainMs;
  for (;;) {
    const batch = await batchWorker.reserveBatch(20, 500);
    if (batch === null) {
      if ((await pending()) === 0 || Date.now() > batchDeadline) break;
      continue;
    }
    assert.ok(batch.count >= 1 && batch.count <= 20, `a batch of ${batch.count}`);
    await batch.ack();
    batched += batch.count;
    assert.equal(await pending(), 50 - batched);
  }
  assert.equal(await pending(), 0);
  assert.equal(batched, 50);
  await batchWorker.close();
}

/**
 * Counts with `sql` on the peer's database, over a connection opened beforehand, so that
 * the count follows an ack's resolution by one round trip: an ack resolved ahead of its
 * commit is seen.
 */
async function counter(server: PostgresPeerServer, sql: string) {
  const client = new pg.Client(server.running.connection());
  await client.connect();
  return {
    count: async () => Number((await client.query<{ n: string }>(sql)).rows[0]?.n),
    close: () => client.end(),
  };
}

/** Starts the peer on its own PostgreSQL, drains as above, counting pending jobs with `pendingSql`. */
async function drainsExactly(
  makeDriver: (settings: ReadonlyMap<string, string>, server: PostgresPeerServer) => SystemDriver,
  pendingSql: string,
  settings: ReadonlyMap<string, string> = new Map(),
): Promise<string> {
  const server = new PostgresPeerServer();
  const driver = makeDriver(settings, server);
  try {
    await driver.start(context);
    const pending = await counter(server, pendingSql);
    await exercise(driver, pending.count);
    await pending.close();
    return driver.describeSettings();
  } finally {
    await driver.stop();
  }
}

test('pg-boss: exactly the enqueued jobs are drained, single and batched, each ack after its complete', async () => {
  const settings = await drainsExactly(
    pgbossDriver,
    "SELECT count(*) AS n FROM pgboss.job WHERE state <> 'completed'",
  );
  assert.match(settings, /fsync=on synchronous_commit=on/);
});

test('graphile-worker: exactly the enqueued jobs are drained, single and batched, each ack after its DELETE', async () => {
  // With the jobs table analyzed before each drain, and that logged (the drain-modes study).
  const settings = await drainsExactly(
    graphileDriver,
    'SELECT count(*) AS n FROM graphile_worker._private_jobs',
    new Map([
      ['graphile.analyze', 'on'],
      ['graphile.diagnose', 'on'],
    ]),
  );
  assert.match(settings, /localQueue.size=500/);
  assert.match(settings, /ANALYZE of the jobs table before each drain/);
  const analyzed = logged.filter((line) => line.startsWith('graphile diagnose after ANALYZE: '));
  // Queue q1's drain found its 40 jobs, q2's its 50.
  assert.equal(analyzed.length, 2, logged.join('\n'));
  assert.match(analyzed[0] ?? '', /"reltuples":"40".*"n_mod_since_analyze":"0"/);
  assert.match(analyzed[1] ?? '', /"reltuples":"50"/);
});
