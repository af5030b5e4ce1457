/**
 * Crash test: a child process (crash-child.ts) runs producers and workers
 * through the engine and records every acknowledged operation in a ledger
 * file, synchronously, after the engine answered; it is killed
 * with SIGKILL at random moments, many times, on the same data directory.
 * After each kill: no acknowledged enqueue is lost, no acknowledged ack is
 * undone, no acked job was delivered again, attempts only grow, the counters
 * match the rows and SQLite's integrity check passes. At the end every job
 * that was never acked is still delivered.
 *
 * Real time here (processes are killed), bounded: SEPP_CRASH_CYCLES (default
 * 10) cycles, each killed within a second of the child being ready.
 * SEPP_CRASH_SEED replays the kill timings.
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
import { DataDirInUseError, openDataDir } from '../../src/store/open.ts';

const cycles = Number(process.env.SEPP_CRASH_CYCLES ?? 10);
const seed =
  process.env.SEPP_CRASH_SEED === undefined
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.SEPP_CRASH_SEED);
const childScript = new URL('./crash-child.ts', import.meta.url).pathname;
const readyTimeoutMs = 15_000;

function prng(start: number): (min: number, max: number) => number {
  let a = start >>> 0;
  return (min, max) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return min + Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * (max - min + 1));
  };
}

/** Everything the children reported, in the order it arrived. */
class Ledger {
  /** jobId → payload id, for every acknowledged enqueue. */
  readonly enqueued = new Map<string, string>();
  /** Jobs whose ack was sent (it may or may not have committed before the kill). */
  readonly ackSent = new Set<string>();
  /** Jobs whose ack was acknowledged. */
  readonly acked = new Set<string>();
  /** The highest attempt each job was leased with. */
  readonly lastAttempt = new Map<string, number>();
  readonly problems: string[] = [];
  reserves = 0;

  record(line: string): void {
    const [kind, a, b] = line.split(' ');
    if (a === undefined) throw new Error(`bad ledger line ${line}`);
    switch (kind) {
      case 'E':
        if (b === undefined) throw new Error(`bad line ${line}`);
        this.enqueued.set(b, a);
        break;
      case 'R': {
        const attempt = Number(b);
        this.reserves++;
        if (this.acked.has(a))
          this.problems.push(`job ${a} was delivered again (attempt ${attempt}) after its ack`);
        const last = this.lastAttempt.get(a) ?? 0;
        if (attempt <= last)
          this.problems.push(`job ${a} leased with attempt ${attempt} after attempt ${last}`);
        this.lastAttempt.set(a, attempt);
        break;
      }
      case 'a':
        this.ackSent.add(a);
        break;
      case 'A':
        this.acked.add(a);
        break;
      default:
        throw new Error(`unknown ledger line: ${line}`);
    }
  }
}

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
      ['--import', 'tsx', childScript, dataDir, ledgerFile, String(seed + cycle)],
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

/** Reads a killed child's ledger; a cut last line was never a complete report. */
function readLedger(ledgerFile: string, ledger: Ledger): void {
  if (!existsSync(ledgerFile)) return;
  const lines = readFileSync(ledgerFile, 'utf8').split('\n');
  lines.pop();
  for (const line of lines) ledger.record(line);
}

/** Opens the data directory as a restarted server would, checks it, and closes it. */
function verify(dataDir: string, ledger: Ledger): { rows: number; states: Record<string, number> } {
  const db = openDataDir(dataDir, { durability: 'full' });
  const engine = new Engine(db, defaultEngineOptions(), { clock: new FakeClock(Date.now()) });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    assert.deepEqual(engine.counterMismatches(), []);
    const rows = new Map(
      db
        .prepare<[], { id: string; state: string; payload: Buffer }>('SELECT id, state, payload FROM jobs')
        .all()
        .map((r) => [r.id, r]),
    );
    const problems = [...ledger.problems];
    for (const [jobId, payloadId] of ledger.enqueued) {
      const row = rows.get(jobId);
      if (row === undefined) {
        if (!ledger.ackSent.has(jobId)) problems.push(`acknowledged enqueue ${payloadId} (${jobId}) is lost`);
      } else if (row.payload.toString() !== payloadId) {
        problems.push(`job ${jobId} holds ${row.payload.toString()}, enqueued as ${payloadId}`);
      }
    }
    for (const jobId of ledger.acked) {
      if (rows.has(jobId)) problems.push(`acked job ${jobId} is present again (${rows.get(jobId)?.state})`);
    }
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems`);
    const states: Record<string, number> = {};
    for (const r of rows.values()) states[r.state] = (states[r.state] ?? 0) + 1;
    return { rows: rows.size, states };
  } finally {
    engine.close();
  }
}

/** After the last crash: every job never acked is still delivered (leases of the dead children expire). */
async function drain(dataDir: string, ledger: Ledger): Promise<number> {
  const db = openDataDir(dataDir, { durability: 'full' });
  const clock = new FakeClock(Date.now() + 3_600_000);
  const engine = new Engine(db, defaultEngineOptions(), { clock });
  try {
    for (let i = 0; i < 100 && (engine.listQueues()[0]?.counts.leased ?? 0) > 0; i++) {
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
    const counts = engine.listQueues()[0]?.counts;
    assert.equal(counts?.leased, 0);
    assert.equal(counts?.ready, 0);
    assert.equal(counts?.scheduled, 0);
    const deadIds = new Set(db.prepare<[], string>("SELECT id FROM jobs WHERE state = 'dead'").pluck().all());
    const missing = [...ledger.enqueued.keys()].filter(
      (id) => !ledger.ackSent.has(id) && !drained.has(id) && !deadIds.has(id),
    );
    assert.deepEqual(missing.slice(0, 20), [], `${missing.length} jobs never acked were not delivered`);
    assert.deepEqual(engine.counterMismatches(), []);
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
  const ledger = new Ledger();
  const int = prng(seed);
  const log: string[] = [`crash test: seed ${seed} (SEPP_CRASH_SEED), data dir ${dataDir}`];
  let lockChecked = false;
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      // Most kills hit the running load; every fourth may hit the start-up (open, migrations).
      const duringStartup = cycle % 4 === 3;
      const killAfterMs = duringStartup ? int(0, 700) : int(30, 900);
      const ledgerFile = join(dataDir, `ledger-${cycle}.txt`);
      const result = await runChild(dataDir, ledgerFile, cycle, killAfterMs, !duringStartup, () => {
        if (lockChecked) return;
        // While the child runs, the data directory is locked against a second server.
        assert.throws(() => openDataDir(dataDir, { durability: 'full' }), DataDirInUseError);
        lockChecked = true;
      });
      readLedger(ledgerFile, ledger);
      const { rows, states } = verify(dataDir, ledger);
      log.push(
        `cycle ${cycle}: killed ${result.killedAfterMs} ms after spawn ` +
          `(${result.readyAfterMs === null ? 'before ready' : `ready after ${result.readyAfterMs} ms`}); ` +
          `so far ${ledger.enqueued.size} enqueues and ${ledger.acked.size} acks acknowledged, ${ledger.reserves} leases; ` +
          `${rows} rows ${JSON.stringify(states)}`,
      );
    }
    assert.ok(lockChecked, 'at least one child reached ready');
    const drained = await drain(dataDir, ledger);
    log.push(`after the last crash: ${drained} jobs never acked were delivered and acked`);
    assert.ok(ledger.enqueued.size > 0 && ledger.acked.size > 0, 'the children did work');
  } finally {
    console.log(log.join('\n'));
    rmSync(dataDir, { recursive: true, force: true });
  }
});
