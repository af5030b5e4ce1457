/**
 * Outcomes through the SDK, on both transports: a handler's return value
 * becomes the job's result, `job.progress()` reaches the server, `waitFor`
 * answers for a job that completes, dead-letters, is cancelled or times out,
 * `enqueueAndWait` finds a result even on a queue that keeps no completed
 * jobs, and `events()` streams and resumes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  DeadLetter,
  type JobEvent,
  JobResult,
  SeppClient,
  type SeppError,
  type Worker,
  type WorkerJob,
  type WorkerOptions,
} from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { type Deferred, deferred, nextEvents, until } from './helpers.ts';

const toml = '[limits]\nmax_result_bytes = 2000\n[queues.kept]\ncompleted_retention_ms = "1h"\n';

for (const transport of ['stream', 'unary'] as const) {
  describe(`job outcomes (${transport})`, () => {
    const workers: Worker[] = [];

    // Before the server stops (after hooks run in order).
    after(() => Promise.all(workers.map((w) => w.close({ timeoutMs: 0 }))));
    const served = serverAndClient({ toml }, { transport });

    const start = (options: WorkerOptions) => {
      const worker = served.client.worker(options);
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      workers.push(worker);
      return worker;
    };

    test('a handler’s return value is the result: JSON, text, bytes or a JobResult', async () => {
      const values: Record<string, unknown> = {
        json: { sent: 3, to: ['a', 'b'] },
        text: 'all done',
        bytes: Buffer.from([1, 2, 3]),
        custom: new JobResult('<p>hi</p>', 'text/html'),
        none: undefined,
      };
      const worker = start({
        queues: ['kept'],
        concurrency: 5,
        handlers: Object.fromEntries(
          Object.entries(values).map(([type, value]) => [type, async () => value]),
        ),
      });
      const completed = nextEvents<[WorkerJob, unknown]>(worker, 'completed', 5);
      const ids: Record<string, string> = {};
      for (const type of Object.keys(values)) ids[type] = (await served.client.enqueue('kept', type)).id;
      await completed;
      const job = async (type: string) => served.client.getJob(ids[type]!);
      assert.deepEqual((await job('json')).result, { sent: 3, to: ['a', 'b'] });
      assert.equal((await job('json')).resultContentType, 'application/json');
      assert.equal((await job('text')).result, 'all done');
      assert.deepEqual([...((await job('bytes')).result as Buffer)], [1, 2, 3]);
      assert.equal((await job('bytes')).resultContentType, 'application/octet-stream');
      assert.equal((await job('custom')).result, '<p>hi</p>');
      assert.equal((await job('custom')).resultContentType, 'text/html');
      assert.equal((await job('none')).result, null);
      assert.equal((await job('none')).resultSize, 0);
    });

    test('job.progress() is stored while the job runs, reports merging; then the result', async () => {
      const gate: Deferred = deferred();
      const reported: Deferred = deferred();
      start({
        queues: [`progress-${transport}`],
        handlers: {
          long: async (job) => {
            void job.progress(10);
            void job.progress({ step: 'upload' });
            await job.progress(60);
            reported.resolve();
            await gate.promise;
            return 'finished';
          },
        },
      });
      const { id } = await served.client.enqueue(`progress-${transport}`, 'long');
      await reported.promise;
      const running = await served.client.getJob(id);
      assert.equal(running.state, 'leased');
      assert.equal(running.progress?.percent, 60);
      assert.deepEqual(running.progress?.data, { step: 'upload' });
      // The queue keeps no completed jobs: hold a subscription (caught up) from before the
      // job can finish, so its outcome is in the backlog when waitFor looks (docs/protocol.md).
      const watching = served.client.events({ jobIds: [id] });
      await watching.caughtUp;
      gate.resolve();
      const outcome = await served.client.waitFor(id, { timeoutMs: 30_000 }).finally(() => watching.close());
      assert.equal(outcome.state, 'completed');
      assert.equal(outcome.state === 'completed' && outcome.result, 'finished');
    });

    test('a result over max_result_bytes fails the attempt, saying why; a bad progress call throws', async () => {
      const queue = `big-${transport}`;
      const worker = start({
        queues: [queue],
        handlers: {
          big: async (job) => {
            assert.throws(() => job.progress(101), /from 0 to 100/);
            assert.throws(
              () => job.progress(undefined),
              /a percentage \(0 to 100\), a JSON document, or both/,
            );
            return 'x'.repeat(2001);
          },
        },
      });
      const failed = nextEvents<[WorkerJob, Error]>(worker, 'failed');
      await served.client.enqueue(queue, 'big', '', { maxAttempts: 1 });
      const [, error] = await failed;
      assert.match(error.message, /2001 bytes, the limit is 2000 bytes \(limits\.max_result_bytes\)/);
    });

    test('waitFor: completed (also after the fact), dead, cancelled, timed out, not found', async () => {
      const queue = `wait-${transport}`;
      const release: Deferred = deferred();
      start({
        queues: [queue],
        concurrency: 4,
        handlers: {
          ok: async (job) => {
            await release.promise;
            return { echo: job.data };
          },
          bad: async () => {
            throw new DeadLetter('cannot parse the input');
          },
        },
      });
      const ok = await served.client.enqueueJson(queue, 'ok', { n: 1 });
      const waiting = served.client.waitFor(ok.id, { timeoutMs: 30_000 });
      release.resolve();
      const outcome = await waiting;
      assert.equal(outcome.state, 'completed');
      assert.deepEqual(outcome.state === 'completed' && outcome.result, { echo: { n: 1 } });

      const bad = await served.client.enqueueJson(queue, 'bad', {});
      const dead = await served.client.waitFor(bad.id, { timeoutMs: 30_000 });
      assert.deepEqual(dead.state === 'dead' && [dead.error, dead.reason], [
        'cannot parse the input',
        'dead_lettered',
      ]);
      // After the fact: the dead letter is retained, GetJob answers.
      const again = await served.client.waitFor(bad.id, { timeoutMs: 30_000 });
      assert.equal(again.state, 'dead');

      const later = await served.client.enqueue(queue, 'ok', '', { delayMs: 3_600_000 });
      const cancelling = served.client.waitFor(later.id, { timeoutMs: 30_000 });
      await until(() => served.server.server.engine.eventBacklog.subscribers > 0, 'the wait to subscribe');
      await served.client.cancelJob(later.id);
      assert.equal((await cancelling).state, 'cancelled');

      const slow = await served.client.enqueue(queue, 'ok', '', { delayMs: 3_600_000 });
      const timedOut = await served.client.waitFor(slow.id, { timeoutMs: 200 }).catch((e: SeppError) => e);
      assert.equal((timedOut as SeppError).code, 'deadline_exceeded');
      assert.match((timedOut as SeppError).message, /did not finish within 200 ms; it is scheduled/);

      const aborter = new AbortController();
      const stopped = served.client.waitFor(slow.id, { signal: aborter.signal }).catch((e: SeppError) => e);
      aborter.abort();
      assert.equal(((await stopped) as SeppError).code, 'cancelled');

      const missing = await served.client
        .waitFor('01890f6e-7c3a-7000-8000-000000000000')
        .catch((e: SeppError) => e);
      assert.equal((missing as SeppError).code, 'not_found');
      assert.match((missing as SeppError).message, /completed_retention_ms/);
    });

    test('waitFor timed out says where the job is at the timeout, not where it was when the wait began', async () => {
      const { engine } = served.server.server;
      const queue = `moved-${transport}`;
      const { id } = await served.client.enqueue(queue, 'slow');
      const looked = deferred();
      const getJob = engine.getJob;
      engine.getJob = async (jobId) => {
        const job = await getJob.call(engine, jobId);
        looked.resolve();
        return job;
      };
      try {
        const waiting = served.client.waitFor(id, { timeoutMs: 500 }).catch((e: SeppError) => e);
        await looked.promise; // The wait has seen it ready; then a worker leases it.
        assert.equal((await engine.reserve({ queues: [queue] })).length, 1);
        const timedOut = (await waiting) as SeppError;
        assert.equal(timedOut.code, 'deadline_exceeded');
        assert.match(timedOut.message, /did not finish within 500 ms; it is leased$/);
      } finally {
        engine.getJob = getJob;
      }
    });

    test('enqueueAndWait finds the result of a job that finishes at once on a queue keeping no completed jobs', async () => {
      const queue = `fast-${transport}`;
      start({
        queues: [queue],
        concurrency: 4,
        handlers: { add: async (job) => (job.data as number[]).reduce((a, b) => a + b) },
      });
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          served.client.enqueueJsonAndWait(queue, 'add', [i, 1], { timeoutMs: 30_000 }),
        ),
      );
      assert.deepEqual(
        outcomes.map((o) => o.state === 'completed' && o.result),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      // The job itself is gone (not retained): GetJob answers with its outcome only.
      const gone = await served.client.getJob(outcomes[0]!.jobId);
      assert.deepEqual([gone.outcomeOnly, gone.state, gone.payload.length], [true, 'completed', 0]);
    });
  });
}

describe('events() and waitFor across disconnects', () => {
  let t: TestServer;
  let client: SeppClient;
  before(async () => {
    t = await startTestServer();
    client = SeppClient.connect(t.address);
  });
  after(async () => {
    await client.close();
    await t.dispose();
  });

  test('events(): every event of a queue in order; resumeFrom gets exactly the missed ones', async () => {
    const subscription = client.events({ queues: ['ev'] });
    await subscription.caughtUp;
    const seen: JobEvent[] = [];
    const reading = (async () => {
      for await (const event of subscription) {
        seen.push(event);
        if (seen.length === 3) return;
      }
    })();
    const { id } = await client.enqueue('ev', 't', undefined, { priority: 7 });
    const [leased] = await client.reserve({ queues: ['ev'] });
    assert.ok(leased);
    await client.ack(leased, { result: { ok: true } });
    await reading;
    assert.deepEqual(
      seen.map((e) => [e.kind, e.jobId]),
      [
        ['enqueued', id],
        ['leased', id],
        ['completed', id],
      ],
    );
    assert.deepEqual(seen[2]?.result, { ok: true });
    assert.deepEqual(
      seen.map((e) => e.priority),
      [7, null, null],
      'the enqueued event carries the priority',
    );
    const position = subscription.position;
    assert.equal(position?.sequence, seen[2]?.sequence);

    const missed = [(await client.enqueue('ev', 't')).id, (await client.enqueue('ev', 't')).id];
    const resumed = client.events({ queues: ['ev'], resumeFrom: position! });
    const got: string[] = [];
    for await (const event of resumed) {
      got.push(event.jobId);
      if (got.length === 2) break;
    }
    assert.deepEqual(got, missed);
  });

  test('waitFor survives a server restart: it subscribes again and still gets the outcome', async () => {
    const { id } = await client.enqueue('restart', 't');
    const waiting = client.waitFor(id, { timeoutMs: 60_000 });
    await until(() => t.server.engine.eventBacklog.subscribers > 0, 'the wait to subscribe');
    t = await t.restartOnSamePort();
    // The restarted server has a new event stream: the wait's resume is refused, and it starts over.
    await until(() => t.server.engine.eventBacklog.subscribers > 0, 'the wait to subscribe again', 2_000_000);
    const [leased] = await client.reserve({ queues: ['restart'] });
    assert.equal(leased?.id, id);
    await client.ack(leased!, { result: 'after the restart' });
    const outcome = await waiting;
    assert.equal(outcome.state === 'completed' && outcome.result, 'after the restart');
  });
});
