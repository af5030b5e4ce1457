/** The streaming fast path: Produce and Work over real sockets. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { until } from '../client/helpers.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { collect, creditMessage, streamEnd, subscribeMessage } from '../helpers/streams.ts';

const job = (queue: string, n = 0) => testJob(queue, { payload: Buffer.from(String(n)) });

/**
 * A positive witness that the server has handled every message written to `w` before now: an
 * extend of one of its leases, written now and answered. The server reads a stream's messages in
 * order and leases for a credit before it reads the next message (the lease's write is submitted
 * at once, so it commits with or before the extend), and the jobs it leased go out ahead of the
 * extend's answer: a job pushed for anything written earlier has arrived by the time this returns.
 */
async function heardBack(
  w: ClientDuplexStream<WorkRequest, WorkResponse>,
  requestId: number,
  lease: { jobId: string; attempt: number },
): Promise<void> {
  const answered = collect(w, (seen) =>
    seen.some((m) => m.kind?.$case === 'settled' && m.kind.value.requestId === requestId),
  );
  w.write({
    requestId,
    kind: { $case: 'extend', value: { jobId: lease.jobId, attempt: lease.attempt, leaseDurationMs: 60_000 } },
  });
  const settled = (await answered).find(
    (m) => m.kind?.$case === 'settled' && m.kind.value.requestId === requestId,
  )?.kind;
  assert.ok(settled?.$case === 'settled' && settled.value.code === status.OK, 'the extend was answered OK');
}

describe('Produce and Work streams', () => {
  let t: TestServer;
  const clock = new FakeClock();
  before(async () => {
    t = await startTestServer({ clock });
  });
  after(() => t.dispose());

  test('thousands of interleaved Produce messages each get their own results, in sequence order', async () => {
    const a = t.client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const b = t.connect().produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const perStream = 1500;
    const gotA = collect(a, (s) => s.length === perStream);
    const gotB = collect(b, (s) => s.length === perStream);
    for (let i = 0; i < perStream; i++) {
      a.write({ sequence: i + 1, jobs: [job('produce-a', i), job('produce-a', i)], atomic: false });
      b.write({ sequence: 10_000 + i, jobs: [job('produce-b', i)], atomic: i % 2 === 0 });
    }
    const [ra, rb] = await Promise.all([gotA, gotB]);
    assert.deepEqual(
      ra.map((r) => r.sequence),
      Array.from({ length: perStream }, (_, i) => i + 1),
    );
    assert.deepEqual(
      rb.map((r) => r.sequence),
      Array.from({ length: perStream }, (_, i) => 10_000 + i),
    );
    assert.ok(ra.every((r) => r.code === status.OK && r.results.length === 2));
    assert.ok(rb.every((r, i) => (i % 2 === 0 ? r.atomic?.committed === true : r.results.length === 1)));
    a.end();
    b.end();
    const queues = await t.server.engine.listQueues();
    assert.equal(queues.find((q) => q.name === 'produce-a')?.counts.ready, 2 * perStream);
    assert.equal(queues.find((q) => q.name === 'produce-b')?.counts.ready, perStream);
  });

  test('a Produce message error comes back in its answer and the stream goes on', async () => {
    const s = t.client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const got = collect(s, (x) => x.length === 2);
    s.write({ sequence: 1, jobs: [], atomic: false });
    s.write({ sequence: 2, jobs: [job('produce-ok')], atomic: false });
    const [first, second] = await got;
    assert.equal(first?.code, status.INVALID_ARGUMENT);
    assert.match(first?.message ?? '', /empty/);
    assert.equal(second?.code, status.OK);
    s.end();
  });

  test('a flow on Produce is stored and answered as EnqueueFlow does it; with jobs or atomic it is INVALID_ARGUMENT', async () => {
    const queue = 'produce-flow';
    const flow = (bad = false) => ({
      jobs: [
        { name: 'extract', job: job(queue), after: [] },
        { name: 'load', job: testJob(bad ? 'not a name!' : queue), after: ['extract'] },
      ],
    });
    const cycle = { jobs: [{ name: 'a', job: job(queue), after: ['a'] }] };
    const unary = await call(t.client, t.client.enqueueFlow, flow());
    const unaryRefused = await call(t.client, t.client.enqueueFlow, flow(true));
    const unaryCycle = await call(t.client, t.client.enqueueFlow, cycle).then(
      () => assert.fail('a cycle was taken'),
      (error: ServiceError) => error,
    );
    const s = t.client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const got = collect(s, (x) => x.length === 6);
    s.write({ sequence: 1, jobs: [], atomic: false, flow: flow() });
    s.write({ sequence: 2, jobs: [job(queue)], atomic: false, flow: flow() });
    s.write({ sequence: 3, jobs: [], atomic: true, flow: flow() });
    s.write({ sequence: 4, jobs: [], atomic: false, flow: flow(true) });
    s.write({ sequence: 5, jobs: [], atomic: false, flow: cycle });
    s.write({ sequence: 6, jobs: [job(queue)], atomic: false });
    const answers = await got;
    s.end();
    assert.deepEqual(
      answers.map((a) => [a.sequence, status[a.code]]),
      [
        [1, 'OK'],
        [2, 'INVALID_ARGUMENT'],
        [3, 'INVALID_ARGUMENT'],
        [4, 'OK'],
        [5, 'INVALID_ARGUMENT'],
        [6, 'OK'],
      ],
    );
    const [stored, withJobs, withAtomic, refused, inCycle, after] = answers;
    // Ids by name, as the unary call answers them; the load job waits on the extract job.
    assert.deepEqual(
      stored?.flow?.jobs.map((j) => [j.name, j.deduplicated]),
      unary.jobs.map((j) => [j.name, j.deduplicated]),
    );
    const [extract, load] = stored?.flow?.jobs ?? [];
    assert.equal((await t.server.engine.getJob(load!.jobId)).state, 'waiting');
    assert.deepEqual(
      (await t.server.engine.getJob(load!.jobId)).dependencies?.map((d) => d.id),
      [extract!.jobId],
    );
    assert.deepEqual(stored?.results, []);
    assert.equal(stored?.atomic, undefined);
    assert.match(withJobs?.message ?? '', /either jobs \(with atomic\) or a flow, never both/);
    assert.match(withAtomic?.message ?? '', /atomic set/);
    // Refusals: the unary call's answer and error, word for word.
    assert.deepEqual(refused?.flow, unaryRefused);
    assert.equal(inCycle?.message, unaryCycle.details);
    assert.equal(after?.results.length, 1);
    // Stored: the unary flow, the stream's, and the last message's job; nothing of the refused ones.
    const counts = (await t.server.engine.getQueue(queue))?.counts;
    assert.deepEqual([counts?.ready, counts?.waiting], [3, 2]);
  });

  test('several flows in one Produce message: each stored, refused or failed on its own, answered in order', async () => {
    const queue = 'produce-flows';
    const flow = (name: string, bad = false) => ({
      jobs: [
        { name: 'first', job: job(queue), after: [] },
        { name, job: testJob(bad ? 'not a name!' : queue), after: ['first'] },
      ],
    });
    const cycle = { jobs: [{ name: 'a', job: job(queue), after: ['a'] }] };
    const unaryRefused = await call(t.client, t.client.enqueueFlow, flow('x', true));
    const unaryCycle = await call(t.client, t.client.enqueueFlow, cycle).then(
      () => assert.fail('a cycle was taken'),
      (error: ServiceError) => error,
    );
    const s = t.client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const got = collect(s, (x) => x.length === 5);
    s.write({
      sequence: 1,
      jobs: [],
      atomic: false,
      flows: { flows: [flow('one'), flow('x', true), cycle, flow('two')] },
    });
    s.write({ sequence: 2, jobs: [job(queue)], atomic: false, flows: { flows: [flow('three')] } });
    s.write({ sequence: 3, jobs: [], atomic: false, flow: flow('four'), flows: { flows: [flow('five')] } });
    s.write({ sequence: 4, jobs: [], atomic: false, flows: { flows: [] } });
    s.write({
      sequence: 5,
      jobs: [],
      atomic: false,
      flows: { flows: Array.from({ length: 65 }, () => cycle) },
    });
    const answers = await got;
    s.end();
    assert.deepEqual(
      answers.map((a) => [a.sequence, status[a.code]]),
      [
        [1, 'OK'],
        [2, 'INVALID_ARGUMENT'],
        [3, 'INVALID_ARGUMENT'],
        [4, 'INVALID_ARGUMENT'],
        [5, 'RESOURCE_EXHAUSTED'],
      ],
    );
    const [one, refused, inCycle, two] = answers[0]?.flows?.answers ?? [];
    assert.equal(answers[0]?.flows?.answers.length, 4);
    assert.equal(answers[0]?.flow, undefined);
    assert.deepEqual(
      [one, refused, inCycle, two].map((a) => status[a?.code ?? -1]),
      ['OK', 'OK', 'INVALID_ARGUMENT', 'OK'],
    );
    // Each as the unary call answers it, word for word.
    assert.deepEqual(refused?.flow, unaryRefused);
    assert.equal(inCycle?.message, unaryCycle.details);
    assert.equal(inCycle?.flow, undefined);
    for (const stored of [one, two]) {
      const [first, then] = stored?.flow?.jobs ?? [];
      assert.deepEqual(
        (await t.server.engine.getJob(then!.jobId)).dependencies?.map((d) => d.id),
        [first!.jobId],
      );
    }
    assert.deepEqual(
      [one, two].map((a) => a?.flow?.jobs.map((j) => j.name)),
      [
        ['first', 'one'],
        ['first', 'two'],
      ],
    );
    assert.match(answers[1]?.message ?? '', /either jobs \(with atomic\) or flows, never both/);
    assert.match(
      answers[2]?.message ?? '',
      /either jobs \(with atomic\) or a flow, never both; this one has a flow and flows/,
    );
    assert.match(answers[3]?.message ?? '', /no flow in the message/);
    assert.match(answers[4]?.message ?? '', /at most 64 flows in one message/);
    // Stored: the two good flows of the first message, nothing of the others.
    const counts = (await t.server.engine.getQueue(queue))?.counts;
    assert.deepEqual([counts?.ready, counts?.waiting], [2, 2]);
  });

  test('Work pushes no more jobs than the credit granted', async () => {
    for (let i = 0; i < 10; i++) await call(t.client, t.client.enqueue, { job: job('credit', i) });
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    const jobs: WorkResponse[] = [];
    w.on('data', (m: WorkResponse) => jobs.push(m));
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['credit'], leaseDurationMs: 60_000, workerId: 'w', batchResponses: false },
      },
    });
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 3 } } });
    await collect(w, () => jobs.length >= 3);
    const pushed = () => jobs.flatMap((m) => (m.kind?.$case === 'job' ? [m.kind.value] : []));
    const leased = async () => (await t.server.engine.getQueue('credit'))?.counts.leased;
    const [first, second] = pushed();
    assert.ok(first !== undefined && second !== undefined);
    await heardBack(w, 1, second);
    assert.equal(await leased(), 3, 'exactly the credit');
    assert.equal(pushed().length, 3, 'exactly the credit');
    // Acking does not return credit by itself.
    w.write({
      requestId: 7,
      kind: { $case: 'ack', value: { jobId: first.jobId, attempt: first.attempt } },
    });
    await collect(w, () => jobs.some((m) => m.kind?.$case === 'settled' && m.kind.value.requestId === 7));
    const settled = jobs.find((m) => m.kind?.$case === 'settled' && m.kind.value.requestId === 7)?.kind;
    assert.ok(settled?.$case === 'settled');
    assert.equal(settled.value.code, status.OK);
    await heardBack(w, 2, second);
    assert.equal(await leased(), 2);
    assert.equal(pushed().length, 3);
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 2 } } });
    await collect(w, () => jobs.filter((m) => m.kind?.$case === 'job').length === 5);
    await heardBack(w, 3, second);
    assert.equal(await leased(), 4);
    assert.equal(pushed().length, 5);
    w.cancel();
  });

  test('a job pushed on Work can be acked over unary Ack', async () => {
    const { jobId } = await call(t.client, t.client.enqueue, { job: job('mixed') });
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['mixed'], leaseDurationMs: 60_000, workerId: '', batchResponses: false },
      },
    });
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    const [pushed] = await collect(w, (s) => s.length === 1);
    assert.ok(pushed?.kind?.$case === 'job');
    assert.equal(pushed.kind.value.jobId, jobId);
    await call(t.client, t.client.ack, { jobId, attempt: pushed.kind.value.attempt });
    w.cancel();
  });

  test('a stream cut mid-job leaves the lease to expire, then the job is delivered again', async () => {
    const { jobId } = await call(t.client, t.client.enqueue, { job: job('cut') });
    const w = t.connect().work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    w.on('error', () => {});
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['cut'], leaseDurationMs: 5000, workerId: '', batchResponses: false },
      },
    });
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    const [pushed] = await collect(w, (s) => s.length === 1);
    assert.ok(pushed?.kind?.$case === 'job');
    w.cancel();
    // The server has seen the cancel once the stream is gone from its workers; a write it made
    // of that (a lease given up) would commit before the enqueue that follows.
    await until(
      async () => !(await t.server.engine.listWorkers()).some((w) => w.queues.includes('cut')),
      'the server to see the stream cut',
    );
    await call(t.client, t.client.enqueue, { job: job('cut-marker') });
    assert.equal((await t.server.engine.getJob(jobId)).state, 'leased');
    clock.advance(5001);
    await t.server.engine.runMaintenance();
    const again = await call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: ['cut'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 0,
      workerId: '',
    });
    assert.equal(again.jobs[0]?.jobId, jobId);
    assert.equal(again.jobs[0]?.attempt, 2);
  });

  test('Work settlements answer errors in place; a message before subscribe ends the stream', async () => {
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['settle-errors'], leaseDurationMs: 0, workerId: '', batchResponses: false },
      },
    });
    w.write({
      requestId: 3,
      kind: {
        $case: 'nack',
        value: {
          jobId: '0190a4c2-0000-7000-8000-000000000000',
          attempt: 1,
          errorMessage: 'x',
          errorClass: '',
          errorStack: '',
          directive: undefined,
        },
      },
    });
    const [answer] = await collect(w, (s) => s.length === 1);
    assert.ok(answer?.kind?.$case === 'settled');
    assert.equal(answer.kind.value.requestId, 3);
    assert.equal(answer.kind.value.code, status.NOT_FOUND);
    w.cancel();

    const bad = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    bad.write({ requestId: 1, kind: { $case: 'credit', value: { jobs: 1 } } });
    const error = await new Promise<ServiceError>((resolve) => bad.on('error', resolve));
    assert.equal(error.code, status.INVALID_ARGUMENT);
    assert.match(error.details, /subscribe first/);
  });

  test('every Work protocol violation ends the stream with INVALID_ARGUMENT, as work.proto says', async () => {
    const cases: [string, WorkRequest[], RegExp][] = [
      ['credit before subscribe', [creditMessage(1)], /subscribe first/],
      [
        'a second subscribe',
        [subscribeMessage(['violations']), subscribeMessage(['violations'])],
        /already subscribed/,
      ],
      [
        'unused credit over max_reserve_jobs',
        [subscribeMessage(['violations']), creditMessage(600), creditMessage(401)],
        /credit: 1001 unused credit, the limit is 1000 \(limits\.max_reserve_jobs\)/,
      ],
      ['a subscribe without queues', [subscribeMessage([])], /subscribe\.queues/],
      ['a message with no kind', [{ requestId: 1, kind: undefined }], /kind/],
    ];
    for (const [name, messages, details] of cases) {
      const w = t.connect().work() as ClientDuplexStream<WorkRequest, WorkResponse>;
      const ended = streamEnd(w);
      for (const m of messages) w.write(m);
      const end = await ended;
      assert.equal(end.code, status.INVALID_ARGUMENT, `${name}: ${end.details}`);
      assert.match(end.details, details, name);
    }
  });

  test('a nack on the stream records the error and returns the job', async () => {
    const { jobId } = await call(t.client, t.client.enqueue, { job: job('stream-nack') });
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['stream-nack'], leaseDurationMs: 0, workerId: '', batchResponses: false },
      },
    });
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    const seen = await collect(w, (s) => s.length === 1);
    const pushed = seen[0]?.kind;
    assert.ok(pushed?.$case === 'job');
    w.write({
      requestId: 9,
      kind: {
        $case: 'nack',
        value: {
          jobId,
          attempt: pushed.value.attempt,
          errorMessage: 'boom',
          errorClass: '',
          errorStack: '',
          directive: { $case: 'retryDelayMs', value: 60_000 },
        },
      },
    });
    await collect(w, (s) => s.some((m) => m.kind?.$case === 'settled'));
    const settled = seen.find((m) => m.kind?.$case === 'settled')?.kind;
    assert.ok(settled?.$case === 'settled' && settled.value.result?.$case === 'nack');
    assert.equal(settled.value.result.value.state, JobState.SCHEDULED);
    assert.equal((await t.server.engine.getJob(jobId)).lastError, 'boom');
    w.cancel();
  });
});

describe('Work batches', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ clock: new FakeClock() });
  });
  after(() => t.dispose());

  function subscribe(queue: string): ClientDuplexStream<WorkRequest, WorkResponse> {
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: [queue], leaseDurationMs: 60_000, workerId: 'b', batchResponses: true },
      },
    });
    return w;
  }

  /** Enqueues `count` jobs on `queue`, subscribes and grants `credit`; `seen` keeps every message the stream sends. */
  async function subscribeWithJobs(queue: string, count: number, credit: number) {
    const ids: string[] = [];
    for (let i = 0; i < count; i++)
      ids.push((await call(t.client, t.client.enqueue, { job: job(queue, i) })).jobId);
    const w = subscribe(queue);
    const seen: WorkResponse[] = [];
    w.on('data', (m: WorkResponse) => seen.push(m));
    w.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: credit } } });
    await collect(w, () => seen.length >= 1);
    return { w, seen, ids };
  }

  test('acks and credit in one message come back as one message: their answers and the next jobs', async () => {
    const { w, seen, ids } = await subscribeWithJobs('batched', 3, 2);
    const first = seen[0]?.kind;
    assert.ok(first?.$case === 'batch', 'a batch subscriber gets batch messages');
    assert.deepEqual(
      first.value.jobs.map((j) => j.jobId),
      ids.slice(0, 2),
      'both jobs of one lease in one message',
    );
    w.write({
      requestId: 0,
      kind: {
        $case: 'batch',
        value: {
          settlements: first.value.jobs.map((j, i) => ({
            requestId: 11 + i,
            kind: { $case: 'ack' as const, value: { jobId: j.jobId, attempt: j.attempt } },
          })),
          credit: 2,
          stopDelivery: false,
        },
      },
    });
    await collect(w, () => seen.length >= 2);
    const second = seen[1]?.kind;
    assert.ok(second?.$case === 'batch');
    assert.deepEqual(
      second.value.settled.map((s) => [s.requestId, s.code]),
      [
        [11, status.OK],
        [12, status.OK],
      ],
    );
    // The acks and the lease of the next job were committed together, so they left together.
    assert.deepEqual(
      second.value.jobs.map((j) => j.jobId),
      [ids[2]],
    );
    assert.equal((await t.server.engine.getJob(ids[0]!)).outcomeOnly, true, 'acked: its row is gone');
    assert.equal((await t.server.engine.getJob(ids[2]!)).state, 'leased');
    w.cancel();
  });

  test('acks batched into one commit are still answered one by one, each with its own outcome', async () => {
    const { w, seen } = await subscribeWithJobs('batched-mixed', 4, 4);
    const pushed = seen[0]?.kind;
    assert.ok(pushed?.$case === 'batch');
    const [a, b, c, d] = pushed.value.jobs;
    assert.ok(a && b && c && d);
    const ack = (requestId: number, jobId: string, attempt: number) => ({
      requestId,
      kind: { $case: 'ack' as const, value: { jobId, attempt } },
    });
    w.write({
      requestId: 0,
      kind: {
        $case: 'batch',
        value: {
          settlements: [
            ack(1, a.jobId, a.attempt),
            ack(2, b.jobId, b.attempt + 1), // stale fencing value: another delivery's attempt
            ack(3, 'not-a-job-id', 1),
            ack(4, '0190a4c2-0000-7000-8000-000000000000', 1), // no such job
            ack(5, c.jobId, c.attempt),
            {
              requestId: 6,
              kind: {
                $case: 'nack' as const,
                value: {
                  jobId: d.jobId,
                  attempt: d.attempt,
                  errorMessage: 'later',
                  errorClass: '',
                  errorStack: '',
                  directive: undefined,
                },
              },
            },
            ack(7, a.jobId, a.attempt), // acked a moment ago, in this same batch
          ],
          credit: 0,
          stopDelivery: false,
        },
      },
    });
    await collect(
      w,
      () =>
        seen
          .slice(1)
          .reduce((n, m) => n + (m.kind?.$case === 'batch' ? m.kind.value.settled.length : 0), 0) >= 7,
    );
    const settled = seen
      .slice(1)
      .flatMap((m) => (m.kind?.$case === 'batch' ? m.kind.value.settled : []))
      .sort((x, y) => x.requestId - y.requestId)
      .map((s) => [s.requestId, s.code]);
    assert.deepEqual(settled, [
      [1, status.OK],
      [2, status.FAILED_PRECONDITION],
      [3, status.INVALID_ARGUMENT],
      [4, status.NOT_FOUND],
      [5, status.OK],
      [6, status.OK],
      [7, status.NOT_FOUND],
    ]);
    assert.equal((await t.server.engine.getJob(a.jobId)).outcomeOnly, true, 'acked: its row is gone');
    assert.equal(
      (await t.server.engine.getJob(b.jobId)).state,
      'leased',
      'a refused ack leaves the lease alone',
    );
    assert.equal((await t.server.engine.getJob(c.jobId)).outcomeOnly, true, 'acked: its row is gone');
    assert.notEqual((await t.server.engine.getJob(d.jobId)).state, 'leased');
    w.cancel();
  });

  test('a settlement without a kind ends the stream with INVALID_ARGUMENT naming it', async () => {
    const w = subscribe('batched-bad');
    w.write({
      requestId: 0,
      kind: {
        $case: 'batch',
        value: { settlements: [{ requestId: 1, kind: undefined }], credit: 0, stopDelivery: false },
      },
    });
    const error = await new Promise<ServiceError>((resolve) => w.on('error', resolve));
    assert.equal(error.code, status.INVALID_ARGUMENT);
    assert.match(error.details, /batch\.settlements\[0\]\.kind/);
  });

  test('more settlements in one batch than max_batch_jobs end the stream with RESOURCE_EXHAUSTED', async () => {
    const w = subscribe('batched-big');
    const settlements = Array.from({ length: 1001 }, (_, i) => ({
      requestId: i + 1,
      kind: {
        $case: 'ack' as const,
        value: { jobId: '0190a4c2-0000-7000-8000-000000000000', attempt: 1 },
      },
    }));
    w.write({
      requestId: 0,
      kind: { $case: 'batch', value: { settlements, credit: 0, stopDelivery: false } },
    });
    const error = await new Promise<ServiceError>((resolve) => w.on('error', resolve));
    assert.equal(error.code, status.RESOURCE_EXHAUSTED);
    assert.match(error.details, /1001 settlements, the limit is 1000 \(limits\.max_batch_jobs\)/);
  });
});
