/**
 * Job lifecycle events: what each operation publishes, in commit order and
 * only once committed; filters; resuming from a sequence within the backlog
 * (exactly once) and the answers outside it; slow subscribers cut off at the
 * backlog's bound; recording only while someone subscribes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import type { SeppError, SeppErrorCode } from '../../src/engine/errors.ts';
import type { EventFilter, EventStart } from '../../src/engine/events/lifecycle-event.ts';
import { maxUnwrittenBytes } from '../../src/engine/events/subscription.ts';
import { defaultEngineLimits, type EngineLimits } from '../../src/engine/settings.ts';
import {
  barrier,
  bytes,
  expectCode,
  expectThrowsCode,
  job,
  withEngine,
  withQueues,
} from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const limits = (extra: Partial<EngineLimits>) => ({ limits: { ...defaultEngineLimits, ...extra } });

/** Asserts that subscribing is refused with `code` (subscribeEvents throws at once). */
async function refused(
  engine: Engine,
  filter: Partial<EventFilter>,
  start: EventStart,
  code: SeppErrorCode,
): Promise<SeppError> {
  return expectThrowsCode(() => collect(engine, filter, start), code);
}

test('each operation publishes its events after the commit, with the fields of its kind', async () => {
  const options = withQueues({ keep: { completedRetentionMs: 60_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const c = collect(engine);
    assert.equal(c.caughtUpAt(), 0, 'a subscription from now is caught up at once');
    const nowMs = clock.nowMs();
    const { jobId: a } = await engine.enqueue(job('keep', { priority: 3 }));
    const { jobId: later } = await engine.enqueue(job('q', { delayMs: 5000 }));
    const dup = await engine.enqueue(job('keep', { idempotencyKey: 'k' }));
    await engine.enqueue(job('keep', { idempotencyKey: 'k' }));
    const [leased] = await engine.reserve({ queues: ['keep'], workerId: 'w1', leaseMs: 10_000 });
    assert.equal(leased?.id, a);
    await engine.reportProgress({ jobId: a, attempt: 1, percent: 50, json: '{"n":1}' });
    await engine.ack({ jobId: a, attempt: 1, result: bytes('done'), resultContentType: 'text/plain' });
    const [second] = await engine.reserve({ queues: ['keep'] });
    await engine.nack({
      jobId: dup.jobId,
      attempt: 1,
      error: 'boom',
      directive: { kind: 'delay', delayMs: 100 },
    });
    await engine.cancel(later);
    assert.equal(second?.id, dup.jobId);

    assert.deepEqual(
      c.events.map((e) => e.sequence),
      c.events.map((_, i) => i + 1),
      'sequences count up from 1 with no gap',
    );
    const [enq, enqLater, enqDup, lease, progress, done, lease2, retry, cancelled, ...rest] = c.events;
    assert.equal(rest.length, 0, `no more events: ${c.summary().join(' ')}`);
    assert.deepEqual(
      { ...enq },
      {
        kind: 'enqueued',
        sequence: 1,
        atMs: nowMs,
        jobId: a,
        queue: 'keep',
        type: 'test',
        attempt: 0,
        state: 'ready',
        runAtMs: nowMs,
        priority: 3,
      },
    );
    assert.equal(enqLater?.kind === 'enqueued' && enqLater.state, 'scheduled');
    assert.equal(enqLater?.kind === 'enqueued' && enqLater.runAtMs, nowMs + 5000);
    assert.equal(enqDup?.jobId, dup.jobId, 'a deduplicated enqueue adds no event');
    assert.ok(lease?.kind === 'leased');
    assert.equal(lease.workerId, 'w1');
    assert.equal(lease.leaseDeadlineMs, nowMs + 10_000);
    assert.equal(lease.attempt, 1);
    assert.ok(progress?.kind === 'progress');
    assert.deepEqual(progress.progress, { percent: 50, json: '{"n":1}', atMs: nowMs });
    assert.ok(done?.kind === 'completed');
    assert.equal(Buffer.from(done.result ?? []).toString(), 'done');
    assert.equal(done.resultContentType, 'text/plain');
    assert.equal(done.retained, true);
    assert.equal(lease2?.kind, 'leased');
    assert.ok(retry?.kind === 'retry_scheduled');
    assert.deepEqual([retry.state, retry.runAtMs, retry.error], ['scheduled', nowMs + 100, 'boom']);
    assert.ok(cancelled?.kind === 'cancelled');
    assert.equal(cancelled.previousState, 'scheduled');
  });
});

test('dead letters, lease expiry, operator dead-letter and purge publish their events', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const c = collect(engine);
    const { jobId: once } = await engine.enqueue(job('q', { maxAttempts: 1 }));
    const { jobId: expiring } = await engine.enqueue(job('q'));
    await engine.reserve({ queues: ['q'], maxJobs: 2, leaseMs: 1000 });
    await engine.nack({ jobId: once, attempt: 1, error: 'bad input' });
    clock.advance(1000);
    await engine.runMaintenance();
    const { jobId: manual } = await engine.enqueue(job('q', { delayMs: 60_000 }));
    await engine.deadLetterJob(manual);
    await engine.enqueueBatch([job('p'), job('p', { delayMs: 1000 })]);
    assert.deepEqual(await engine.purgeQueue('p'), { deleted: 2 });

    const interesting = c.events.filter((e) => e.kind !== 'enqueued' && e.kind !== 'leased');
    assert.deepEqual(
      interesting.map((e) => [
        e.kind,
        e.jobId === once ? 'once' : e.jobId === expiring ? 'expiring' : e.jobId === manual ? 'manual' : 'p',
      ]),
      [
        ['dead_lettered', 'once'],
        ['retry_scheduled', 'expiring'],
        ['dead_lettered', 'manual'],
        ['cancelled', 'p'],
        ['cancelled', 'p'],
      ],
    );
    const [dead, expired, operator, purged1, purged2] = interesting;
    assert.ok(
      dead?.kind === 'dead_lettered' && dead.reason === 'attempts_exhausted' && dead.error === 'bad input',
    );
    assert.ok(
      expired?.kind === 'retry_scheduled' && expired.error === 'lease expired' && expired.state === 'ready',
    );
    assert.ok(
      operator?.kind === 'dead_lettered' && operator.reason === 'dead_lettered' && operator.error === null,
    );
    assert.deepEqual(
      // A purge is a bulk operation: it deletes by state slice, in no promised order.
      [purged1, purged2].map((e) => e?.kind === 'cancelled' && e.previousState).sort(),
      ['ready', 'scheduled'],
    );
  });
});

test('events come in commit order: operations of one batch in submission order, batches in turn', async () => {
  await withEngine({}, async ({ engine }) => {
    const c = collect(engine);
    // Submitted in the same turn: one batch, committed in this order.
    const firstBatch = await Promise.all([
      engine.enqueue(job('a')),
      engine.enqueue(job('b')),
      engine.enqueueBatch([job('a'), job('c')]),
    ]);
    const [x, y, batch] = firstBatch;
    const leasing = engine.reserve({ queues: ['c', 'a'], maxJobs: 2 });
    const more = engine.enqueue(job('b'));
    const leased = await leasing;
    const { jobId: z } = await more;
    const ids = [x.jobId, y.jobId, ...batch.map((r) => (r.ok ? r.jobId : 'rejected'))];
    assert.deepEqual(c.summary(), [
      ...ids.map((id) => `enqueued:${id}`),
      // The reserve was submitted before the enqueue: its leases come first, queue c before a.
      ...leased.map((l) => `leased:${l.id}`),
      `enqueued:${z}`,
    ]);
    assert.deepEqual(
      leased.map((l) => l.queue),
      ['c', 'a'],
    );
    // Acks in one batch, in the order they were sent.
    await engine.ackBatch(leased.reverse().map((l) => ({ jobId: l.id, attempt: l.attempt })));
    assert.deepEqual(
      c.summary().slice(-2),
      leased.map((l) => `completed:${l.id}`),
    );
    assert.deepEqual(
      c.events.map((e) => e.sequence),
      c.events.map((_, i) => i + 1),
    );
  });
});

test('no event for an operation that is refused or whose commit fails', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    const c = collect(engine);
    // Refused: nothing changes, nothing is published.
    await expectCode(engine.ack({ jobId, attempt: 9 }), 'lease_lost');
    const rejected = await engine.enqueueAtomic([job('q'), job('q', { priority: 42 })]);
    assert.equal(rejected.committed, false);
    await engine.enqueueBatch([job('bad name')]);
    await expectCode(engine.reportProgress({ jobId, attempt: 9, percent: 1 }), 'lease_lost');

    // A batch whose commit fails (a full disk): its ack and enqueue are rolled back, and publish nothing.
    const pages = Number(db.pragma('page_count', { simple: true }));
    db.pragma(`max_page_count = ${pages + 2}`);
    const ack = engine.ack({ jobId, attempt: leased.attempt, result: bytes('r') });
    const big = engine.enqueue(job('q', { payload: new Uint8Array(200_000) }));
    await expectCode(ack, 'unavailable');
    await expectCode(big, 'unavailable');
    await barrier(engine);
    assert.equal(c.events.length, 0);
    assert.equal((await engine.getJob(jobId)).state, 'leased');

    db.pragma('max_page_count = 1073741823');
    await engine.ack({ jobId, attempt: leased.attempt, result: bytes('r') });
    assert.deepEqual(c.summary(), [`completed:${jobId}`]);
    assert.equal(c.events[0]?.sequence, 1, 'the failed batch used no sequence numbers');
  });
});

test('filters: by queue, by job id and by kind, each narrowing the others', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId: a } = await engine.enqueue(job('a'));
    const { jobId: b } = await engine.enqueue(job('b'));
    const byQueue = collect(engine, { queues: ['b'] });
    const byJob = collect(engine, { jobIds: [a, 'no-such-job'] });
    const byKind = collect(engine, { kinds: ['completed'] });
    const byJobAndKind = collect(engine, { jobIds: [a, b], kinds: ['leased'], queues: ['a'] });
    const leased = await engine.reserve({ queues: ['a', 'b'], maxJobs: 2 });
    await engine.ackBatch(leased.map((l) => ({ jobId: l.id, attempt: l.attempt })));
    assert.deepEqual(byQueue.summary(), [`leased:${b}`, `completed:${b}`]);
    assert.deepEqual(byJob.summary(), [`leased:${a}`, `completed:${a}`]);
    assert.deepEqual(byKind.summary(), [`completed:${a}`, `completed:${b}`]);
    assert.deepEqual(byJobAndKind.summary(), [`leased:${a}`]);
  });
});

test('resume after a disconnect delivers the missed events exactly once, then live ones', async () => {
  await withEngine({}, async ({ engine }) => {
    const first = collect(engine);
    await engine.enqueue(job('q'));
    await engine.enqueue(job('q'));
    const seen = first.events.length;
    const last = first.events.at(-1)!.sequence;
    first.subscription.close();
    const missedIds = [(await engine.enqueue(job('q'))).jobId];
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 3 });
    assert.equal(first.events.length, seen, 'a closed subscription gets nothing more');

    const resumed = collect(
      engine,
      {},
      { kind: 'after', sequence: last, streamId: first.subscription.streamId },
    );
    assert.deepEqual(resumed.summary(), [`enqueued:${missedIds[0]}`, ...leased.map((l) => `leased:${l.id}`)]);
    assert.equal(resumed.events[0]?.sequence, last + 1);
    assert.equal(resumed.caughtUpAt(), last + 4);
    const { jobId: live } = await engine.enqueue(job('q'));
    assert.deepEqual(resumed.summary().slice(-1), [`enqueued:${live}`]);
    const sequences = resumed.events.map((e) => e.sequence);
    assert.deepEqual(
      sequences,
      [...new Set(sequences)].sort((x, y) => x - y),
      'each once, in order',
    );

    // From the oldest kept event: the whole backlog, then live.
    const everything = collect(engine, {}, { kind: 'oldest' });
    assert.deepEqual(
      everything.events.map((e) => e.sequence),
      Array.from({ length: last + 5 }, (_, i) => i + 1),
    );
  });
});

test('a resume the backlog cannot serve is out_of_range, saying why', async () => {
  const options = limits({ eventBacklogEvents: 100, eventResumeWindowMs: 60_000 });
  await withEngine({ options }, async ({ engine, clock }) => {
    const first = collect(engine);
    await engine.enqueue(job('q'));
    const { streamId } = first.subscription;
    first.subscription.close();

    const stranger = await refused(
      engine,
      {},
      { kind: 'after', sequence: 1, streamId: 'other' },
      'out_of_range',
    );
    assert.match(
      stranger.message,
      /this server restarted since \(events are not kept across restarts\), or the id is another server's/,
    );
    const future = await refused(engine, {}, { kind: 'after', sequence: 99, streamId }, 'out_of_range');
    assert.match(future.message, /after_sequence is 99, but the newest event is 1/);

    // Evicted: more events than the backlog holds.
    await engine.enqueueBatch(Array.from({ length: 150 }, () => job('q')));
    const evicted = await refused(engine, {}, { kind: 'after', sequence: 1, streamId }, 'out_of_range');
    assert.match(evicted.message, /the events after 1 are no longer kept: the oldest kept is 52/);
    const within = collect(engine, {}, { kind: 'after', sequence: 51, streamId });
    assert.equal(within.events.length, 100);
    within.subscription.close();

    // Nobody subscribed for longer than the resume window: recording stopped, the backlog is gone.
    clock.advance(60_000);
    assert.deepEqual(engine.eventBacklog, { subscribers: 0, events: 0, bytes: 0, recording: false });
    const stopped = await refused(engine, {}, { kind: 'after', sequence: 151, streamId }, 'out_of_range');
    assert.match(stopped.message, /nothing is kept while nobody subscribes/);
  });
});

test('no events are built while nobody subscribes; recording runs on through the resume window', async () => {
  const options = limits({ eventResumeWindowMs: 10_000 });
  await withEngine({ options }, async ({ engine, clock }) => {
    await engine.enqueue(job('q'));
    assert.deepEqual(engine.eventBacklog, { subscribers: 0, events: 0, bytes: 0, recording: false });
    const c = collect(engine);
    await engine.enqueue(job('q'));
    assert.equal(engine.eventBacklog.events, 1);
    c.subscription.close();
    await engine.enqueue(job('q'));
    clock.advance(9_999);
    assert.equal(engine.eventBacklog.recording, true);
    assert.equal(engine.eventBacklog.events, 2, 'kept for a resume within the window');
    // Resuming within the window gets the event published while nobody listened.
    const back = collect(engine, {}, { kind: 'after', sequence: 1, streamId: c.subscription.streamId });
    assert.equal(back.events.length, 1);
    back.subscription.close();
    clock.advance(10_000);
    assert.deepEqual(engine.eventBacklog, { subscribers: 0, events: 0, bytes: 0, recording: false });
  });
});

test('a subscriber that reads nothing holds a bounded amount, and is cut off once the backlog drops its events', async () => {
  const options = limits({ eventBacklogEvents: 1000 });
  await withEngine({ options }, async ({ engine }) => {
    const slow = collect(engine, {}, { kind: 'now' }, { hold: true });
    const fast = collect(engine);
    const result = new Uint8Array(4096);
    const ids: string[] = [];
    for (let round = 0; round < 3; round++) {
      const batch = await engine.enqueueBatch(Array.from({ length: 100 }, () => job('q')));
      for (const r of batch) if (r.ok) ids.push(r.jobId);
    }
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 300 });
    await engine.ackBatch(leased.map((l) => ({ jobId: l.id, attempt: l.attempt, result })));
    // Handed over but not written: no more than the per-subscriber bound (plus one batch).
    const heldBytes = slow.events.reduce((sum, e) => sum + 160 + (e.kind === 'completed' ? 4096 : 0), 0);
    assert.ok(heldBytes < maxUnwrittenBytes + 64 * 1024 + 8192, `held ${heldBytes} bytes`);
    assert.ok(slow.events.length < fast.events.length);
    assert.equal(slow.ended(), undefined, 'still within the backlog');

    // More events than the backlog holds: the slow subscriber's next unread events are gone.
    await engine.enqueueBatch(Array.from({ length: 1000 }, () => job('q')));
    const cutOff = slow.ended();
    assert.ok(cutOff, 'cut off');
    assert.equal(cutOff.code, 'resource_exhausted');
    assert.match(
      cutOff.message,
      /this subscriber fell behind: it had read up to event \d+, and the backlog now starts at event \d+/,
    );
    const before = slow.events.length;
    slow.release();
    assert.equal(slow.events.length, before, 'nothing after the cut-off');
    assert.equal(fast.ended(), undefined);
    assert.equal(fast.events.length, 300 * 3 + 1000);
    assert.equal(engine.eventBacklog.subscribers, 1);
    assert.ok(engine.eventBacklog.events <= 1000);
  });
});

test('a slow subscriber that catches up within the backlog misses nothing (job-id filter too)', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const slowAll = collect(engine, {}, { kind: 'now' }, { hold: true });
    const slowJob = collect(engine, { jobIds: [jobId] }, { kind: 'now' }, { hold: true });
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    const big = JSON.stringify({ pad: 'x'.repeat(3000) });
    for (let i = 0; i < 200; i++)
      await engine.reportProgress({ jobId, attempt: 1, percent: i / 2, json: big });
    await engine.ack({ jobId, attempt: 1 });
    assert.ok(slowJob.events.length < 202, 'held back by the in-flight bound');
    for (let i = 0; i < 100 && (slowJob.held.length > 0 || slowAll.held.length > 0); i++) {
      slowJob.release();
      slowAll.release();
    }
    for (const c of [slowAll, slowJob]) {
      assert.equal(c.ended(), undefined);
      assert.deepEqual(
        c.events.map((e) => e.kind),
        ['leased', ...Array.from({ length: 200 }, () => 'progress'), 'completed'],
      );
    }
  });
});

test('a publication larger than the whole backlog cuts off even a caught-up subscriber', async () => {
  await withEngine({ options: limits({ eventBacklogEvents: 100 }) }, async ({ engine }) => {
    const c = collect(engine);
    await engine.enqueueBatch(Array.from({ length: 150 }, () => job('q')));
    assert.equal(c.ended()?.code, 'resource_exhausted');
    assert.equal(c.events.length, 0);
  });
});

test('subscriber limit, bad filters, and shutdown', async () => {
  await withEngine({ options: limits({ maxEventSubscribers: 2 }) }, async ({ engine }) => {
    const a = collect(engine);
    collect(engine);
    const full = await refused(engine, {}, { kind: 'now' }, 'resource_exhausted');
    assert.match(
      full.message,
      /2 event subscribers are open, the limit is 2 \(limits\.max_event_subscribers\)/,
    );
    a.subscription.close();
    a.subscription.close();
    const b = collect(engine);
    for (const [filter, pattern] of [
      [{ queues: ['bad name'] }, /queues: queue "bad name" may use only/],
      [{ kinds: ['finished'] }, /kinds: finished is not an event kind/],
      [{ jobIds: [''] }, /job_ids\[0\]: not a job id/],
    ] as const) {
      b.subscription.close();
      const error = await refused(
        engine,
        filter as Partial<EventFilter>,
        { kind: 'now' },
        'invalid_argument',
      );
      assert.match(error.message, pattern);
    }
    const c = collect(engine);
    engine.close();
    assert.equal(c.ended()?.code, 'unavailable');
  });
  await withEngine({ options: limits({ maxEventSubscribers: 0 }) }, async ({ engine }) => {
    const off = await refused(engine, {}, { kind: 'now' }, 'unavailable');
    assert.equal(off.lasting, true, 'an operator decision: no Retry-After, sepp-retry operator');
    assert.match(off.message, /events are turned off on this server/);
  });
});
