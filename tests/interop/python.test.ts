/**
 * A second language speaks the protocol: Python producer → TypeScript worker,
 * and TypeScript producer → Python worker, against the real server. Uses
 * Debian's python3-grpcio and python3-grpc-tools (.ci/run installs them).
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const python = '/usr/bin/python3';
const run = promisify(execFile);
const hasGrpc = spawnSync(python, ['-c', 'import grpc, grpc_tools'], { stdio: 'ignore' }).status === 0;

describe('Python interop', {
  skip: hasGrpc
    ? false
    : 'python3-grpcio / python3-grpc-tools are not installed (apt-get install python3-grpcio python3-grpc-tools)',
}, () => {
  let t: TestServer;
  let stubs: string;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    t = await startTestServer();
    stubs = mkdtempSync(join(tmpdir(), 'sepp-pystubs-'));
    env = { ...process.env, SEPP_SERVER: t.address, SEPP_PY_STUBS: stubs };
  });
  after(async () => {
    await t.dispose();
    rmSync(stubs, { recursive: true, force: true });
  });

  test('a Python producer enqueues, a TypeScript worker receives the same job', async () => {
    const { stdout } = await run(
      python,
      ['examples/python/producer.py', 'py-to-ts', 'greet', '{"name":"Ada"}'],
      { env },
    );
    const jobId = stdout.trim();
    assert.match(jobId, /^[0-9a-f-]{36}$/);
    const { jobs } = await call(t.client, t.client.reserve, {
      queues: ['py-to-ts'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 5000,
      workerId: 'ts',
    });
    assert.equal(jobs[0]?.jobId, jobId);
    assert.equal(jobs[0]?.type, 'greet');
    assert.equal(jobs[0]?.contentType, 'application/json');
    assert.deepEqual(JSON.parse(jobs[0]?.payload.toString() ?? ''), { name: 'Ada' });
    await call(t.client, t.client.ack, { jobId, attempt: 1 });
  });

  test('a TypeScript producer enqueues, a Python worker runs, acks and nacks', async () => {
    const job = (payload: string) =>
      testJob('ts-to-py', { type: 'resize', payload: Buffer.from(payload), contentType: 'application/json' });
    const ok = await call(t.client, t.client.enqueue, { job: job('{"w":640}') });
    const bad = await call(t.client, t.client.enqueue, { job: job('{"fail":"no such image"}') });
    const { stdout } = await run(python, ['examples/python/worker.py', 'ts-to-py', '--max-jobs', '2'], {
      env,
      timeout: 60_000,
    });
    assert.match(stdout, new RegExp(`^${ok.jobId} resize 1 \\{"w":640\\}$`, 'm'));
    assert.throws(() => t.server.engine.getJob(ok.jobId), /does not exist/, 'acked jobs are deleted');
    const failed = t.server.engine.getJob(bad.jobId);
    assert.equal(failed.state, 'scheduled', 'a nack retries with backoff');
    assert.equal(failed.lastError, 'no such image');
  });
});
