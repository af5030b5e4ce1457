/**
 * Failover of the PostgreSQL primary under load (issue 38; docs/postgres.md, "Failover"):
 * on loopback, a primary and a streaming-replication standby started by the test, two
 * sepp servers with the multi-host URL (`target_session_attrs=read-write`), producers
 * and workers through the SDK (its enqueues retried after UNAVAILABLE with the SDK's own
 * idempotency key). At a random moment the primary is killed with SIGKILL and the standby
 * promoted (`pg_ctl promote`); the servers find the new primary by themselves. Then the
 * queue is drained and counted: acknowledged enqueues missing, acknowledged acks whose job
 * was delivered again, jobs stored twice (a retry that duplicated), and the RTO (from the
 * kill to the first enqueue accepted after the promotion).
 *
 * With a synchronous standby every round must lose nothing and redeliver nothing
 * acknowledged; with an asynchronous one the rounds report what was lost (the documented
 * contrast): the primary's WAL sender is stopped for SEPP_FAILOVER_ASYNC_STALL_MS (default
 * 1000) before the kill, as a slow network would hold the standby back (on loopback it
 * keeps up).
 * SEPP_FAILOVER_ROUNDS (default 1) and SEPP_FAILOVER_ASYNC_ROUNDS (default 1) in the system
 * tier; `npm run test:long` runs 5 and 3. Real time: about 20 s a round on a quiet 2-core
 * machine, of which the two clusters' start and removal take about half (the standby's
 * `pg_basebackup` asks for a fast checkpoint: the spread one took 90 s of each round).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LeasedJob, SeppClient } from '../../clients/typescript/src/index.ts';
import { within } from '../helpers/bounded.ts';
import { type PostgresCluster, startPostgres } from '../helpers/postgres.ts';
import { countMismatches } from '../helpers/postgres-counts.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const syncRounds = Number(process.env.SEPP_FAILOVER_ROUNDS ?? 1);
const asyncRounds = Number(process.env.SEPP_FAILOVER_ASYNC_ROUNDS ?? 1);
/**
 * Asynchronous rounds: how long the primary's WAL sender is stopped (SIGSTOP) just before
 * the kill, so the standby lags as it would on a slow network (on loopback it does not).
 */
const asyncStallMs = Number(process.env.SEPP_FAILOVER_ASYNC_STALL_MS ?? 1000);
const queue = 'load';
const leaseMs = 2000;
/** Each producer's acknowledged enqueues after the promotion before the load stops. */
const enqueuesAfterPromotion = 20;

interface Round {
  mode: 'synchronous' | 'asynchronous';
  acknowledgedEnqueues: number;
  missing: number;
  acknowledgedAcks: number;
  redeliveredAfterAck: number;
  duplicates: number;
  rtoMs: number;
  reported: string;
}

/** Everything the clients saw, with the time (performance.now) each answer came. */
class Ledger {
  readonly enqueued = new Map<string, { payload: string; atMs: number }>();
  /** Per producer, its acknowledged enqueues after the promotion (set once it is known). */
  readonly enqueuedAfter = new Map<string, number>();
  promotedAt = Number.POSITIVE_INFINITY;
  readonly deliveries: { id: string; payload: string; atMs: number }[] = [];
  readonly acked = new Map<string, number>();
}

async function produce(client: SeppClient, name: string, ledger: Ledger, stop: () => boolean): Promise<void> {
  for (let n = 0; !stop(); n++) {
    const payload = `${name}-${n}`;
    try {
      const { id } = await client.enqueue(queue, 't', payload, { deadlineMs: 60_000 });
      const atMs = performance.now();
      ledger.enqueued.set(id, { payload, atMs });
      if (atMs >= ledger.promotedAt)
        ledger.enqueuedAfter.set(name, (ledger.enqueuedAfter.get(name) ?? 0) + 1);
    } catch {
      await sleep(20); // Not acknowledged: it may or may not be stored, and counts for nothing.
    }
  }
}

async function work(client: SeppClient, ledger: Ledger, stop: () => boolean): Promise<void> {
  while (!stop()) {
    let jobs: LeasedJob[];
    try {
      jobs = await client.reserve({ queues: [queue], maxJobs: 10, leaseMs, waitMs: 300, deadlineMs: 5_000 });
    } catch {
      await sleep(50);
      continue;
    }
    for (const job of jobs) {
      ledger.deliveries.push({
        id: job.id,
        payload: Buffer.from(job.payload).toString(),
        atMs: performance.now(),
      });
    }
    await Promise.all(
      jobs.map((job) =>
        client.ack(job).then(
          () => ledger.acked.set(job.id, performance.now()),
          () => {},
        ),
      ),
    );
  }
}

/*
 * Every wait here that could hang is bounded: the SDK's calls by their deadlines, the polls
 * by `until`, the rest by helpers/bounded.ts, which fails naming what did not happen.
 */

/** Polls `done` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
async function until(
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    assert.ok(performance.now() < deadline, `${what} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * True once the queue holds no job that could still be delivered (none scheduled, ready
 * or leased): a job whose ack was lost is still leased, and comes again once its lease
 * runs out; one whose lease was lost is ready. False while the server cannot answer.
 */
async function drained(client: SeppClient): Promise<boolean> {
  try {
    const info = (await client.queues.list({ deadlineMs: 5_000 })).find((q) => q.name === queue);
    const c = info?.counts;
    return c !== undefined && c.scheduled + c.ready + c.leased === 0;
  } catch {
    return false;
  }
}

async function waitForStandby(primary: PostgresCluster, sync: boolean): Promise<void> {
  for (let i = 0; ; i++) {
    const { rows } = await within(
      primary.query<{ state: string; sync_state: string }>(
        "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = 'standby1'",
      ),
      'pg_stat_replication read',
    );
    if (rows[0]?.state === 'streaming' && (!sync || rows[0].sync_state === 'sync')) return;
    assert.ok(i < 600, `the standby streams: ${JSON.stringify(rows)}`);
    await sleep(50);
  }
}

/** The primary's WAL sender to the standby. */
function walSender(primary: PostgresCluster): number {
  const pid = primary
    .processes()
    .find(
      (p) =>
        existsSync(`/proc/${p}/cmdline`) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('walsender'),
    );
  assert.ok(pid !== undefined, 'the primary has a WAL sender');
  return pid;
}

async function failoverRound(sync: boolean, index: number, stallMs = 0): Promise<Round> {
  const primary = await within(startPostgres(), 'the primary started', 120_000);
  let standby: PostgresCluster | undefined;
  const servers: TestServer[] = [];
  const clients: SeppClient[] = [];
  try {
    const database = await within(primary.createDatabase('failover'), 'the database created');
    standby = await within(
      startPostgres({ standbyOf: primary, applicationName: 'standby1' }),
      'the standby started',
      120_000,
    );
    // Synchronous only once the standby is there: until then every commit would wait for it.
    if (sync) {
      await within(primary.query("ALTER SYSTEM SET synchronous_standby_names = 'standby1'"), 'ALTER SYSTEM');
      await within(primary.query('SELECT pg_reload_conf()'), 'pg_reload_conf()');
    }
    await waitForStandby(primary, sync);
    const url = `postgres://${primary.user}@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${database}?target_session_attrs=read-write`;
    const toml = `[queues.${queue}]\n[store]\nkind = "postgres"\nurl = "${url}"\npassword_file = "${primary.passwordFile}"\nschema = "sepp"\n`;
    for (let i = 0; i < 2; i++)
      servers.push(await within(startTestServer({ toml }), `server ${i + 1} started`, 60_000));
    const retry = { unavailable: true, maxAttempts: 100, baseDelayMs: 50, maxDelayMs: 500 };
    for (const t of servers) clients.push(SeppClient.connect(t.address, { retry }));
    const info = await clients[0]!.getServerInfo();
    const reported = info.store.replication;
    assert.equal(reported, sync ? 'synchronous' : 'asynchronous', 'the server reports the replication mode');
    assert.equal(info.store.standbys, 1);

    const ledger = new Ledger();
    let stopProducing = false;
    let stopWorking = false;
    const producerNames: string[] = [];
    const producers = clients.flatMap((c, s) =>
      [0, 1].map((p) => {
        const name = `r${index}-s${s}-p${p}`;
        producerNames.push(name);
        return produce(c, name, ledger, () => stopProducing);
      }),
    );
    const workers = clients.flatMap((c) => [0, 1].map(() => work(c, ledger, () => stopWorking)));
    await sleep(1000 + Math.random() * 1500);
    if (stallMs > 0) {
      // The primary goes on committing (asynchronous commits do not wait) and sends nothing:
      // the standby lags by stallMs when the primary dies (the kill takes the sender too).
      process.kill(walSender(primary), 'SIGSTOP');
      await sleep(stallMs);
    }
    const killedAt = performance.now();
    await within(primary.kill9(), 'the kill -9 of the primary');
    await within(standby.promote(), 'the promotion of the standby', 60_000);
    const promotedAt = performance.now();
    ledger.promotedAt = promotedAt; // From now on the producers count what the new primary accepts.
    // Load goes on until every producer has had enqueues accepted by the new primary.
    await until('every producer enqueues after the promotion', () =>
      producerNames.every((name) => (ledger.enqueuedAfter.get(name) ?? 0) >= enqueuesAfterPromotion),
    );
    stopProducing = true;
    // Each producer's last enqueue has a 60 s deadline.
    await within(Promise.all(producers), 'the producers stopped', 90_000);
    // Drain: until nothing is left that could be delivered (leases held when the primary
    // died run out after leaseMs and are delivered again; a lost ack leaves its job leased).
    await until('the queue drains', () => drained(clients[0]!));
    stopWorking = true;
    await within(Promise.all(workers), 'the workers stopped');

    const delivered = new Set(ledger.deliveries.map((d) => d.id));
    const missing = [...ledger.enqueued.keys()].filter((id) => !delivered.has(id));
    const redelivered = new Set(
      ledger.deliveries
        .filter((d) => (ledger.acked.get(d.id) ?? Number.POSITIVE_INFINITY) < d.atMs)
        .map((d) => d.id),
    );
    const idsOfPayload = new Map<string, Set<string>>();
    for (const d of ledger.deliveries) {
      const ids = idsOfPayload.get(d.payload) ?? new Set();
      ids.add(d.id);
      idsOfPayload.set(d.payload, ids);
    }
    const duplicates = [...idsOfPayload.values()].filter((ids) => ids.size > 1).length;
    const firstAfter = Math.min(
      ...[...ledger.enqueued.values()].map((e) => e.atMs).filter((atMs) => atMs >= promotedAt),
    );
    assert.deepEqual(
      await countMismatches(standby, database, 'sepp'),
      [],
      'counts = rows on the new primary',
    );
    assert.ok(Number.isFinite(firstAfter), 'an enqueue was accepted after the promotion');
    return {
      mode: sync ? 'synchronous' : 'asynchronous',
      acknowledgedEnqueues: ledger.enqueued.size,
      missing: missing.length,
      acknowledgedAcks: ledger.acked.size,
      redeliveredAfterAck: redelivered.size,
      duplicates,
      rtoMs: Math.round(firstAfter - killedAt),
      reported,
    };
  } finally {
    await within(Promise.all(clients.map((c) => c.close().catch(() => {}))), 'the clients closed');
    await within(Promise.all(servers.map((t) => t.dispose().catch(() => {}))), 'the servers stopped', 60_000);
    await within(standby?.close() ?? Promise.resolve(), 'the standby stopped and removed', 60_000);
    await within(primary.close(), 'the primary stopped and removed', 60_000);
  }
}

function table(rounds: readonly Round[]): string {
  const lines = [
    '| standby | round | acked enqueues | acked & missing | acked acks | redelivered after ack | stored twice | RTO ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rounds.map(
      (r, i) =>
        `| ${r.mode} | ${i + 1} | ${r.acknowledgedEnqueues} | ${r.missing} | ${r.acknowledgedAcks} | ${r.redeliveredAfterAck} | ${r.duplicates} | ${r.rtoMs} |`,
    ),
  ];
  return lines.join('\n');
}

test(`failover to a synchronous standby, ${syncRounds} rounds: nothing acknowledged lost or redelivered`, async () => {
  const rounds: Round[] = [];
  for (let i = 0; i < syncRounds; i++) {
    rounds.push(await failoverRound(true, i));
    console.log(`round ${i + 1}: ${JSON.stringify(rounds.at(-1))}`);
  }
  console.log(`\n${table(rounds)}\n`);
  for (const r of rounds) {
    assert.equal(r.missing, 0, 'an acknowledged enqueue was lost');
    assert.equal(r.redeliveredAfterAck, 0, 'an acknowledged ack was lost: its job came again');
    assert.equal(r.duplicates, 0, 'a retried enqueue was stored twice');
  }
});

test(`failover to an asynchronous standby lagging ${asyncStallMs} ms, ${asyncRounds} rounds: what was lost, reported`, async () => {
  const rounds: Round[] = [];
  for (let i = 0; i < asyncRounds; i++) {
    rounds.push(await failoverRound(false, i, asyncStallMs));
    console.log(`round ${i + 1}: ${JSON.stringify(rounds.at(-1))}`);
  }
  console.log(`\n${table(rounds)}\n`);
  // Nothing to hold it to but the servers' own answers: they recovered and served again.
  for (const r of rounds) assert.ok(r.acknowledgedEnqueues > 0);
});
