/**
 * Cancel of a running job through the real Worker, on both transports: the
 * handler's signal aborts with a JobCancelledError (at once on the Work
 * stream; at the next lease extension on unary calls), no ack and no retry
 * follow, and the job ends `cancelled` — also when the handler ignores the
 * signal and returns as if it succeeded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JobCancelledError, SeppClient, type Worker, type WorkerOptions } from '@sepp-queue/client';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred, nextEvents, until } from './helpers.ts';

const leaseMs = 30_000;

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker: cancel of a running job (${transport})`, () => {
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

    const start = (options: Omit<WorkerOptions, 'clock' | 'leaseMs'>) => {
      const worker = client.worker({ clock, leaseMs, ...options });
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      workers.push(worker);
      return worker;
    };

    /** On unary calls the worker hears of the cancel when it next extends the lease (every third of it). */
    const letWorkerNotice = async (worker: Worker) => {
      if (transport === 'stream') return;
      const extended = nextEvents(worker, 'cancelled');
      clock.advance(leaseMs / 3);
      await extended;
    };

    const settlements = () => {
      const seen: string[] = [];
      return {
        seen,
        watch(worker: Worker) {
          worker.on('completed', (job) => seen.push(`completed ${job.id}`));
          worker.on('failed', (job) => seen.push(`failed ${job.id}`));
          worker.on('leaseLost', (job) => seen.push(`leaseLost ${job.id}`));
        },
      };
    };

    test('the handler is aborted with a JobCancelledError, and the job ends cancelled with no ack or retry', async () => {
      const queue = `cancel-abort-${transport}`;
      const { id } = await client.enqueueJson(queue, 'long', { n: 1 });
      const reason = deferred<unknown>();
      const started = deferred();
      const worker = start({
        queues: [queue],
        handlers: {
          long: (_job, signal) =>
            new Promise((_resolve, reject) => {
              started.resolve();
              signal.addEventListener('abort', () => {
                reason.resolve(signal.reason);
                reject(signal.reason);
              });
            }),
        },
      });
      const seen = settlements();
      seen.watch(worker);
      const cancelledEvent = nextEvents<[unknown, JobCancelledError]>(worker, 'cancelled');
      await started.promise;
      assert.deepEqual(await client.cancelJob(id), { previousState: 'leased', state: 'leased' });
      await letWorkerNotice(worker);
      const [, error] = await cancelledEvent;
      const aborted = await reason.promise;
      assert.ok(aborted instanceof JobCancelledError, `aborted with ${String(aborted)}`);
      assert.equal(aborted, error);
      assert.equal(aborted.code, 'job_cancelled');
      assert.match(aborted.message, /was cancelled by anonymous/);
      await until(() => worker.running === 0, 'the handler to end');
      await until(
        async () => (await t.server.engine.getJob(id)).state === 'cancelled',
        'the job to be cancelled',
      );
      const job = await client.getJob(id);
      assert.equal(job.attempt, 1, 'no retry');
      assert.equal(job.cancelledBy, 'anonymous');
      // The worker ended the attempt with a nack carrying the cancel (an ack would leave no error).
      assert.match(job.lastError ?? '', /was cancelled by anonymous/);
      assert.deepEqual(seen.seen, [], 'neither completed, failed nor lease lost');
      const counts = (await client.listQueues()).find((q) => q.name === queue)?.counts;
      assert.equal(counts?.cancelled, 1);
      assert.equal(counts?.ready, 0);
    });

    test('a handler that ignores the signal and returns is not acked: the job still ends cancelled', async () => {
      const queue = `cancel-ignore-${transport}`;
      const { id } = await client.enqueueJson(queue, 'stubborn', {});
      const gate = deferred();
      const started = deferred();
      const worker = start({
        queues: [queue],
        handlers: {
          stubborn: async () => {
            started.resolve();
            await gate.promise;
          },
        },
      });
      const seen = settlements();
      seen.watch(worker);
      await started.promise;
      const cancelled = nextEvents(worker, 'cancelled');
      await client.cancelJob(id);
      await letWorkerNotice(worker);
      await cancelled;
      gate.resolve();
      await until(
        async () => (await t.server.engine.getJob(id)).state === 'cancelled',
        'the job to be cancelled',
      );
      await until(() => worker.running === 0, 'the slot to free');
      assert.deepEqual(seen.seen, []);
      assert.match((await client.getJob(id)).lastError ?? '', /was cancelled/, 'a nack, not an ack');
      // The worker goes on with other jobs.
      const done = nextEvents(worker, 'completed');
      await client.enqueueJson(queue, 'stubborn', {});
      await done;
    });

    test('a cancel that races the ack: the ack is refused, the job is cancelled, not completed', async () => {
      const queue = `cancel-race-${transport}`;
      const { id } = await client.enqueueJson(queue, 'quick', {});
      const [leased] = await client.reserve({ queues: [queue], leaseMs });
      assert.equal(leased?.id, id);
      await client.cancelJob(id);
      const refused = await client.ack(leased!).then(
        () => assert.fail('the ack of a cancelled job succeeded'),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof JobCancelledError, String(refused));
      assert.equal((await client.getJob(id)).state, 'cancelled');
      const results = await client.ackBatch([leased!]);
      assert.equal(results[0]?.outcome, 'not_found');
    });
  });
}
