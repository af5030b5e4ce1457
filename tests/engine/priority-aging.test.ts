/**
 * Priority aging (issue 35): with a queue's `priorityAgingMs`, a ready job without a group
 * counts one priority level higher for every `priorityAgingMs` it has been due, so a
 * constant flood of high-priority jobs cannot starve a low-priority one: it is leased once
 * it has waited (9 − p) × priorityAgingMs, whatever the flood. Off (0): strict priority.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytes, job, withEngine, withQueues } from '../helpers/engine.ts';

const agingMs = 1000;

/** Each step: 100 ms pass, one fresh priority-9 job comes, one job is leased. Returns when `target` was leased. */
async function flood(
  engine: Awaited<Parameters<Parameters<typeof withEngine>[1]>[0]>['engine'],
  clock: { advance(ms: number): void; nowMs(): number },
  queue: string,
  target: string,
  steps: number,
): Promise<number | null> {
  for (let step = 0; step < steps; step++) {
    clock.advance(100);
    await engine.enqueue(job(queue, { priority: 9, payload: bytes(`flood-${step}`) }));
    const [leased] = await engine.reserve({ queues: [queue], leaseMs: 60_000 });
    assert.ok(leased !== undefined, 'a job is leased every step');
    if (leased.id === target) return clock.nowMs();
  }
  return null;
}

test('priority aging: a priority-0 job under a constant priority-9 flood is leased after 9 × priority_aging_ms', async () => {
  await withEngine(
    { options: withQueues({ q: { priorityAgingMs: agingMs } }) },
    async ({ engine, clock }) => {
      const { jobId } = await engine.enqueue(job('q', { priority: 0, payload: bytes('low') }));
      const t0 = clock.nowMs();
      const leasedAt = await flood(engine, clock, 'q', jobId, 200);
      assert.equal(
        leasedAt,
        t0 + 9 * agingMs,
        'at the bound: effective priority 9, due before every flood job',
      );
    },
  );
});

test('priority aging off: the same flood starves the priority-0 job (strict priority)', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { priority: 0, payload: bytes('low') }));
    assert.equal(await flood(engine, clock, 'q', jobId, 150), null);
    assert.equal((await engine.getJob(jobId)).state, 'ready');
  });
});

test('priority aging: a priority-5 job behind a backlog of priority-9 jobs passes the ones due 4 × aging after it', async () => {
  await withEngine(
    { options: withQueues({ q: { priorityAgingMs: agingMs } }) },
    async ({ engine, clock }) => {
      const early = await engine.enqueue(job('q', { priority: 9, payload: bytes('early') }));
      clock.advance(100);
      const mid = await engine.enqueue(job('q', { priority: 5, payload: bytes('mid') }));
      clock.advance(4000);
      const late = await engine.enqueue(job('q', { priority: 9, payload: bytes('late') }));
      clock.advance(10);
      // effective: early 9 + 4 = 13, mid 5 + 4 = 9, late 9 + 0 = 9 (mid is due first).
      const leased = await engine.reserve({ queues: ['q'], maxJobs: 3, leaseMs: 60_000 });
      assert.deepEqual(
        leased.map((j) => j.id),
        [early.jobId, mid.jobId, late.jobId],
      );
    },
  );
});

test('priority aging: a reserve of k jobs takes the best k across priorities, in effective order', async () => {
  await withEngine(
    { options: withQueues({ q: { priorityAgingMs: agingMs } }) },
    async ({ engine, clock }) => {
      const ids: Record<string, string> = {};
      // Oldest first: p1 (will be effective 1 + 6 = 7), p3 (3 + 3 = 6), then fresh p8 ×2 and p2.
      ids.p1 = (await engine.enqueue(job('q', { priority: 1 }))).jobId;
      clock.advance(3000);
      ids.p3 = (await engine.enqueue(job('q', { priority: 3 }))).jobId;
      clock.advance(3000);
      ids.p8a = (await engine.enqueue(job('q', { priority: 8 }))).jobId;
      ids.p8b = (await engine.enqueue(job('q', { priority: 8 }))).jobId;
      ids.p2 = (await engine.enqueue(job('q', { priority: 2 }))).jobId;
      const first = await engine.reserve({ queues: ['q'], maxJobs: 4, leaseMs: 60_000 });
      assert.deepEqual(
        first.map((j) => j.id),
        [ids.p8a, ids.p8b, ids.p1, ids.p3],
      );
      const [rest] = await engine.reserve({ queues: ['q'], leaseMs: 60_000 });
      assert.equal(rest?.id, ids.p2);
    },
  );
});

test('priority aging applies under flow control (max_leased) too', async () => {
  await withEngine(
    { options: withQueues({ q: { priorityAgingMs: agingMs, maxLeased: 100 } }) },
    async ({ engine, clock }) => {
      const { jobId } = await engine.enqueue(job('q', { priority: 0, payload: bytes('low') }));
      const t0 = clock.nowMs();
      assert.equal(await flood(engine, clock, 'q', jobId, 200), t0 + 9 * agingMs);
    },
  );
});
