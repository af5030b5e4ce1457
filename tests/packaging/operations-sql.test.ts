/**
 * The sqlite3 queries in docs/operations.md's "Inspecting the database" answer, both
 * on a copy made by `sepp backup` and on the live database while the server
 * serves under load (read-only, without blocking it).
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { FakeClock } from '../../src/engine/clock.ts';
import { databaseFileName } from '../../src/store/sqlite/open.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { cliEntry } from '../helpers/cli.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { SteadyLoad, waitFor } from '../helpers/steady-load.ts';

const hasSqlite = spawnSync('sqlite3', ['-version'], { stdio: 'ignore' }).status === 0;

function readmeQueries(): string[] {
  const doc = readFileSync('docs/operations.md', 'utf8');
  const section = doc.split('## Inspecting the database')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

test('the documented sqlite3 queries run on a copy made by sepp backup', {
  skip: hasSqlite ? false : 'sqlite3 is not installed (apt-get install sqlite3)',
}, async () => {
  const queries = readmeQueries();
  assert.ok(queries.length >= 5, 'the section has its queries');
  const clock = new FakeClock(Date.now());
  const t = await startTestServer({ clock, toml: '[queues.emails]\nmax_attempts = 2\n' });
  const dir = mkdtempSync(join(tmpdir(), 'sepp-readme-'));
  try {
    await makeFixture(t);
    const file = join(dir, 'copy.db');
    // Asynchronously: the server runs in this process and must keep answering.
    await promisify(execFile)(process.execPath, [...cliEntry(), 'backup', file, '--server', t.address]);
    const outputs = queries.map((sql) =>
      execFileSync('sqlite3', ['-readonly', file], { input: sql, encoding: 'utf8' }),
    );
    checkAnswers(outputs);
  } finally {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the documented sqlite3 queries run on the live database while the server serves under load', {
  skip: hasSqlite ? false : 'sqlite3 is not installed (apt-get install sqlite3)',
  timeout: 120_000,
}, async () => {
  const queries = readmeQueries();
  const problems: string[] = [];
  const logger = createLogger({
    level: 'warn',
    format: 'json',
    write: (line) => {
      if (!line.includes(`"config.risky"`)) problems.push(line);
    },
  });
  const clock = new FakeClock(Date.now());
  const t = await startTestServer({ clock, logger, toml: '[queues.emails]\nmax_attempts = 2\n' });
  let load: SteadyLoad | undefined;
  let reader: ReturnType<typeof spawn> | undefined;
  try {
    await makeFixture(t);
    // Leases longer than the fixture's, so its leased job stays first in the "stuck" query.
    load = new SteadyLoad({
      address: t.address,
      queue: 'load',
      producers: 20,
      workers: 20,
      leaseMs: 600_000,
    });
    await waitFor(() => (load?.acks.length ?? 0) >= 200, 'the load got going');
    const db = join(t.dataDir, databaseFileName);
    const sqlite3 = async (sql: string) => {
      const child = spawn('sqlite3', ['-readonly', db], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const exit = exitOf(child);
      child.stdin?.end(sql);
      const { code, stderr } = await exit;
      assert.equal(code, 0, stderr);
      return { stdout, stderr };
    };

    const rounds = 5;
    for (let round = 0; round < rounds; round++) {
      const before = load.acks.length;
      const outputs: string[] = [];
      for (const sql of queries) {
        const { stdout, stderr } = await sqlite3(sql);
        assert.equal(stderr, '', `sqlite3 wrote to stderr: ${stderr}`);
        outputs.push(stdout);
      }
      checkAnswers(outputs);
      // The server kept serving while the queries ran.
      await waitFor(() => load !== undefined && load.acks.length > before, 'an ack after the queries');
    }
    // A reader that holds a read transaction open (an operator's long query): it
    // keeps its snapshot while the server goes on committing past it.
    reader = spawn('sqlite3', ['-readonly', db], { stdio: ['pipe', 'pipe', 'pipe'] });
    const readerOut = lines(reader);
    const readerExit = exitOf(reader);
    const early = readerExit.then(({ stderr }): string => {
      throw new Error(`sqlite3 exited: ${stderr}`);
    });
    reader.stdin?.write("BEGIN; SELECT count(*) FROM jobs WHERE queue = 'load';\n");
    const snapshotRows = await Promise.race([readerOut.next(), early]);
    early.catch(() => {}); // it exits normally at the end
    const ackedAtSnapshot = load.acks.length;
    await waitFor(
      () => load !== undefined && load.acks.length >= ackedAtSnapshot + 200,
      'acks past the snapshot',
    );
    reader.stdin?.write("SELECT count(*) FROM jobs WHERE queue = 'load'; COMMIT;\n");
    assert.equal(await readerOut.next(), snapshotRows, 'the long reader kept its snapshot');
    assert.ok(load.acks.length > ackedAtSnapshot, 'acks committed while the reader held its transaction');
    reader.stdin?.end();
    assert.deepEqual(await readerExit, { code: 0, stderr: '' });
    reader = undefined;

    await load.stop();
    assert.deepEqual(load.errors, [], 'no call failed while sqlite3 read the live database');
    assert.deepEqual(problems, [], 'the server logged no warning or error (no SQLITE_BUSY)');
    console.log(
      `live sqlite3: ${rounds} rounds of ${queries.length} documented queries and one long read transaction ` +
        `while the server acknowledged ${load.enqueues.length} enqueues and ${load.acks.length} acks`,
    );
  } finally {
    reader?.kill('SIGKILL');
    await load?.stop();
    await t.dispose();
  }
});

/** The lines a child writes to stdout, one at a time. */
function lines(child: ReturnType<typeof spawn>): { next(): Promise<string> } {
  const waiting: Array<(line: string) => void> = [];
  const ready: string[] = [];
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      const resolve = waiting.shift();
      if (resolve) resolve(line);
      else ready.push(line);
    }
  });
  return {
    next: () => {
      const line = ready.shift();
      return line === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(line);
    },
  };
}

function exitOf(child: ReturnType<typeof spawn>): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

/** Three emails (one dead after two failed attempts, one leased by w2) and a report. */
async function makeFixture(t: TestServer): Promise<void> {
  const job = (queue: string) => testJob(queue, { type: 'send', payload: Buffer.from('{}') });
  for (let i = 0; i < 3; i++) await call(t.client, t.client.enqueue, { job: job('emails') });
  await call(t.client, t.client.enqueue, { job: job('reports') });
  // One job dies after two failed attempts, one stays leased.
  for (let attempt = 1; attempt <= 2; attempt++) {
    const [leased] = (
      await call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: ['emails'],
        maxJobs: 1,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId: 'w1',
      })
    ).jobs;
    assert.ok(leased);
    await call(t.client, t.client.nack, {
      jobId: leased.jobId,
      attempt: leased.attempt,
      errorMessage: `smtp timeout ${attempt}`,
      errorClass: '',
      errorStack: '',
      directive: { $case: 'retryDelayMs', value: 0 },
    });
  }
  await call(t.client, t.client.reserve, {
    maxResponseBytes: 0,
    queues: ['emails'],
    maxJobs: 1,
    leaseDurationMs: 60_000,
    waitTimeoutMs: 0,
    workerId: 'w2',
  });
}

/** What the documented queries answer about makeFixture's jobs, in their order. */
function checkAnswers(outputs: string[]): void {
  const [counts, stuck, died, errors, oldest] = outputs;
  assert.match(counts ?? '', /emails\|dead\|1/);
  assert.match(counts ?? '', /emails\|leased\|1/);
  assert.match(stuck ?? '', /\|emails\|send\|\d+\|w2\|/);
  assert.match(died ?? '', /^emails\|attempts_exhausted\|1\|/m);
  assert.match(errors ?? '', /\|1\|smtp timeout 1\n.*\|2\|smtp timeout 2/);
  assert.match(oldest ?? '', /^(emails|reports)\|1\|/m);
}
