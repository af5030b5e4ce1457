/**
 * Crash loop of the server process (SPEC §11): the real server runs as a child
 * process under producers and workers that use the real SDK over gRPC
 * (crash-load.ts); it is killed with SIGKILL at random moments and restarted
 * on the same data directory, again and again. Every third start is killed
 * while the server starts (opening, migrations, the first maintenance pass).
 *
 * After every kill, with the server down, its database is opened read-only:
 * the integrity check passes, the counters match the rows, every acknowledged
 * enqueue is there (unless an ack for it was sent), no job whose ack was
 * acknowledged is there. Throughout: no acknowledged ack is followed by
 * another delivery, attempts only grow. At the end, one more start and a
 * drain: every job that was leased and not acked at a kill (or nacked for a
 * retry) has been delivered again, every acknowledged enqueue has been acked
 * or is dead, and a clean shutdown leaves a consistent database.
 *
 * Real time (processes are killed), bounded: SEPP_CRASH_CYCLES (default 6;
 * `npm run test:long` runs 50) cycles, each killed 0.2–1.5 s after the server
 * listens, and not before the load had a delivery in that cycle. SEPP_CRASH_SEED
 * replays the kill timings and the load's choices (as far as the timing of
 * real processes lets it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { CrashLedger } from '../helpers/crash-ledger.ts';
import { type DataDirSnapshot, inspectDataDir } from '../helpers/inspect-data-dir.ts';
import { intsFrom, mulberry32, seedFromEnv } from '../helpers/prng.ts';
import { bundleServer, type LaunchedServer, launchServerProcess } from '../helpers/process-server.ts';
import { CrashLoad } from './crash-load.ts';

// Six: four kills under load (each after the cycle's first delivery, so each finds work in
// flight) and two while starting. A cycle costs a server start and a load's start, most of
// this file's CPU, so more belong in the long run (npm run test:long: 50).
const cycles = Number(process.env.SEPP_CRASH_CYCLES ?? 6);
const seed = seedFromEnv('SEPP_CRASH_SEED');
const queue = 'crash';
/** Short, so that leases held at a kill run out soon after the restart. */
const leaseMs = 1500;
/** How long the final drain may take to see every owed job again, beyond the lease. */
const drainMarginMs = 20_000;

/** Many attempts (a job may be caught by many kills) and retries without backoff. */
const config = `
[queues.${queue}]
max_attempts = 1000
backoff_base_ms = 0
backoff_cap_ms = 0
`;

function check(snapshot: DataDirSnapshot, ledger: CrashLedger, when: string): void {
  assert.equal(snapshot.integrity, 'ok', `${when}: integrity check`);
  assert.deepEqual(snapshot.counterMismatches, [], `${when}: counters against rows`);
  const problems = ledger.rowProblems(snapshot.rows);
  assert.deepEqual(problems.slice(0, 20), [], `${when}: ${problems.length} problems`);
}

/** Reserves and acks until every owed job came back and nothing is left to run; returns the jobs drained. */
async function drain(address: string, ledger: CrashLedger): Promise<number> {
  const client = SeppClient.connect(address, { transport: 'unary' });
  const deadline = Date.now() + leaseMs + drainMarginMs;
  let drained = 0;
  try {
    for (;;) {
      const jobs = await client.reserve({ queues: [queue], maxJobs: 1000, leaseMs: 60_000, waitMs: 250 });
      for (const job of jobs) {
        ledger.leased(job.id, job.attempt, job.payload.toString());
        ledger.ackSending(job.id);
      }
      if (jobs.length > 0) {
        const results = await client.ackBatch(jobs);
        results.forEach((r, i) => {
          assert.equal(r.outcome, 'ok', `drain ack of ${jobs[i]?.id}: ${r.message}`);
          ledger.ackAcknowledged(jobs[i]?.id ?? '');
        });
        drained += jobs.length;
        continue;
      }
      const counts = (await client.listQueues()).find((q) => q.name === queue)?.counts;
      const unfinished = (counts?.ready ?? 0) + (counts?.scheduled ?? 0) + (counts?.leased ?? 0);
      if (unfinished === 0 && ledger.owed.size === 0) return drained;
      assert.ok(
        Date.now() < deadline,
        `after ${leaseMs + drainMarginMs} ms, ${unfinished} jobs are unfinished and ${ledger.owed.size} ` +
          `jobs leased and never settled were not delivered again: ${[...ledger.owed].slice(0, 10).join(', ')}`,
      );
    }
  } finally {
    await client.close();
  }
}

test(`crash loop: ${cycles} kill -9s of the server process under load lose nothing acknowledged`, {
  timeout: 60_000 + cycles * 20_000,
}, async () => {
  assert.ok(cycles >= 1);
  const startedMs = performance.now();
  const workDir = mkdtempSync(join(tmpdir(), 'sepp-crash-loop-'));
  const dataDir = join(workDir, 'data');
  const configFile = join(workDir, 'sepp.toml');
  writeFileSync(configFile, config);
  const ledger = new CrashLedger();
  const int = intsFrom(mulberry32(seed));
  const log: string[] = [`crash loop: seed ${seed} (SEPP_CRASH_SEED), ${cycles} cycles, data dir ${dataDir}`];
  const unexpected: string[] = [];
  let leasesLost = 0;
  let mostHeld = 0;
  let killsWhileStarting = 0;
  let server: LaunchedServer | undefined;
  let closing: Promise<void> | undefined;
  let bundle: ReturnType<typeof bundleServer> | undefined;
  let lockChecked = false;
  try {
    bundle = bundleServer();
    log.push(`bundled the server in ${Math.round(performance.now() - startedMs)} ms`);
    const launch = () =>
      launchServerProcess(dataDir, ['--config', configFile], { bundle: bundle?.bundle ?? '' });
    for (let cycle = 0; cycle < cycles; cycle++) {
      const cycleStartedMs = performance.now();
      server = launch();
      let what: string;
      if (cycle % 3 === 2) {
        await sleep(int(0, 1500));
        const listening = server.isReady();
        await server.stop('SIGKILL');
        if (!listening) killsWhileStarting++;
        what = listening ? 'killed just after it started listening' : 'killed while starting';
      } else {
        const { port } = await server.ready;
        const listenedMs = Math.round(performance.now() - cycleStartedMs);
        if (!lockChecked) {
          // While the server runs, a second server on its data directory is refused.
          const second = launch();
          await assert.rejects(second.ready, /in use by another sepp/);
          lockChecked = true;
        }
        // One load at a time: the last cycle's clients are closed before this one's start.
        await closing;
        const load = new CrashLoad({ address: `127.0.0.1:${port}`, queue, ledger, leaseMs, cycle, int });
        const leasesBefore = ledger.leases;
        const killAfterMs = int(200, 1500);
        await sleep(killAfterMs);
        // On a loaded machine the clients may not have connected yet: the kill waits for the
        // cycle's first delivery (at most 10 s), so that every load cycle kills work in flight.
        const waitStartedMs = performance.now();
        while (ledger.leases === leasesBefore && performance.now() - waitStartedMs < 10_000) await sleep(20);
        const waitedMs = Math.round(performance.now() - waitStartedMs);
        load.serverKilled();
        await server.stop('SIGKILL');
        // The clients close (their calls fail, the Worker gives up its jobs) while the
        // database is checked and the server starts again: nothing they still do can
        // be acknowledged, and the ledger has recorded all they were told.
        closing = load.stop().then(() => {
          unexpected.push(...load.unexpected.map((u) => `cycle ${cycle}: ${u}`));
          leasesLost += load.leasesLost;
          mostHeld = Math.max(mostHeld, load.mostHeld);
        });
        what = `listening after ${listenedMs} ms, killed ${killAfterMs} ms later (+${waitedMs} ms for a delivery)`;
      }
      server = undefined;
      const owed = ledger.crashed();
      const snapshot = inspectDataDir(dataDir);
      check(snapshot, ledger, `after cycle ${cycle}`);
      assert.deepEqual(unexpected.slice(0, 20), [], 'failures before the kill');
      log.push(
        `cycle ${cycle}: ${what}, ${Math.round(performance.now() - cycleStartedMs)} ms in all; ` +
          `so far ${ledger.enqueued.size} enqueues and ${ledger.acked.size} acks acknowledged, ` +
          `${ledger.leases} deliveries; ${owed} leased jobs owed a delivery; ` +
          `${snapshot.rows.size} rows ${JSON.stringify(snapshot.states)}`,
      );
    }
    assert.ok(lockChecked, 'at least one cycle ran load');

    // The last start: every owed job comes back, everything left is acked, and a clean stop.
    await closing;
    assert.deepEqual(unexpected.slice(0, 20), [], 'failures before the kill');
    server = launch();
    const { port } = await server.ready;
    const drainStartedMs = performance.now();
    const drained = await drain(`127.0.0.1:${port}`, ledger);
    const drainMs = Math.round(performance.now() - drainStartedMs);
    assert.equal(await server.stop('SIGTERM'), 0, `a clean stop after the drain: ${server.logs()}`);
    server = undefined;
    // A clean stop leaves the database whole: no WAL, and no WAL index from any start,
    // kill or inspection before (the crash loop used to leave sepp.db-shm behind).
    assert.deepEqual(
      readdirSync(dataDir).filter((name) => name.startsWith('sepp.db-')),
      [],
      'a clean stop leaves no sepp.db-wal or sepp.db-shm',
    );
    const final = inspectDataDir(dataDir);
    check(final, ledger, 'after the drain');
    const lost = ledger.unfinished(final.rows);
    const seconds = ((performance.now() - startedMs) / 1000).toFixed(1);
    log.push(
      `after the last kill: drained ${drained} jobs in ${drainMs} ms; final rows ${JSON.stringify(final.states)}`,
      `figures: ${cycles} cycles (${killsWhileStarting} killed while starting), ` +
        `${ledger.enqueued.size} acknowledged enqueues, ${ledger.acked.size} acknowledged acks, ` +
        `${ledger.leases} deliveries; lost ${lost.length} (must be 0); ` +
        `deliveries after an acknowledged ack ${ledger.deliveredAfterAck} (must be 0); ` +
        `jobs leased and unsettled at a kill ${ledger.owedAtCrashes}, delivered again ${ledger.redeliveredAfterCrash}; ` +
        `settlements refused for a lost lease ${leasesLost}; jobs the Worker held ahead at once, at most ${mostHeld}; ${seconds} s`,
    );
    assert.deepEqual(
      lost.slice(0, 20),
      [],
      `${lost.length} acknowledged enqueues were neither acked nor dead`,
    );
    assert.equal(ledger.deliveredAfterAck, 0);
    assert.equal(ledger.redeliveredAfterCrash, ledger.owedAtCrashes, 'every lease open at a kill came back');
    assert.ok(ledger.enqueued.size > 0 && ledger.acked.size > 0, 'the load did work');
    assert.ok(ledger.owedAtCrashes > 0, 'some kill found leases open (else redelivery went untested)');
    assert.ok(mostHeld > 0, 'the Worker held jobs leased ahead (prefetch), so kills found held leases too');
  } finally {
    console.log(log.join('\n'));
    await closing?.catch(() => {});
    await server?.stop('SIGKILL');
    bundle?.dispose();
    rmSync(workDir, { recursive: true, force: true });
  }
});
