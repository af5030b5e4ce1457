/**
 * Workflows across SIGKILLs (issue 33): a child process (crash-workflows-child.ts) enqueues
 * 1,000 fan-in flows (root → four parts → final) and 100 sealed batches with an on_complete
 * job while two workers ack (and dead-letter a member in ten), and is killed with SIGKILL at
 * random moments, on the same data directory. After each kill the database is intact and
 * its counters match the rows; once the rest is enqueued and everything is drained:
 *
 * - every acknowledged flow and batch is there, and every acknowledged ack stayed completed;
 * - every flow has one final job, completed, and no final job was ever leased while one of
 *   its parts had not completed (the workers check the dependency results at each lease);
 * - no job is left waiting;
 * - every batch ended, and has exactly one completion job (found by the batch id in the
 *   completion jobs' payloads): expected, found and doubled are printed;
 * - every batch with a dead member has exactly one on_death job, naming its first dead
 *   member, and no other batch has one.
 *
 * Real time (processes are killed), bounded: SEPP_CRASH_CYCLES (default 8, at most 30) kills.
 * Each lands once the child's ledger has grown by a random number of bytes (up to twice an
 * even share of the whole run's ledger per cycle), so the kills fall inside the work however
 * fast the machine runs it (a fixed 0.3–2.5 s after `ready` let a fast machine finish every
 * flow before the second kill); a child whose ledger stops growing (its work done) is killed
 * 0.3–2.5 s after `ready`. SEPP_CRASH_SEED replays the draws.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { databaseFileName } from '../../src/store/sqlite/open.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { childScriptArgs } from '../helpers/child-script.ts';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import { intsFrom, mulberry32, seedFromEnv } from '../helpers/prng.ts';
import {
  batchRequest,
  flowJobs,
  totalBatches,
  totalFlows,
  workflowQueueSettings,
  workflowQueues,
} from './crash-workflows-shape.ts';

const cycles = Math.min(Number(process.env.SEPP_CRASH_CYCLES ?? 8), 30);
const seed = seedFromEnv('SEPP_CRASH_SEED');
const childScript = new URL('./crash-workflows-child.ts', import.meta.url).pathname;

/** What the children acknowledged, from their ledgers. */
class Ledger {
  readonly flows = new Map<number, { finalId: string; rootId: string }>();
  readonly batches = new Map<number, string[]>();
  readonly acked = new Set<string>();
  readonly violations: string[] = [];

  read(file: string): void {
    if (!existsSync(file)) return;
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.pop(); // a cut last line was never a complete report
    for (const line of lines) {
      const [kind, a, b, c] = line.split(' ');
      if (kind === 'F') {
        const known = this.flows.get(Number(a));
        // The same flow enqueued again after a kill must be found by its keys, never doubled.
        if (known !== undefined && known.finalId !== b)
          this.violations.push(`flow ${a} got a second final ${b}`);
        this.flows.set(Number(a), { finalId: b!, rootId: c! });
      } else if (kind === 'B') this.batches.set(Number(a), [...(this.batches.get(Number(a)) ?? []), b!]);
      else if (kind === 'A') this.acked.add(a!);
      else if (kind === 'V') this.violations.push(line);
    }
  }

  /** Where the next child starts: the first flow and batch not acknowledged. */
  next(): { flow: number; batch: number } {
    let flow = 0;
    while (this.flows.has(flow)) flow++;
    let batch = 0;
    while (this.batches.has(batch)) batch++;
    return { flow, batch };
  }
}

function runChild(
  dataDir: string,
  ledgerFile: string,
  cycle: number,
  kill: { afterLedgerBytes: number; afterMs: number },
  from: { flow: number; batch: number },
) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...childScriptArgs(childScript),
        dataDir,
        ledgerFile,
        String(seed + cycle),
        String(from.flow),
        String(from.batch),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    let progress: NodeJS.Timeout | undefined;
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const ledgerBytes = () => (existsSync(ledgerFile) ? statSync(ledgerFile).size : 0);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (timer === undefined && stdout.includes('ready\n')) {
        timer = setTimeout(() => child.kill('SIGKILL'), kill.afterMs);
        progress = setInterval(() => {
          if (ledgerBytes() >= kill.afterLedgerBytes) child.kill('SIGKILL');
        }, 2);
      }
    });
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      clearTimeout(timer);
      clearInterval(progress);
      if (signal === 'SIGKILL' && timer !== undefined) resolve();
      else
        reject(
          new Error(`cycle ${cycle}: the child ended by itself (code ${code}, ${signal}); stderr: ${stderr}`),
        );
    });
  });
}

/** After the last kill: enqueues what the children did not, then leases and acks everything until nothing is left. */
async function finish(dataDir: string, ledger: Ledger): Promise<Engine> {
  const store = openSqliteStore(dataDir, { durability: 'full' });
  // Ten minutes on: the dead children's leases (1.5 s) have run out; completed jobs are kept an hour.
  const clock = new FakeClock(Date.now() + 600_000);
  const engine = await Engine.open(
    store,
    { ...defaultEngineOptions(), queues: workflowQueueSettings },
    { clock },
  );
  const from = ledger.next();
  for (let flow = from.flow; flow < totalFlows; flow++) {
    const result = await engine.enqueueFlow(flowJobs(flow));
    assert.ok(result.committed);
    const ids = Object.fromEntries(result.jobs.map((j) => [j.name, j.jobId]));
    const known = ledger.flows.get(flow);
    if (known !== undefined && known.finalId !== ids.final) ledger.violations.push(`flow ${flow} doubled`);
    ledger.flows.set(flow, { finalId: ids.final!, rootId: ids.root! });
  }
  for (let batch = from.batch; batch < totalBatches; batch++) {
    ledger.batches.set(batch, [(await engine.createBatch(batchRequest(batch))).batch.id]);
  }
  await engine.runMaintenance();
  for (;;) {
    const jobs = await engine.reserve({ queues: workflowQueues, maxJobs: 1000 });
    if (jobs.length === 0) break;
    for (const job of jobs) {
      assert.ok(!ledger.acked.has(job.id), `acked job ${job.id} delivered again`);
      if (job.queue === 'wf-final' && (job.dependencyResults ?? []).some((p) => p.state !== 'completed')) {
        ledger.violations.push(`final ${job.id} leased before its parts completed`);
      }
    }
    const outcomes = await engine.ackBatch(jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })));
    assert.ok(outcomes.every((o) => o.ok));
  }
  return engine;
}

test(`crash: ${totalFlows} fan-in flows and ${totalBatches} batches across ${cycles} SIGKILLs`, {
  timeout: 600_000,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-crash-wf-'));
  const ledger = new Ledger();
  const int = intsFrom(mulberry32(seed));
  /** Twice an even share per cycle of a whole run's ledger (~340 KB: mostly `A <id>` lines, 39 bytes). */
  const killShareBytes = Math.ceil((2 * 340_000) / cycles);
  const log: string[] = [`workflows crash test: seed ${seed} (SEPP_CRASH_SEED), data dir ${dataDir}`];
  let engine: Engine | undefined;
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      const from = ledger.next();
      const ledgerFile = join(dataDir, `ledger-${cycle}.txt`);
      await runChild(
        dataDir,
        ledgerFile,
        cycle,
        { afterLedgerBytes: int(1, killShareBytes), afterMs: int(300, 2500) },
        from,
      );
      ledger.read(ledgerFile);
      const snapshot = inspectDataDir(dataDir);
      assert.equal(snapshot.integrity, 'ok');
      assert.deepEqual(snapshot.counterMismatches, []);
      // Nothing acknowledged is lost: every acked job is still completed (its queue keeps them).
      const lost = [...ledger.acked].filter((id) => snapshot.rows.get(id)?.state !== 'completed');
      assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acked jobs not completed after the kill`);
      for (const { finalId, rootId } of ledger.flows.values()) {
        assert.ok(snapshot.rows.has(finalId) && snapshot.rows.has(rootId), 'an acknowledged flow is stored');
      }
      log.push(
        `cycle ${cycle}: started at flow ${from.flow}, batch ${from.batch}; so far ${ledger.flows.size} flows, ` +
          `${ledger.batches.size} batches, ${ledger.acked.size} acks acknowledged; ${JSON.stringify(snapshot.states)}`,
      );
    }
    log.push(
      `the children enqueued ${ledger.flows.size} flows and ${ledger.batches.size} batches; the rest after the last kill`,
    );
    engine = await finish(dataDir, ledger);
    assert.deepEqual(await engine.counterMismatches(), []);
    engine.close();
    engine = undefined;
    checkEnd(dataDir, ledger, log);
  } finally {
    engine?.close();
    console.log(log.join('\n'));
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** The end state, read from the stopped database. */
function checkEnd(dataDir: string, ledger: Ledger, log: string[]): void {
  const db = new Database(join(dataDir, databaseFileName), { readonly: true, fileMustExist: true });
  try {
    const count = (sql: string) => db.prepare<[], number>(sql).pluck().get() ?? -1;
    assert.equal(count("SELECT count(*) FROM jobs WHERE state = 'waiting'"), 0, 'no job is left waiting');
    assert.deepEqual(ledger.violations.slice(0, 10), [], `${ledger.violations.length} violations`);

    // Flows: one final job per flow, completed; every acked job still completed.
    const finals = db
      .prepare<[], { id: string; state: string; payload: Buffer }>(
        "SELECT id, state, payload FROM jobs WHERE queue = 'wf-final'",
      )
      .all();
    const finalsPerFlow = new Map<number, number>();
    for (const final of finals) {
      const { flow } = JSON.parse(final.payload.toString()) as { flow: number };
      finalsPerFlow.set(flow, (finalsPerFlow.get(flow) ?? 0) + 1);
      assert.equal(final.state, 'completed', `final ${final.id} of flow ${flow}`);
    }
    assert.equal(finalsPerFlow.size, totalFlows);
    assert.deepEqual(
      [...finalsPerFlow].filter(([, n]) => n !== 1),
      [],
      'one final job per flow',
    );
    for (const [flow, { finalId }] of ledger.flows) {
      assert.equal(
        db.prepare<[string], string>('SELECT state FROM jobs WHERE id = ?').pluck().get(finalId),
        'completed',
        `flow ${flow}`,
      );
    }
    const lost = [...ledger.acked].filter(
      (id) =>
        db.prepare<[string], string>('SELECT state FROM jobs WHERE id = ?').pluck().get(id) !== 'completed',
    );
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acked jobs lost`);

    // Batches: every one ended, with exactly one completion job naming it.
    const batches = db
      .prepare<[], { id: string; state: string; complete_job_id: string | null }>(
        'SELECT id, state, complete_job_id FROM batches',
      )
      .all();
    const completions = new Map<string, number>();
    for (const row of db
      .prepare<[], Buffer>("SELECT payload FROM jobs WHERE queue = 'wf-done'")
      .pluck()
      .all()) {
      const { batch } = JSON.parse(row.toString()) as { batch: { id: string } };
      completions.set(batch.id, (completions.get(batch.id) ?? 0) + 1);
    }
    const notEnded = batches.filter((b) => b.state !== 'ended').map((b) => b.id);
    assert.deepEqual(notEnded, [], 'every batch ended');
    const found = batches.filter((b) => completions.get(b.id) === 1).length;
    const doubled = batches.filter((b) => (completions.get(b.id) ?? 0) > 1).length;
    const missing = batches.filter((b) => (completions.get(b.id) ?? 0) === 0).length;
    log.push(
      `end: ${finals.length} final jobs for ${totalFlows} flows, all completed; ${ledger.acked.size} acks acknowledged, none lost; ` +
        `completion jobs expected ${batches.length} (batches stored, ${ledger.batches.size} indexes acknowledged), found ${found}, doubled ${doubled}, missing ${missing}`,
    );
    assert.equal(doubled, 0);
    assert.equal(missing, 0);
    assert.equal(completions.size, batches.length, 'no completion job names an unknown batch');
    for (const ids of ledger.batches.values()) {
      for (const id of ids)
        assert.ok(
          batches.some((b) => b.id === id),
          `acknowledged batch ${id} is stored`,
        );
    }
    assert.ok(batches.every((b) => b.complete_job_id !== null));

    // on_death: one per batch with a dead member, naming the member counted dead first.
    const deaths = new Map<string, string[]>();
    for (const row of db
      .prepare<[], Buffer>("SELECT payload FROM jobs WHERE queue = 'wf-death'")
      .pluck()
      .all()) {
      const { batch } = JSON.parse(row.toString()) as { batch: { id: string; firstDead: { jobId: string } } };
      deaths.set(batch.id, [...(deaths.get(batch.id) ?? []), batch.firstDead.jobId]);
    }
    const dead = db
      .prepare<[], { id: string; first_dead_id: string | null; death_job_id: string | null }>(
        'SELECT id, first_dead_id, death_job_id FROM batches WHERE dead > 0',
      )
      .all();
    log.push(`on_death: ${dead.length} batches with a dead member, ${deaths.size} with an on_death job`);
    assert.ok(dead.length > 0, 'some member died');
    for (const b of dead) {
      assert.deepEqual(deaths.get(b.id), [b.first_dead_id], `batch ${b.id}: one on_death`);
      assert.notEqual(b.death_job_id, null);
    }
    assert.equal(deaths.size, dead.length, 'no on_death for a batch without a dead member');
  } finally {
    db.close();
  }
}
