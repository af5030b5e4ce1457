/**
 * The Worker against the real server, on both transports (Work streams and
 * unary Reserve), with the server and the worker on one fake clock so lease
 * timing is driven by the test, never by sleeping.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  DeadLetter,
  LeaseLostError,
  RetryAfter,
  SeppClient,
  SeppError,
  type Worker,
  type WorkerJob,
  type WorkerOptions,
} from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { type Deferred, deferred, heardBack, nextEvents, until } from './helpers.ts';

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker (${transport})`, () => {
    let t: TestServer;
    let client: SeppClient;
    const clock = new FakeClock(Date.UTC(2026, 2, 1));
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

    const start = (options: Omit<WorkerOptions, 'clock'>) => {
      const worker = client.worker({ clock, ...options });
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      workers.push(worker);
      return worker;
    };

    /** Runs the engine's time-driven work now (the fake clock fires its timer, this awaits the write). */
    const maintenance = () => t.server.engine.runMaintenance();

    test('never runs more handlers, nor holds more leases, than its concurrency', async () => {
      const queue = `conc-${transport}`;
      for (let i = 0; i < 12; i++) await client.enqueueJson(queue, 'work', { i });
      const gates: Deferred[] = [];
      const jobs: WorkerJob[] = [];
      let running = 0;
      let maxRunning = 0;
      let maxLeased = 0;
      const leased = async () =>
        (await t.server.engine.listQueues()).find((q) => q.name === queue)?.counts.leased ?? 0;
      const worker = start({
        queues: [queue],
        concurrency: 3,
        // Nothing leased ahead (prefetch 'auto', the default, holds jobs once its first runs finished).
        prefetch: 0,
        handlers: {
          work: async (job) => {
            running++;
            maxRunning = Math.max(maxRunning, running);
            const gate = deferred();
            gates.push(gate);
            jobs.push(job);
            await gate.promise;
            running--;
          },
        },
      });
      worker.on('started', () => {
        // Read at the event (the store answers at once); delivered a microtask later.
        void leased().then((n) => {
          maxLeased = Math.max(maxLeased, n);
        });
      });
      let completed = 0;
      worker.on('completed', () => completed++);
      await until(() => gates.length === 3, 'three jobs to start');
      // Nine jobs are ready: credit for a fourth slot, asked for as the third job started, would
      // be a lease on the server by the time the server has answered what the worker said after.
      await heardBack(jobs);
      assert.equal(await leased(), 3, 'the server leased exactly the free slots');
      assert.equal(gates.length, 3, 'a fourth job started while three were running');
      // Finish them one at a time; each frees exactly one slot.
      for (let done = 0; done < 12; done++) {
        gates[done]?.resolve();
        await until(() => completed === done + 1 && gates.length === Math.min(12, done + 4), 'the next job');
        await heardBack(jobs.slice(done + 1));
        assert.equal(await leased(), gates.length - done - 1, 'one lease per running job');
      }
      assert.equal(maxRunning, 3);
      assert.ok(maxLeased <= 3, `saw ${maxLeased} leases at once`);
    });

    test('extends a slow job’s lease so it outlives its first deadline', async () => {
      const queue = `slow-${transport}`;
      const { id } = await client.enqueueJson(queue, 'slow', {});
      const gate = deferred();
      const worker = start({ queues: [queue], leaseMs: 30_000, handlers: { slow: () => gate.promise } });
      const [job] = await nextEvents<[WorkerJob]>(worker, 'started');
      assert.equal(job.id, id);
      const firstDeadlineMs = job.leaseDeadlineMs;
      for (let i = 0; i < 4; i++) {
        const extended = nextEvents<[WorkerJob, Date]>(worker, 'extended');
        clock.advance(10_000); // A third of the lease: time for an extension.
        const [, deadline] = await extended;
        assert.equal(deadline.getTime(), clock.nowMs() + 30_000);
      }
      assert.ok(clock.nowMs() > firstDeadlineMs, 'the test moved past the first lease deadline');
      await maintenance();
      const seen = await client.getJob(id);
      assert.equal(seen.state, 'leased');
      assert.equal(seen.attempt, 1, 'the lease never expired');
      const completed = nextEvents(worker, 'completed');
      gate.resolve();
      await completed;
      // Completed and deleted on ack (retention 0): only its outcome is kept.
      const done = await client.getJob(id);
      assert.equal(done.state, 'completed');
      assert.equal(done.outcomeOnly, true);
    });

    test('a lost lease aborts the handler’s signal and sends no ack', async () => {
      const queue = `lost-${transport}`;
      const { id } = await client.enqueueJson(queue, 'lose', {});
      const acked: number[] = [];
      const engineAck = t.server.engine.ack.bind(t.server.engine);
      t.server.engine.ack = (settle) => {
        if (settle.jobId === id) acked.push(settle.attempt);
        return engineAck(settle);
      };
      const gate = deferred();
      let abortReason: unknown;
      const worker = start({
        queues: [queue],
        leaseMs: 6000,
        handlers: {
          lose: async (job) => {
            if (job.attempt > 1) return; // The redelivery simply succeeds.
            job.signal.addEventListener('abort', () => {
              abortReason = job.signal.reason;
            });
            await gate.promise;
          },
        },
      });
      const [first] = await nextEvents<[WorkerJob]>(worker, 'started');
      // Someone else takes the job: its lease expires while the worker's extension is still on its way.
      const lost = nextEvents<[WorkerJob, LeaseLostError]>(worker, 'leaseLost');
      clock.advance(7000);
      await maintenance();
      const [lostJob, error] = await lost;
      assert.equal(lostJob.id, first.id);
      assert.ok(error instanceof LeaseLostError);
      assert.ok(first.signal.aborted);
      assert.ok(abortReason instanceof LeaseLostError);
      // The handler finishes anyway: nothing is settled for attempt 1; the job comes back as attempt 2.
      const again = nextEvents<[WorkerJob]>(worker, 'completed');
      gate.resolve();
      const [redelivered] = await again;
      assert.equal(redelivered.attempt, 2);
      assert.deepEqual(acked, [2], 'only the redelivery was acked');
      t.server.engine.ack = engineAck;
    });

    test('a signal first read after the lease was lost is already aborted with the LeaseLostError', async () => {
      const queue = `lost-late-${transport}`;
      await client.enqueueJson(queue, 'lose', {});
      const gate = deferred();
      let lateSignal: AbortSignal | undefined;
      const worker = start({
        queues: [queue],
        leaseMs: 6000,
        handlers: {
          // Never looks at the signal while the lease is lost, so none exists yet then.
          lose: async (job) => {
            if (job.attempt > 1) return;
            await gate.promise;
            lateSignal = job.signal;
          },
        },
      });
      await nextEvents<[WorkerJob]>(worker, 'started');
      const lost = nextEvents<[WorkerJob, LeaseLostError]>(worker, 'leaseLost');
      clock.advance(7000);
      await maintenance();
      const [, error] = await lost;
      const again = nextEvents<[WorkerJob]>(worker, 'completed');
      gate.resolve();
      await again;
      assert.ok(lateSignal?.aborted);
      assert.equal(lateSignal.reason, error);
    });

    test('a handler gets job.signal as its second argument however it declares its parameters', async () => {
      const queue = `signal-arg-${transport}`;
      const seen: string[] = [];
      const check = (name: string, job: WorkerJob, signal: unknown) => {
        if (signal === job.signal && signal instanceof AbortSignal) seen.push(name);
      };
      const inner = (job: WorkerJob, signal: AbortSignal) => check('wrapped', job, signal);
      const handlers = {
        plain: (job: WorkerJob, signal: AbortSignal) => check('plain', job, signal),
        defaulted: (job: WorkerJob, signal: AbortSignal | undefined = undefined) =>
          check('defaulted', job, signal),
        rest: (...args: [WorkerJob, AbortSignal]) => check('rest', args[0], args[1]),
        wrapped: (...args: [WorkerJob, AbortSignal]) => inner(...args),
        bound: function (this: string, job: WorkerJob, signal: AbortSignal) {
          check(this, job, signal);
        }.bind('bound'),
        args: function (job: WorkerJob) {
          // biome-ignore lint/complexity/noArguments: a handler reading `arguments` is the case under test.
          check('args', job, arguments[1]);
        },
      };
      for (const type of Object.keys(handlers)) await client.enqueueJson(queue, type, {});
      const worker = start({ queues: [queue], concurrency: 6, handlers });
      const completed = nextEvents(worker, 'completed', Object.keys(handlers).length);
      await completed;
      assert.deepEqual(seen.sort(), Object.keys(handlers).sort());
    });

    test('close() stops taking jobs and waits for running ones to finish and be acked', async () => {
      const queue = `drain-${transport}`;
      const a = await client.enqueueJson(queue, 'job', { n: 1 });
      const b = await client.enqueueJson(queue, 'job', { n: 2 });
      const gates = new Map<number, Deferred>();
      const jobs = new Map<number, WorkerJob>();
      const worker = start({
        queues: [queue],
        concurrency: 2,
        handlers: {
          job: (job: WorkerJob<{ n: number }>) => {
            const gate = deferred();
            gates.set(job.data.n, gate);
            jobs.set(job.data.n, job);
            return gate.promise;
          },
        },
      });
      await until(() => gates.size === 2, 'both jobs to start');
      let closed = false;
      const closing = worker.close().then(() => {
        closed = true;
      });
      const late = await client.enqueueJson(queue, 'job', { n: 3 });
      gates.get(1)?.resolve();
      await nextEvents(worker, 'completed');
      // A close() that stopped waiting when the first job ended would have half-closed its Work
      // stream then (over unary calls, nothing is left to wait for). The second job's report,
      // answered, comes after that on the connection: the server has ended such a stream by now.
      await heardBack([jobs.get(2)!]);
      const streams = (await client.listWorkers()).filter(
        (w) => w.transport === 'work_stream' && w.queues.includes(queue),
      );
      assert.equal(streams.length, transport === 'stream' ? 1 : 0, 'the Work stream is still open');
      assert.equal(closed, false, 'close() waits for the second job');
      gates.get(2)?.resolve();
      await closing;
      assert.equal(worker.state, 'closed');
      for (const { id } of [a, b]) {
        // Both were acked and deleted (retention 0): only their outcomes are kept.
        const done = await client.getJob(id);
        assert.equal(done.state, 'completed');
        assert.equal(done.outcomeOnly, true);
      }
      const third = await client.getJob(late.id);
      assert.equal(third.state, 'ready', 'nothing was taken after close()');
      assert.equal(third.attempt, 0);
    });

    test('the shutdown timeout aborts running handlers; their jobs are retried at once', async () => {
      const queue = `timeout-${transport}`;
      const { id } = await client.enqueueJson(queue, 'stuck', {});
      const worker = start({
        queues: [queue],
        handlers: {
          stuck: (job) =>
            new Promise((_, reject) => job.signal.addEventListener('abort', () => reject(job.signal.reason))),
        },
      });
      await nextEvents(worker, 'started');
      const failed = nextEvents<[WorkerJob, Error]>(worker, 'failed');
      // close() sets its shutdown timer on the fake clock before it returns, so the clock may move
      // at once (were the timer set later, the advance would miss it and 'failed' never come).
      const closing = worker.close({ timeoutMs: 5000 });
      clock.advance(5000);
      const [, error] = await failed;
      assert.match(error.message, /shutting down/);
      await closing;
      const job = await client.getJob(id);
      assert.equal(job.state, 'ready');
      assert.match(job.lastError ?? '', /shutting down/);
    });

    test('a handler that throws nacks the job with its message; RetryAfter and DeadLetter steer the retry', async () => {
      const queue = `fail-${transport}`;
      const plain = await client.enqueue(queue, 'plain', 'x');
      const later = await client.enqueue(queue, 'later', 'x');
      const dead = await client.enqueue(queue, 'dead', 'x');
      const worker = start({
        queues: [queue],
        concurrency: 3,
        handlers: {
          plain: () => {
            throw new Error('the mail server said no');
          },
          later: async () => {
            throw new RetryAfter(90_000, 'rate limited');
          },
          dead: async () => {
            throw new DeadLetter('address does not exist');
          },
        },
      });
      const outcomes = new Map<string, { error: Error; state: string }>();
      worker.on('failed', (job, error, result) => outcomes.set(job.type, { error, state: result.state }));
      await until(() => outcomes.size === 3, 'three failures');
      assert.equal(outcomes.get('plain')?.state, 'scheduled');
      assert.equal(outcomes.get('later')?.state, 'scheduled');
      assert.equal(outcomes.get('dead')?.state, 'dead');

      const p = await client.getJob(plain.id);
      assert.equal(p.lastError, 'the mail server said no');
      assert.deepEqual(
        p.errors.map((e) => e.error),
        ['the mail server said no'],
      );
      const l = await client.getJob(later.id);
      assert.equal(l.state, 'scheduled');
      assert.equal(l.lastError, 'rate limited');
      assert.equal(l.runAt.getTime(), clock.nowMs() + 90_000);
      const d = await client.getJob(dead.id);
      assert.equal(d.state, 'dead');
      assert.equal(d.deadReason, 'dead_lettered');
      assert.equal(d.lastError, 'address does not exist');
      await worker.close();
    });

    test('decodes JSON payloads, hands other payloads over as bytes, and routes other types (even "toString") to the fallback', async () => {
      const queue = `decode-${transport}`;
      await client.enqueueJson(queue, 'json', { to: 'ada@example.com', n: [1, 2] });
      await client.enqueue(queue, 'bytes', new Uint8Array([1, 2, 3]));
      await client.enqueue(queue, 'other', 'hello');
      await client.enqueue(queue, 'toString', 'not Object.prototype.toString');
      const seen = new Map<string, unknown>();
      const worker = start({
        queues: [queue],
        concurrency: 3,
        handlers: {
          json: (job) => void seen.set('json', job.data),
          bytes: (job) => void seen.set('bytes', job.data),
        },
        fallback: (job) => void seen.set(`fallback:${job.type}`, job.text()),
      });
      await until(() => seen.size === 4, 'four jobs');
      assert.deepEqual(seen.get('json'), { to: 'ada@example.com', n: [1, 2] });
      assert.equal(seen.get('fallback:toString'), 'not Object.prototype.toString');
      assert.deepEqual(seen.get('bytes'), Buffer.from([1, 2, 3]));
      assert.equal(seen.get('fallback:other'), 'hello');
      await worker.close();
    });

    test('a JSON payload that does not parse is dead-lettered without running the handler', async () => {
      const queue = `badjson-${transport}`;
      const { id } = await client.enqueue(queue, 'json', '{not json', { contentType: 'application/json' });
      let ran = false;
      const worker = start({
        queues: [queue],
        handlers: {
          json: () => {
            ran = true;
          },
        },
      });
      const [, error] = await nextEvents<[WorkerJob, Error]>(worker, 'failed');
      assert.match(error.message, /not valid JSON/);
      assert.equal(ran, false);
      assert.equal((await client.getJob(id)).state, 'dead');
      await worker.close();
    });
  });
}

describe('Worker options', () => {
  test('are checked when the worker is made', async () => {
    const client = SeppClient.connect('127.0.0.1:1');
    assert.throws(() => client.worker({ queues: [], handlers: {} }), /at least one queue/);
    assert.throws(() => client.worker({ queues: ['q'], concurrency: 0, handlers: {} }), /concurrency/);
    assert.throws(() => client.worker({ queues: ['q'] }), /handlers/);
    await client.close();
  });

  test('LeaseLostError and SeppError are what settlements of unknown leases throw', async () => {
    const t = await startTestServer();
    const client = SeppClient.connect(t.address);
    try {
      const { id } = await client.enqueue('leases', 't');
      const [job] = await client.reserve({ queues: ['leases'], leaseMs: 60_000 });
      assert.equal(job?.id, id);
      await assert.rejects(client.ack({ id, attempt: 2 }), (e) => {
        assert.ok(e instanceof LeaseLostError);
        assert.equal(e.code, 'lease_lost');
        assert.equal(e.grpcCode, 9);
        return true;
      });
      await client.ack(job!);
      await assert.rejects(
        client.extend(job!, 1000),
        (e) => e instanceof LeaseLostError && e.code === 'not_found',
      );
      await assert.rejects(
        client.nack({ id: '0190a4c2-0000-7000-8000-000000000000', attempt: 1 }),
        (e) => e instanceof LeaseLostError,
      );
      await assert.rejects(
        client.getJob('not-an-id'),
        (e) => e instanceof SeppError && e.code === 'invalid_argument',
      );
    } finally {
      await client.close();
      await t.dispose();
    }
  });
});
