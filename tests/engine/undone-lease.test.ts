/**
 * Undone leases (src/engine/leases/undone-lease.ts), what is told and given back: a
 * `lease_undone` lifecycle event after the `leased` one, the rate-limit tokens the lease took
 * (the queue's bucket and its group's), and the `lease_undone` count for the metrics. The
 * undo itself (ready again, attempt given back, fenced) is tests/engine/settle.test.ts's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RateLimitSettings } from '../../src/engine/settings.ts';
import type { JobEvent } from '../../src/engine/types.ts';
import { job, withEngine, withQueues } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

/** One lease a minute: a bucket that, once spent, refills only when the clock moves a minute. */
const oncePerMinute: RateLimitSettings = { leases: 1, periodMs: 60_000, burst: 1 };

test('an undone lease is told after its lease: lease_undone, ready, at the lease’s attempt; counted once', async () => {
  const counted: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (event) => counted.push(event) } }, async ({ engine }) => {
    const c = collect(engine);
    const { jobId } = await engine.enqueue(job('q', { type: 'mail' }));
    const [leased] = await engine.reserve({ queues: ['q'], maxJobs: 1, workerId: 'w-1' });
    assert.ok(leased !== undefined);
    assert.equal(await engine.undoLeases([{ jobId, attempt: leased.attempt }]), 1);
    assert.equal(await engine.undoLeases([{ jobId, attempt: leased.attempt }]), 0, 'fenced: told once');
    const undone = c.events.find((e) => e.kind === 'lease_undone');
    assert.deepEqual(undone && { ...undone, sequence: 0, atMs: 0 }, {
      kind: 'lease_undone',
      sequence: 0,
      atMs: 0,
      jobId,
      queue: 'q',
      type: 'mail',
      attempt: 1,
      state: 'ready',
    });
    assert.deepEqual(c.summary(), [`enqueued:${jobId}`, `leased:${jobId}`, `lease_undone:${jobId}`]);
    // A filter by kind takes it.
    const only = collect(engine, { kinds: ['lease_undone'] }, { kind: 'oldest' });
    assert.deepEqual(only.summary(), [`lease_undone:${jobId}`]);
    // The next lease takes the same attempt again, and is told as any lease.
    const [again] = await engine.reserve({ queues: ['q'], maxJobs: 1 });
    assert.equal(again?.attempt, 1);
    assert.deepEqual(
      counted.filter((e) => e.kind === 'reserved' || e.kind === 'lease_undone').map((e) => [e.kind, e.count]),
      [
        ['reserved', 1],
        ['lease_undone', 1],
        ['reserved', 1],
      ],
    );
    c.subscription.close();
    only.subscription.close();
  });
});

test('an undone lease gives its rate-limit token back: a queue limited to one a minute leases again at once', async () => {
  await withEngine({ options: withQueues({ q: { rateLimit: oncePerMinute } }) }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.equal(leased?.id, jobId, 'one token: one lease');
    assert.deepEqual(await engine.reserve({ queues: ['q'], maxJobs: 2 }), [], 'the bucket is empty');
    await engine.undoLeases([{ jobId, attempt: 1 }]);
    const again = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.deepEqual(
      again.map((j) => j.id),
      [jobId],
      'its token back, and no more: the same job first, the other still held back',
    );
  });
});

test('an undone lease gives its group’s token back, capped at the bucket’s capacity', async () => {
  const options = withQueues({ q: { groupRateLimit: oncePerMinute } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId: a } = await engine.enqueue(job('q', { group: 'A' }));
    await engine.enqueue(job('q', { group: 'A' }));
    const { jobId: b } = await engine.enqueue(job('q', { group: 'B' }));
    const first = await engine.reserve({ queues: ['q'], maxJobs: 3 });
    assert.deepEqual(first.map((j) => j.id).sort(), [a, b].sort(), 'one token per group');
    await engine.undoLeases([{ jobId: a, attempt: 1 }]);
    assert.deepEqual(
      (await engine.reserve({ queues: ['q'], maxJobs: 3 })).map((j) => j.id),
      [a],
      "A's token is back (one: A's other job waits); B's bucket got nothing",
    );
    // A bucket refilled since the lease is full: the token given back does not overfill it.
    clock.advance(60_000);
    await engine.undoLeases([{ jobId: a, attempt: 1 }]);
    assert.equal(
      (await engine.reserve({ queues: ['q'], maxJobs: 3 })).filter((j) => j.group === 'A').length,
      1,
    );
  });
});
