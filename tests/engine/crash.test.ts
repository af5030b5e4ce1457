/**
 * Crash test: a child process (crash-child.ts) runs producers and workers
 * through the engine and records every acknowledged operation in a ledger
 * file, synchronously, after the engine answered; it is killed
 * with SIGKILL at random moments, many times, on the same data directory.
 * After each kill: no acknowledged enqueue is lost, no acknowledged ack is
 * undone, no acked job was delivered again, attempts only grow, the counters
 * match the rows and SQLite's integrity check passes. In every other cycle the
 * queue keeps completed jobs: then every job whose ack (with its result) was
 * acknowledged before the kill is there, completed, with that result. At the
 * end every job that was never acked is still delivered.
 *
 * Real time here (processes are killed), bounded: SEPP_CRASH_CYCLES (default
 * 6; `npm run test:long` runs 50) cycles, each killed within a second of the
 * child being ready. SEPP_CRASH_SEED replays the kill timings.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { DataDirInUseError, openDataDir } from '../../src/store/sqlite/open.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { childScriptArgs } from '../helpers/child-script.ts';
import { CrashLedger } from '../helpers/crash-ledger.ts';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import { intsFrom, mulberry32, seedFromEnv } from '../helpers/prng.ts';

// Six: four kills under load (two keeping completed jobs) and two that may hit the start-up.
// A cycle is a child's start and up to a second of its load, so more belong in the long run.
const cycles = Number(process.env.SEPP_CRASH_CYCLES ?? 6);
const seed = seedFromEnv('SEPP_CRASH_SEED');
const childScript = new URL('./crash-child.ts', import.meta.url).pathname;
const readyTimeoutMs = 15_000;

interface CycleResult {
  killedAfterMs: number;
  /** Time from spawn to `ready`; null when killed before. */
  readyAfterMs: number | null;
}

/** Runs one child and kills it; then reads the ledger the child wrote. */
function runChild(
  dataDir: string,
  ledgerFile: string,
  cycle: number,
  killAfterMs: number,
  waitForReady: boolean,
  whileRunning: () => void,
): Promise<CycleResult> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [...childScriptArgs(childScript), dataDir, ledgerFile, String(seed + cycle), keeps(cycle) ? '1' : '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let readyAfterMs: number | null = null;
    let failure: unknown;
    let killTimer: NodeJS.Timeout | undefined;
    const startedMs = Date.now();
    const kill = () => {
      child.kill('SIGKILL');
    };
    const guard = setTimeout(() => {
      failure = new Error(
        `cycle ${cycle}: the child was not ready within ${readyTimeoutMs} ms; stderr: ${stderr}`,
      );
      kill();
    }, readyTimeoutMs);
    if (!waitForReady) killTimer = setTimeout(kill, killAfterMs);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (readyAfterMs !== null || !stdout.includes('ready\n')) return;
      readyAfterMs = Date.now() - startedMs;
      clearTimeout(guard);
      try {
        whileRunning();
      } catch (error) {
        failure = error;
        kill();
        return;
      }
      if (waitForReady) killTimer = setTimeout(kill, killAfterMs);
    });
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      if (killTimer) clearTimeout(killTimer);
      if (failure !== undefined) reject(failure);
      else if (signal !== 'SIGKILL') {
        reject(new Error(`cycle ${cycle}: the child ended by itself (code ${code}); stderr: ${stderr}`));
      } else resolve({ killedAfterMs: Date.now() - startedMs, readyAfterMs });
    });
  });
}

/** Whether the child of `cycle` runs its queue keeping completed jobs (and their results). */
const keeps = (cycle: number) => cycle % 2 === 0;

/** Reads a killed child's ledger (a cut last line was never a complete report); returns the jobs it acked. */
function readLedger(ledgerFile: string, ledger: CrashLedger): string[] {
  if (!existsSync(ledgerFile)) return [];
  const lines = readFileSync(ledgerFile, 'utf8').split('\n');
  lines.pop();
  for (const line of lines) ledger.record(line);
  return lines.filter((line) => line.startsWith('A ')).map((line) => line.split(' ')[1]!);
}

/**
 * Checks the killed child's database, read-only, against the ledger; `keptAcks`
 * are jobs acked (with a result) by a child whose queue keeps completed jobs.
 */
function verify(
  dataDir: string,
  ledger: CrashLedger,
  keptAcks: readonly string[],
): { rows: number; states: Record<string, number> } {
  const snapshot = inspectDataDir(dataDir);
  assert.equal(snapshot.integrity, 'ok');
  assert.deepEqual(snapshot.counterMismatches, []);
  const problems = ledger.rowProblems(snapshot.rows);
  for (const jobId of keptAcks) {
    const row = snapshot.rows.get(jobId);
    if (row?.state !== 'completed' || row.result?.toString() !== `result:${jobId}`) {
      problems.push(
        `acked job ${jobId} is ${row?.state ?? 'gone'} with result ${row?.result?.toString() ?? 'none'}`,
      );
    }
  }
  assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems`);
  return { rows: snapshot.rows.size, states: snapshot.states };
}

/** After the last crash: every job never acked is still delivered (leases of the dead children expire). */
async function drain(dataDir: string, ledger: CrashLedger): Promise<number> {
  const store = openSqliteStore(dataDir, { durability: 'full' });
  const clock = new FakeClock(Date.now() + 3_600_000);
  const engine = await Engine.open(store, defaultEngineOptions(), { clock });
  try {
    for (let i = 0; i < 100 && ((await engine.listQueues())[0]?.counts.leased ?? 0) > 0; i++) {
      await engine.runMaintenance();
    }
    const drained = new Set<string>();
    for (;;) {
      const jobs = await engine.reserve({ queues: ['crash'], maxJobs: 1000 });
      if (jobs.length === 0) break;
      for (const job of jobs) {
        assert.ok(!ledger.acked.has(job.id), `acked job ${job.id} delivered again`);
        drained.add(job.id);
      }
      const outcomes = await engine.ackBatch(jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })));
      assert.ok(outcomes.every((o) => o.ok));
    }
    const counts = (await engine.listQueues())[0]?.counts;
    assert.equal(counts?.leased, 0);
    assert.equal(counts?.ready, 0);
    assert.equal(counts?.scheduled, 0);
    const deadIds = new Set(
      store.db.prepare<[], string>("SELECT id FROM jobs WHERE state = 'dead'").pluck().all(),
    );
    const missing = [...ledger.enqueued.keys()].filter(
      (id) => !ledger.ackSent.has(id) && !drained.has(id) && !deadIds.has(id),
    );
    assert.deepEqual(missing.slice(0, 20), [], `${missing.length} jobs never acked were not delivered`);
    assert.deepEqual(await engine.counterMismatches(), []);
    return drained.size;
  } finally {
    engine.close();
  }
}

test(`crash: ${cycles} SIGKILLs under load lose no acknowledged operation`, {
  timeout: 300_000,
}, async () => {
  assert.ok(cycles >= 1);
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-crash-'));
  const ledger = new CrashLedger();
  const int = intsFrom(mulberry32(seed));
  const log: string[] = [`crash test: seed ${seed} (SEPP_CRASH_SEED), data dir ${dataDir}`];
  let lockChecked = false;
  let keptResults = 0;
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      // Most kills hit the running load; every third may hit the start-up (open, migrations).
      const duringStartup = cycle % 3 === 2;
      const killAfterMs = duringStartup ? int(0, 700) : int(30, 900);
      const ledgerFile = join(dataDir, `ledger-${cycle}.txt`);
      const result = await runChild(dataDir, ledgerFile, cycle, killAfterMs, !duringStartup, () => {
        if (lockChecked) return;
        // While the child runs, the data directory is locked against a second server.
        assert.throws(() => openDataDir(dataDir, { durability: 'full' }), DataDirInUseError);
        lockChecked = true;
      });
      const acked = readLedger(ledgerFile, ledger);
      const { rows, states } = verify(dataDir, ledger, keeps(cycle) ? acked : []);
      if (keeps(cycle)) keptResults += acked.length;
      log.push(
        `cycle ${cycle}: killed ${result.killedAfterMs} ms after spawn ` +
          `(${result.readyAfterMs === null ? 'before ready' : `ready after ${result.readyAfterMs} ms`}); ` +
          `so far ${ledger.enqueued.size} enqueues and ${ledger.acked.size} acks acknowledged, ${ledger.leases} leases; ` +
          `${rows} rows ${JSON.stringify(states)}`,
      );
    }
    assert.ok(lockChecked, 'at least one child reached ready');
    const drained = await drain(dataDir, ledger);
    log.push(`after the last crash: ${drained} jobs never acked were delivered and acked`);
    assert.ok(ledger.enqueued.size > 0 && ledger.acked.size > 0, 'the children did work');
    log.push(`${keptResults} acked jobs checked for their result after a kill`);
    assert.ok(keptResults > 0, 'some child kept completed jobs with results before it was killed');
  } finally {
    console.log(log.join('\n'));
    rmSync(dataDir, { recursive: true, force: true });
  }
});
