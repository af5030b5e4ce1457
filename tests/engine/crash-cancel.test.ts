/**
 * A crash between the cancel of a running job and its worker's answer leaves
 * the job cancelled, never retried. A child process (crash-cancel-child.ts)
 * leases jobs, cancels them, and answers only some; it is killed with SIGKILL
 * at random moments. After each kill, every job whose cancel was acknowledged
 * is `cancelled`, or still `leased` with its cancel request on record; after
 * the leases of the dead children run out, every one of them is `cancelled`,
 * and none is handed out again.
 *
 * SEPP_CRASH_CYCLES (default 4 here) kills; SEPP_CRASH_SEED replays them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

const cycles = Math.min(Number(process.env.SEPP_CRASH_CYCLES ?? 4), 20);
const seed = seedFromEnv('SEPP_CRASH_SEED');
const childScript = new URL('./crash-cancel-child.ts', import.meta.url).pathname;

/** Runs the child until `killAfterMs` after it is ready, then SIGKILLs it. */
function runChild(dataDir: string, ledgerFile: string, cycle: number, killAfterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...childScriptArgs(childScript), dataDir, ledgerFile, String(seed + cycle)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (timer === undefined && chunk.toString().includes('ready')) {
        timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.on('close', (_code, signal) => {
      clearTimeout(guard);
      clearTimeout(timer);
      if (signal === 'SIGKILL' && timer !== undefined) resolve();
      else reject(new Error(`cycle ${cycle}: the child ended without being killed; stderr: ${stderr}`));
    });
  });
}

/** Job ids by ledger mark: C (cancel acknowledged), N (the worker's nack acknowledged). */
function readLedger(ledgerFile: string, marks: Map<string, Set<string>>): void {
  if (!existsSync(ledgerFile)) return;
  const lines = readFileSync(ledgerFile, 'utf8').split('\n');
  lines.pop(); // a cut last line was never a complete report
  for (const line of lines) {
    const [mark, id] = line.split(' ');
    if (mark === undefined || id === undefined) continue;
    const ids = marks.get(mark) ?? new Set<string>();
    marks.set(mark, ids);
    ids.add(id);
  }
}

function cancelRecords(
  dataDir: string,
): Map<string, { state: string; attempt: number; cancelledAtMs: number | null }> {
  const db = new Database(join(dataDir, databaseFileName), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare<[], { id: string; state: string; attempt: number; cancelled_at_ms: number | null }>(
        'SELECT id, state, attempt, cancelled_at_ms FROM jobs',
      )
      .all();
    return new Map(
      rows.map((r) => [r.id, { state: r.state, attempt: r.attempt, cancelledAtMs: r.cancelled_at_ms }]),
    );
  } finally {
    db.close();
  }
}

test(`crash: ${cycles} SIGKILLs between cancels and the workers' answers leave every acknowledged cancel cancelled`, {
  timeout: 300_000,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-crash-cancel-'));
  const marks = new Map<string, Set<string>>();
  const int = intsFrom(mulberry32(seed));
  const log = [`crash-cancel: seed ${seed} (SEPP_CRASH_SEED)`];
  try {
    for (let cycle = 0; cycle < cycles; cycle++) {
      const ledgerFile = join(dataDir, `ledger-${cycle}.txt`);
      await runChild(dataDir, ledgerFile, cycle, int(50, 700));
      readLedger(ledgerFile, marks);
      const snapshot = inspectDataDir(dataDir);
      assert.equal(snapshot.integrity, 'ok');
      assert.deepEqual(snapshot.counterMismatches, []);
      const records = cancelRecords(dataDir);
      for (const id of marks.get('C') ?? []) {
        const row = records.get(id);
        assert.ok(row !== undefined, `cancelled job ${id} is gone`);
        assert.ok(row.cancelledAtMs !== null, `the cancel of ${id} was acknowledged but not stored`);
        assert.ok(
          row.state === 'cancelled' || row.state === 'leased',
          `job ${id} is ${row.state} after its cancel`,
        );
        assert.equal(row.attempt, 1);
      }
      for (const id of marks.get('N') ?? []) assert.equal(records.get(id)?.state, 'cancelled');
      log.push(
        `cycle ${cycle}: ${marks.get('C')?.size ?? 0} cancels, ${marks.get('N')?.size ?? 0} answered; ${JSON.stringify(snapshot.states)}`,
      );
    }
    const unanswered = [...(marks.get('C') ?? [])].filter((id) => !marks.get('N')?.has(id));
    assert.ok(unanswered.length > 0, 'some cancels were left unanswered by a killed worker');

    // Later, with the dead workers' leases over: maintenance ends them cancelled, nothing is retried.
    const engine = await Engine.open(
      openSqliteStore(dataDir, { durability: 'full' }),
      defaultEngineOptions(),
      {
        clock: new FakeClock(Date.now() + 3_600_000),
      },
    );
    try {
      // A pass ends at most 1,000 leases.
      for (let i = 0; i < 100 && ((await engine.listQueues())[0]?.counts.leased ?? 0) > 0; i++) {
        await engine.runMaintenance();
      }
      for (const id of marks.get('C') ?? []) {
        const job = await engine.getJob(id);
        assert.equal(job.state, 'cancelled', id);
        assert.equal(job.attempt, 1, id);
        assert.equal(job.cancelledBy, 'key:ops');
      }
      const cancelled = marks.get('C') ?? new Set<string>();
      for (;;) {
        const leased = await engine.reserve({ queues: ['cc'], maxJobs: 1000 });
        if (leased.length === 0) break;
        for (const job of leased)
          assert.ok(!cancelled.has(job.id), `cancelled job ${job.id} handed out again`);
        await engine.ackBatch(leased.map((j) => ({ jobId: j.id, attempt: j.attempt })));
      }
      assert.deepEqual(await engine.counterMismatches(), []);
      log.push(`after the last kill: ${unanswered.length} unanswered cancels ended cancelled`);
    } finally {
      engine.close();
    }
  } finally {
    console.log(log.join('\n'));
    rmSync(dataDir, { recursive: true, force: true });
  }
});
