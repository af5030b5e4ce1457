/** `sepp serve` as a process: SIGTERM answers waiting long-polls, checkpoints the WAL and exits 0 quickly. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../src/rpc/gen/sepp/v1/queue_service.js';
import { call } from '../helpers/server.ts';

test('SIGTERM: long-polls get an empty list, the WAL is checkpointed, exit code 0 within 10 s', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-sigterm-'));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--data-dir',
      dataDir,
      '--grpc-listen',
      '127.0.0.1:0',
      '--admin-listen',
      '127.0.0.1:0',
      '--log-format',
      'json',
    ],
    { env: { ...process.env, SEPP_CONFIG: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  try {
    let logs = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        logs += chunk.toString();
        const started = logs.split('\n').find((l) => l.includes('"server.started"'));
        if (started) resolve(Number((JSON.parse(started) as { grpc: string }).grpc.split(':').pop()));
      });
      child.on('exit', (code) => reject(new Error(`server exited early with ${code}: ${logs}`)));
    });
    const client = new QueueServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
    const job = {
      queue: 'q',
      type: 't',
      payload: Buffer.from('x'),
      contentType: '',
      priority: 0,
      schedule: undefined,
      maxAttempts: 0,
      idempotencyKey: '',
      metadata: {},
      traceparent: '',
      tracestate: '',
    };
    await call(client, client.enqueue, { job });
    const reserve = { queues: ['q'], maxJobs: 1, leaseDurationMs: 0, waitTimeoutMs: 30_000, workerId: '' };
    assert.equal((await call(client, client.reserve, reserve)).jobs.length, 1);
    const waiting = call(client, client.reserve, reserve);
    // The signal must find the long-poll waiting: poll until the server reports it.
    for (;;) {
      const { queues } = await call(client, client.listQueues, {});
      if (queues.find((q) => q.name === 'q')?.waitingWorkers === 1) break;
    }
    const startedMs = Date.now();
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const { jobs } = await waiting;
    assert.deepEqual(jobs, []);
    const code = await exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - startedMs < 10_000, 'exits within 10 s');
    assert.equal(
      statSync(join(dataDir, 'sepp.db-wal'), { throwIfNoEntry: false })?.size ?? 0,
      0,
      'WAL checkpointed',
    );
    assert.match(logs, /"server.stopped"/);
    client.close();
  } finally {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
