/**
 * Durability per queue (issue 35), seen from outside the server: strace records its
 * fsyncs of the WAL, its writes to the WAL (commits) and to sockets (answers: only
 * the test's client is connected).
 *
 * - a `full` queue: every commit is followed by an fsync of the WAL before the next
 *   answer leaves — no answer before its fsync;
 * - a `relaxed` queue: its commits are answered without one;
 * - both at once: the full queue's enqueues are each synced, the relaxed queue's
 *   commits beside them are not;
 * - `kill -9` after all that: a restart finds every acknowledged job of both queues.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.ts';
import { call, testJob } from '../helpers/server.ts';
import { commandExists } from '../packaging/syscalls.ts';

const toml = `
[queues.ledger]
durability = "full"
[queues.metrics]
durability = "relaxed"
`;

/** What strace saw, in order: a WAL write (a commit), a WAL fsync, a write to a socket (an answer). */
type Seen = 'wal-write' | 'wal-sync' | 'answer';

/** Traces `pid` (every thread) while `work` runs, and returns what it did to the WAL and its sockets. */
async function traced(pid: number, dir: string, work: () => Promise<void>): Promise<Seen[]> {
  const out = join(dir, `strace-${Date.now()}.txt`);
  const strace: ChildProcess = spawn(
    'strace',
    ['-f', '-y', '-e', 'trace=fsync,fdatasync,pwrite64,write,writev', '-o', out, '-p', String(pid)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  strace.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => strace.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!/attached/.test(stderr)) {
    if (Date.now() > deadline || strace.exitCode !== null)
      throw new Error(`strace did not attach: ${stderr}`);
    await sleep(20);
  }
  try {
    await work();
  } finally {
    strace.kill('SIGINT');
    await exited;
  }
  const seen: Seen[] = [];
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /^\d+\s+(fsync|fdatasync|pwrite64|write|writev)\(\d+<([^>]*)>/.exec(line);
    if (m === null) continue;
    const [, syscall, path] = m;
    if (path?.endsWith('sepp.db-wal'))
      seen.push(syscall === 'fsync' || syscall === 'fdatasync' ? 'wal-sync' : 'wal-write');
    else if (path?.startsWith('socket:')) seen.push('answer');
  }
  return seen;
}

/** Answers that left after a commit with no fsync of the WAL between them. */
function answersBeforeSync(seen: readonly Seen[]): number {
  let unsynced = false;
  let count = 0;
  for (const event of seen) {
    if (event === 'wal-write') unsynced = true;
    else if (event === 'wal-sync') unsynced = false;
    else if (unsynced) {
      count++;
      // One commit, one answer counted: further writes are the same answer's frames.
      unsynced = false;
    }
  }
  return count;
}

const count = (seen: readonly Seen[], what: Seen) => seen.filter((s) => s === what).length;

describe('durability per queue (strace)', {
  skip: !commandExists('strace') && 'strace is not installed',
}, () => {
  let dir: string;
  let dataDir: string;
  let server: ServerProcess;
  let client: QueueServiceClient;
  const enqueued = { ledger: 0, metrics: 0 };
  const enqueue = async (queue: 'ledger' | 'metrics') => {
    await call(client, client.enqueue, { job: testJob(queue) });
    enqueued[queue]++;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-durability-'));
    dataDir = join(dir, 'data');
    const config = join(dir, 'sepp.toml');
    writeFileSync(config, toml);
    server = await startServerProcess(dataDir, [], { env: { SEPP_CONFIG: config } });
    client = new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    // The connection and both queues exist before anything is traced.
    await enqueue('ledger');
    await enqueue('metrics');
  });
  after(async () => {
    client.close();
    await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a full queue: every enqueue is fsync’d before it is answered', async () => {
    const pid = server.child.pid ?? 0;
    const seen = await traced(pid, dir, async () => {
      for (let i = 0; i < 40; i++) await enqueue('ledger');
    });
    assert.ok(count(seen, 'wal-sync') >= 40, `${count(seen, 'wal-sync')} syncs for 40 enqueues`);
    assert.equal(answersBeforeSync(seen), 0, 'an answer left before the fsync of its commit');
  });

  test('a relaxed queue: its enqueues are answered without an fsync', async () => {
    const pid = server.child.pid ?? 0;
    const seen = await traced(pid, dir, async () => {
      for (let i = 0; i < 40; i++) await enqueue('metrics');
    });
    // A maintenance pass may write (and sync) meanwhile: nearly none, not one per job.
    assert.ok(count(seen, 'wal-sync') <= 3, `${count(seen, 'wal-sync')} syncs for 40 relaxed enqueues`);
    assert.ok(answersBeforeSync(seen) >= 37, `${answersBeforeSync(seen)} of 40 answered before a sync`);
  });

  test('side by side: the full queue is synced each time, the relaxed one beside it is not', async () => {
    const pid = server.child.pid ?? 0;
    const seen = await traced(pid, dir, async () => {
      let fullDone = false;
      const relaxed = (async () => {
        while (!fullDone) await enqueue('metrics');
      })();
      for (let i = 0; i < 30; i++) await enqueue('ledger');
      fullDone = true;
      await relaxed;
    });
    const syncs = count(seen, 'wal-sync');
    assert.ok(syncs >= 30, `${syncs} syncs for 30 full enqueues`);
    assert.ok(
      answersBeforeSync(seen) > 0,
      'the relaxed queue’s commits were answered without waiting for an fsync',
    );
  });

  test('kill -9, restart: every acknowledged job of both queues is there', async () => {
    await server.stop('SIGKILL');
    client.close();
    server = await startServerProcess(dataDir, [], { env: { SEPP_CONFIG: join(dir, 'sepp.toml') } });
    client = new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const { queues } = await call(client, client.listQueues, { pageSize: 0, pageToken: '' });
    const ready = Object.fromEntries(queues.map((q) => [q.name, q.counts?.ready ?? 0]));
    assert.deepEqual(ready, { ledger: enqueued.ledger, metrics: enqueued.metrics });
  });
});
