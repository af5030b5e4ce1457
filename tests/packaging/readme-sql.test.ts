/** The sqlite3 queries in the README's "Inspecting the database" run on a backup and answer. */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { FakeClock } from '../../src/engine/clock.ts';
import { call, startTestServer, testJob } from '../helpers/server.ts';

const hasSqlite = spawnSync('sqlite3', ['-version'], { stdio: 'ignore' }).status === 0;

function readmeQueries(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.split('## Inspecting the database')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

test('README sqlite3 queries run on a copy made by sepp backup', {
  skip: hasSqlite ? false : 'sqlite3 is not installed (apt-get install sqlite3)',
}, async () => {
  const queries = readmeQueries();
  assert.ok(queries.length >= 5, 'the README section has its queries');
  const clock = new FakeClock(Date.now());
  const t = await startTestServer({ clock, toml: '[queues.emails]\nmax_attempts = 2\n' });
  const dir = mkdtempSync(join(tmpdir(), 'sepp-readme-'));
  try {
    const job = (queue: string) => testJob(queue, { type: 'send', payload: Buffer.from('{}') });
    for (let i = 0; i < 3; i++) await call(t.client, t.client.enqueue, { job: job('emails') });
    await call(t.client, t.client.enqueue, { job: job('reports') });
    // One job dies after two failed attempts, one stays leased.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [leased] = (
        await call(t.client, t.client.reserve, {
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
        directive: { $case: 'retryDelayMs', value: 0 },
      });
    }
    await call(t.client, t.client.reserve, {
      queues: ['emails'],
      maxJobs: 1,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: 'w2',
    });
    const file = join(dir, 'copy.db');
    // Asynchronously: the server runs in this process and must keep answering.
    await promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'backup',
      file,
      '--server',
      t.address,
    ]);
    const outputs = queries.map((sql) =>
      execFileSync('sqlite3', ['-readonly', file], { input: sql, encoding: 'utf8' }),
    );
    const [counts, stuck, died, errors, oldest] = outputs;
    assert.match(counts ?? '', /emails\|dead\|1/);
    assert.match(counts ?? '', /emails\|leased\|1/);
    assert.match(stuck ?? '', /\|emails\|send\|\d+\|w2\|/);
    assert.match(died ?? '', /^emails\|attempts_exhausted\|1\|/m);
    assert.match(errors ?? '', /\|1\|smtp timeout 1\n.*\|2\|smtp timeout 2/);
    assert.match(oldest ?? '', /^(emails|reports)\|1\|/m);
  } finally {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
