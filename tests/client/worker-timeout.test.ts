/**
 * Hard execution timeout through the real Worker over gRPC, on both transports:
 * once the attempt's `timeoutMs` passes on the server's clock, the handler's
 * signal aborts with a JobTimeoutError (at once on the Work stream, told by the
 * server's notice; at the next lease extension on unary calls, which the server
 * refuses with `job_timed_out`), the handler really stops, nothing of that
 * attempt is settled by the worker, and the server's retry policy decides what
 * follows (here the last attempt: dead, reason `timeout`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JobTimeoutError, LeaseLostError, SeppClient, type Worker } from '@sepp-queue/client';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred, nextEvents, until } from './helpers.ts';

const leaseMs = 30_000;
const timeoutMs = 5000;

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker: hard timeout of a running job (${transport})`, () => {
    let t: TestServer;
    let client: SeppClient;
    const clock = new FakeClock(Date.UTC(2026, 3, 1));
    const workers: Worker[] = [];

    before(async () => {
      t = await startTestServer({ clock });
      client = SeppClient.connect(t.address, { transport });
    });
    after(async () => {
      await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
      await client.close();
      await t.dispose();
    });

    /** Past the timeout; on unary calls on to the worker's next extend (a third of its lease). */
    const passTimeout = () => {
      clock.advance(timeoutMs);
      if (transport === 'unary') clock.advance(leaseMs / 3 - timeoutMs);
    };

    test('the handler is aborted with a JobTimeoutError and stops; the server fails the attempt (reason timeout)', async () => {
      const queue = `timeout-abort-${transport}`;
      const { id } = await client.enqueueJson(
        queue,
        'hang',
        { n: 1 },
        { executionTimeoutMs: timeoutMs, maxAttempts: 1 },
      );
      const started = deferred();
      const stopped = deferred<unknown>();
      let steps = 0;
      const worker = client.worker({
        clock,
        leaseMs,
        queues: [queue],
        handlers: {
          // Works in steps until its signal says stop: a handler that would run for ever.
          hang: async (_job, signal) => {
            started.resolve();
            while (!signal.aborted) {
              steps++;
              await new Promise((resolve) => setImmediate(resolve));
            }
            stopped.resolve(signal.reason);
            throw signal.reason;
          },
        },
      });
      workers.push(worker);
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      const seen: string[] = [];
      worker.on('completed', (job) => seen.push(`completed ${job.id}`));
      worker.on('failed', (job) => seen.push(`failed ${job.id}`));
      worker.on('leaseLost', (job) => seen.push(`leaseLost ${job.id}`));
      const timedOut = nextEvents<[unknown, JobTimeoutError]>(worker, 'timedOut');
      await started.promise;
      const leased = await client.getJob(id);
      assert.equal(leased.state, 'leased');
      assert.equal(leased.timeoutMs, timeoutMs);
      assert.equal(leased.timeoutAt?.getTime(), clock.nowMs() + timeoutMs);
      passTimeout();
      const [, error] = await timedOut;
      const reason = await stopped.promise;
      assert.ok(reason instanceof JobTimeoutError, `aborted with ${String(reason)}`);
      assert.ok(reason instanceof LeaseLostError, 'the attempt is over: a lost lease');
      assert.equal(reason, error);
      assert.equal(reason.code, 'job_timed_out');
      assert.match(reason.message, /ran past its hard timeout/);
      await until(() => worker.running === 0, 'the handler to end');
      const stepsAtEnd = steps;
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(steps, stepsAtEnd, 'the handler really stopped');
      const job = await client.getJob(id);
      assert.equal(job.state, 'dead');
      assert.equal(job.deadReason, 'timeout');
      assert.equal(job.attempt, 1);
      assert.match(job.lastError ?? '', /^timeout: /, 'the server ended it, not a nack of the worker');
      assert.deepEqual(seen, [], 'neither completed, failed nor lease lost');
    });

    test('a handler that ignores the signal and returns: its ack is fenced, the retry runs as attempt 2', async () => {
      const queue = `timeout-ignore-${transport}`;
      const { id } = await client.enqueueJson(queue, 'stubborn', {}, { executionTimeoutMs: timeoutMs });
      // The retry at once, not after a backoff on the test's clock.
      await client.queues.setSettings(queue, { backoff_base_ms: 0 });
      const gate = deferred();
      const attempts: number[] = [];
      const worker = client.worker({
        clock,
        leaseMs,
        queues: [queue],
        handlers: {
          stubborn: async (job) => {
            attempts.push(job.attempt);
            if (job.attempt === 1) await gate.promise;
          },
        },
      });
      workers.push(worker);
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      const timedOut = nextEvents(worker, 'timedOut');
      await until(() => attempts.length === 1, 'the first attempt to start');
      passTimeout();
      await timedOut;
      const completed = nextEvents<[{ id: string; attempt: number }]>(worker, 'completed');
      gate.resolve();
      const [done] = await completed;
      assert.equal(done.id, id);
      assert.equal(done.attempt, 2, 'attempt 1 was never acked');
      assert.deepEqual(attempts, [1, 2]);
      const job = await client.getJob(id);
      assert.equal(job.attempt, 2);
    });
  });
}
