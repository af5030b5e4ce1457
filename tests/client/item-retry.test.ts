/**
 * The advice on repeating one item of a stream (docs/protocol.md, "Whether to repeat a call"):
 * a Produce message's `retry` and a Work settlement's `Settled.retry` say what a unary call's
 * `sepp-retry` trailer says, and the SDK acts on them as on the trailer: `never` fails the item
 * at once with its error, `later` (and `operator`) is retried with the SDK's backoff. A real
 * server refuses a message over its `max_batch_jobs` (`never`) and an enqueue while its disk is
 * full (`later`); no real server refuses a settlement with advice on cue, so a stand-in does.
 * The Python SDK's tests of the same are in clients/python/tests/test_item_retry.py.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type {
  WorkRequest,
  WorkRequest_Settlement,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer } from '../helpers/server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';
import { until } from './helpers.ts';

const retry = { unavailable: true, maxAttempts: 1000, baseDelayMs: 5, maxDelayMs: 20 };

test('Produce: batches are cut at the server max_batch_jobs; an atomic one over it fails at once with retry never', async () => {
  const t = await startTestServer({ toml: '[limits]\nmax_batch_jobs = 4\n' });
  // The SDK's own bound (1000 by default) is above the server's, which it asks for (GetServerInfo).
  const client = SeppClient.connect(t.address, { retry });
  try {
    const outcomes = await client.enqueueBatch(
      Array.from({ length: 10 }, (_, i) => ({ queue: 'q', type: 't', payload: `${i}` })),
    );
    assert.equal(outcomes.filter((o) => o.ok).length, 10);
    assert.equal(client.stats().batches, 3, 'in batches of 4, 4 and 2');
    const alone = await Promise.all(Array.from({ length: 6 }, (_, i) => client.enqueue('q', 't', `${i}`)));
    assert.equal(alone.length, 6);
    assert.equal(client.stats().batches, 5, 'enqueues of one turn, in messages of at most 4');

    // All or nothing, so the SDK cannot split it: no repeat of it can pass.
    const jobs = Array.from({ length: 6 }, (_, i) => ({ queue: 'q', type: 't', payload: `${i}` }));
    const error = await client.enqueueAtomic(jobs).then(
      () => assert.fail('enqueued past the server bound'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof SeppError);
    assert.equal(error.grpcCode, status.RESOURCE_EXHAUSTED);
    assert.equal(error.retry, 'never', 'the answer says what the trailer would');
    assert.match(error.message, /limits\.max_batch_jobs/);
    assert.equal(client.stats().batches, 6, 'sent once, not repeated');
  } finally {
    await client.close();
    await t.dispose();
  }
});

test('grpc-js refusing a message over the server max_message_bytes: never, sent once; a result that big fails its attempt', async () => {
  // The smallest message size the server takes with its default 1 MiB payloads.
  const t = await startTestServer({ toml: '[grpc]\nmax_message_bytes = "1200KiB"\n' });
  const client = SeppClient.connect(t.address, { retry });
  try {
    // All or nothing, so the SDK cannot split it: 1.5 MiB in one call, which no repeat passes.
    const jobs = Array.from({ length: 3 }, () => ({
      queue: 'q',
      type: 't',
      payload: 'x'.repeat(500 * 1024),
    }));
    const error = await client.enqueueAtomic(jobs).then(
      () => assert.fail('stored past the server message size'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof SeppError);
    assert.equal(error.grpcCode, status.RESOURCE_EXHAUSTED);
    assert.match(error.message, /^Received message larger than max/);
    assert.match(
      error.message,
      /larger than the server's grpc\.max_message_bytes .*send fewer jobs or smaller payloads/,
    );
    assert.equal(error.retry, 'never', "read as the server's never: no sepp trailer");
    assert.equal(client.stats().batches, 1, 'sent once, not repeated');

    // Enqueues of one turn that fit alone but not together go in messages the server takes.
    const each = await Promise.all(
      Array.from({ length: 3 }, () => client.enqueue('q', 't', 'x'.repeat(500 * 1024))),
    );
    assert.equal(each.length, 3);
    assert.equal(client.stats().batches, 3, 'two messages for the three, not one');

    // A result larger than any message the server takes: the attempt fails saying so, at once,
    // instead of the job running again when its lease (here an hour) runs out.
    const { id } = await client.enqueue('big-result', 't', '', { maxAttempts: 1 });
    const failed: string[] = [];
    const worker = client.worker({
      queues: ['big-result'],
      leaseMs: 3_600_000,
      logger: { info() {}, warn() {}, error() {} },
      fallback: async () => 'r'.repeat(2 * 1024 * 1024),
    });
    worker.on('failed', (_job, e) => failed.push(e.message));
    try {
      await until(
        async () => (await client.getJob(id)).state === 'dead',
        'the job dead after its one attempt',
      );
      assert.equal(worker.state, 'running', 'the worker goes on');
      assert.match(failed[0] ?? '', /larger than max/);
    } finally {
      await worker.close({ timeoutMs: 0 });
    }
  } finally {
    await client.close();
    await t.dispose();
  }
});

const canMount =
  process.getuid?.() === 0 && spawnSync('mount', ['--version'], { stdio: 'ignore' }).status === 0;

test('Produce: an enqueue refused for a full disk says retry later, and is retried until it passes', {
  skip: canMount ? false : 'needs root to mount a small tmpfs (CI runs as root)',
}, async () => {
  const mountPoint = mkdtempSync(join(tmpdir(), 'sepp-item-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mountPoint]);
  const dataDir = join(mountPoint, 'data');
  mkdirSync(dataDir);
  // The engine's clock: the server looks for room again once a second of it.
  const clock = new FakeClock();
  const t = await startTestServer({ dataDir, clock, env: { SEPP_DISK_RESERVE_BYTES: '256KiB' } });
  const once = SeppClient.connect(t.address);
  const retried = SeppClient.connect(t.address, { retry });
  const filler = join(mountPoint, 'filler');
  try {
    try {
      writeFileSync(filler, Buffer.alloc(8 * 1024 * 1024));
    } catch {
      // ENOSPC: the filler took every free block it could.
    }
    // The first enqueue that needs room fails its commit; from then on enqueues are refused.
    const big = 'x'.repeat(512 * 1024);
    const refused = await once.enqueue('q', 't', big).then(
      () => assert.fail('stored on a full disk'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof SeppError);
    assert.equal(refused.grpcCode, status.UNAVAILABLE, refused.message);
    assert.equal(refused.retry, 'later', 'the answer says what the trailer would');
    assert.equal(once.stats().produceMessages, 1, 'without retries: sent once');

    const enqueued = retried.enqueue('q', 't', 'small');
    await until(() => retried.stats().produceMessages >= 3, 'the refused enqueue is sent again');
    rmSync(filler);
    clock.advance(1000);
    assert.match((await enqueued).id, /./, 'stored once the disk has room');
  } finally {
    await once.close();
    await retried.close();
    await t.dispose();
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

/**
 * A stand-in for sepp's Work stream: it leases one job to each stream and answers every
 * settlement with UNAVAILABLE and the advice its `worker_id` names (`never`, `later`) — the
 * `later` one only until its third try, then OK.
 */
async function standIn(): Promise<{ address: string; tries: Map<string, number>; close(): void }> {
  const server = new grpc.Server();
  const tries = new Map<string, number>();
  server.addService(QueueServiceService, {
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      let advice = '';
      const settle = ({ requestId }: { requestId: number }) => {
        const n = (tries.get(advice) ?? 0) + 1;
        tries.set(advice, n);
        const ok = advice === 'later' && n >= 3;
        const settled = {
          requestId,
          code: ok ? status.OK : status.UNAVAILABLE,
          message: ok ? '' : 'stand-in: storage unavailable, nothing was written',
          result: ok ? { $case: 'ack' as const, value: {} } : undefined,
          errorCode: ok ? '' : 'unavailable',
          retry: ok ? '' : advice,
        };
        call.write({ kind: { $case: 'settled', value: settled } });
      };
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        if (kind?.$case === 'subscribe') {
          advice = kind.value.workerId;
          const job = LeasedJob.fromPartial({
            jobId: `job-${advice}`,
            queue: 'q',
            type: 't',
            attempt: 1,
            maxAttempts: 5,
            leaseDeadlineMs: Date.now() + 60_000,
          });
          call.write({ kind: { $case: 'job', value: job } });
        } else if (kind?.$case === 'ack') settle(message);
        else if (kind?.$case === 'batch')
          for (const s of kind.value.settlements as WorkRequest_Settlement[]) settle(s);
      });
      call.on('end', () => call.end());
    },
  });
  const address = await listenOnLoopback(server);
  return { address, tries, close: () => server.forceShutdown() };
}

test('Work: an ack answered retry never fails at once; one answered retry later is retried', async () => {
  const server = await standIn();
  const client = SeppClient.connect(server.address);
  const logger = { info() {}, warn() {}, error() {} };
  try {
    for (const advice of ['never', 'later'] as const) {
      const errors: SeppError[] = [];
      let completed = 0;
      const worker = client.worker({
        queues: ['q'],
        workerId: advice,
        concurrency: 1,
        reconnect: { baseDelayMs: 1, maxDelayMs: 5 },
        logger,
        fallback: async () => 'done',
      });
      worker.on('error', (error) => errors.push(error));
      worker.on('completed', () => completed++);
      try {
        if (advice === 'never') {
          await until(() => errors.length >= 1, 'the refused ack reported');
          assert.equal(errors[0]?.grpcCode, status.UNAVAILABLE);
          assert.equal(errors[0]?.retry, 'never');
          assert.equal(completed, 0);
          assert.equal(server.tries.get('never'), 1, 'the ack was not sent again');
        } else {
          await until(() => completed === 1, 'the ack retried until it passed');
          assert.equal(server.tries.get('later'), 3);
          assert.deepEqual(
            errors.map((e) => e.retry),
            ['later', 'later'],
            'each refused try reported, with its advice',
          );
        }
      } finally {
        await worker.close({ timeoutMs: 0 });
      }
    }
  } finally {
    await client.close();
    server.close();
  }
});
