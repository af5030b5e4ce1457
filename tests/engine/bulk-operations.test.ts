/**
 * Bulk operations (src/engine/control/bulk-operations.ts): every filter of the
 * jobs list, across queues; bounded slices that let other writes commit in
 * between; progress and an id to poll; stopping one; one audit entry; the
 * count before a confirmation, exact or "at least".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import {
  firstSliceRows,
  maxRunning,
  maxSliceRows,
  minSliceRows,
  nextSliceRows,
  sliceWorkMs,
} from '../../src/engine/control/bulk-operations.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { expectCode, job, withEngine } from '../helpers/engine.ts';

/** Enqueues `n` jobs in batches of 1,000. */
async function enqueueMany(
  engine: Engine,
  n: number,
  make: (i: number) => ReturnType<typeof job>,
): Promise<void> {
  for (let from = 0; from < n; from += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - from) }, (_, i) => make(from + i));
    await engine.enqueueBatch(batch);
  }
}

/** Leases every ready job of `queue` and nacks it straight to the dead letters with `error`. */
async function killAll(engine: Engine, queue: string, error: (type: string) => string): Promise<void> {
  for (;;) {
    const leased = await engine.reserve({ queues: [queue], maxJobs: 100 });
    if (leased.length === 0) return;
    for (const j of leased) {
      await engine.nack({
        jobId: j.id,
        attempt: j.attempt,
        error: error(j.type),
        directive: { kind: 'dead_letter' },
      });
    }
  }
}

test('requeue, delete, cancel and run now act on everything a filter matches, in any queue', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    await engine.enqueue(job('a', { type: 'mail.send', metadata: { tenant: 't1' } }));
    await engine.enqueue(job('b', { type: 'mail.bounce', metadata: { tenant: 't2' } }));
    clock.advance(60_000);
    const cutoffMs = clock.nowMs();
    await engine.enqueue(job('a', { type: 'report', metadata: { tenant: 't1' } }));
    await engine.enqueue(job('b', { type: 'mail.send', metadata: { tenant: 't1' } }));
    await killAll(engine, 'a', (type) => `SMTP timeout for ${type}`);
    await killAll(engine, 'b', (type) => (type === 'mail.send' ? 'smtp TIMEOUT' : 'mailbox full'));

    // Error text (any case) across every queue: three of the four dead letters.
    const byError = { errorText: 'smtp timeout' };
    assert.deepEqual(await engine.countBulk('requeue', byError), { matched: 3, exact: true, examined: 4 });
    const requeued = await engine.runBulk({ action: 'requeue', filter: byError });
    assert.equal(requeued.changed, 3);
    assert.equal(requeued.state, 'done');
    const counts = Object.fromEntries((await engine.listQueues()).map((q) => [q.name, q.counts]));
    assert.deepEqual([counts.a?.ready, counts.a?.dead, counts.b?.ready, counts.b?.dead], [2, 0, 1, 1]);

    // Metadata and a type prefix: a's mail.send and b's mail.send (t1).
    const t1Mail = { typePrefix: 'mail.', metadata: { key: 'tenant', value: 't1' } };
    assert.equal((await engine.countBulk('cancel', t1Mail)).matched, 2);
    assert.equal((await engine.runBulk({ action: 'cancel', filter: t1Mail })).changed, 2);

    // Age: what was enqueued before the cutoff, in every state a delete applies to.
    const old = { enqueuedBeforeMs: cutoffMs };
    assert.equal((await engine.countBulk('delete', old)).matched, 2, 'a cancelled mail.send and the bounce');
    assert.equal((await engine.runBulk({ action: 'delete', filter: old })).changed, 2);

    // Run now: a scheduled job of one queue, found by its group.
    await engine.enqueue(job('c', { type: 'x', group: 'g1', delayMs: 60_000 }));
    await engine.enqueue(job('c', { type: 'x', group: 'g2', delayMs: 60_000 }));
    const ran = await engine.runBulk({
      action: 'update',
      filter: { queue: 'c', group: 'g2' },
      changes: { runNow: true },
    });
    assert.equal(ran.changed, 1);
    const c = (await engine.listQueues()).find((q) => q.name === 'c');
    assert.deepEqual([c?.counts.ready, c?.counts.scheduled], [1, 1]);
  });
});

test('dead letters: requeue all whose error contains some text', async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueueMany(engine, 6, (i) => job('q', { type: i % 2 === 0 ? 'even' : 'odd' }));
    await killAll(engine, 'q', (type) => `failed: ${type}`);
    const audit = { actor: 'alice', action: 'dead_letters.requeue_all', target: 'queue:q' };
    assert.equal(await engine.requeueDeadLetters({ queue: 'q', all: true, errorText: 'ODD' }, audit), 3);
    const [q] = await engine.listQueues();
    assert.deepEqual([q?.counts.ready, q?.counts.dead], [3, 3]);
    const [entry] = (await engine.listAudit({ action: 'dead_letters.requeue_all' })).items;
    assert.equal(entry?.details.errorText, 'ODD');
    assert.equal(entry?.details.changed, 3);
  });
});

test('an operation runs in slices of bounded size, and other writes commit between them', async () => {
  await withEngine({}, async ({ engine }) => {
    const n = 3 * maxSliceRows + 10;
    await enqueueMany(engine, n, () => job('q', { type: 't', delayMs: 60_000 }));
    const started = await engine.startBulk({
      action: 'update',
      filter: { queue: 'q' },
      changes: { runNow: true },
    });
    assert.equal(started.state, 'running');
    assert.deepEqual([started.matched, started.matchedExact, started.changed], [n, true, 0]);
    // An enqueue submitted now commits while the operation is still at work: it waits for one slice at most.
    await engine.enqueue(job('other'));
    const during = engine.getBulkOperation(started.id);
    assert.equal(during.state, 'running');
    assert.ok(during.changed <= firstSliceRows, `the enqueue waited for ${during.changed} rows`);
    const finished = await until(engine, started.id);
    assert.equal(finished.changed, n);
    assert.ok(finished.slices >= Math.ceil(n / maxSliceRows), `${finished.slices} slices`);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'q')?.counts.ready, n);
  });
});

test("a slice's size follows the time it took toward sliceWorkMs, at most halved or doubled, within the bounds", () => {
  assert.equal(nextSliceRows(400, sliceWorkMs), 400);
  // 25 % over its time: 20 % fewer rows (a 10 ms target once ran to 14-16 ms, doubling below 5).
  assert.equal(nextSliceRows(400, sliceWorkMs * 1.25), 320);
  assert.equal(nextSliceRows(400, sliceWorkMs * 0.8), 500);
  assert.equal(nextSliceRows(400, sliceWorkMs * 10), 200);
  assert.equal(nextSliceRows(400, 0), 800);
  assert.equal(nextSliceRows(minSliceRows, sliceWorkMs * 10), minSliceRows);
  assert.equal(nextSliceRows(maxSliceRows, 0), maxSliceRows);
});

/** A clock on which every reading is 10 ms after the last: a machine where each slice takes longer than it should. */
class SlowClock extends FakeClock {
  override nowMs(): number {
    this.advance(10);
    return super.nowMs();
  }
}

test('slices shrink when they take longer than their time (a loaded machine), down to a floor', async () => {
  await withEngine({ clock: new SlowClock() }, async ({ engine }) => {
    await enqueueMany(engine, 2000, () => job('q'));
    const done = await engine.runBulk({ action: 'cancel', filter: { queue: 'q' } });
    assert.equal(done.changed, 2000);
    // 256, 128, 64, then 32 per slice: far more slices than at full size (2000 rows would be 2 of them).
    assert.ok(done.slices >= (2000 - 256 - 128 - 64) / minSliceRows, `${done.slices} slices`);
  });
});

test('a stopped operation keeps what it changed; its one audit entry says how far it got', async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueueMany(engine, 4 * maxSliceRows, () => job('q'));
    const audit = { actor: 'key:ops', action: 'jobs.delete', target: 'queue:q' };
    const started = await engine.startBulk({ action: 'delete', filter: { queue: 'q' }, audit });
    const stopped = await engine.cancelBulkOperation(started.id);
    assert.equal(stopped.state, 'cancelled');
    assert.ok(stopped.changed < 4 * maxSliceRows, `changed ${stopped.changed}`);
    const [q] = await engine.listQueues();
    assert.equal(q?.counts.ready, 4 * maxSliceRows - stopped.changed);
    const entries = (await engine.listAudit({ action: 'jobs.delete' })).items;
    assert.equal(entries.length, 1);
    assert.equal(entries[0]?.details.operationId, started.id);
    assert.deepEqual(
      [entries[0]?.details.changed, entries[0]?.details.done, entries[0]?.details.stopped],
      [stopped.changed, false, true],
    );
    assert.equal(engine.listBulkOperations()[0]?.id, started.id);
    await expectCode(
      Promise.resolve().then(() => engine.getBulkOperation('nope')),
      'not_found',
    );
  });
});

test('a Stop ends the wait between two slices (betweenBulkSlices): the operation stops where it waits', async () => {
  let waits = 0;
  // Never settles: only the Stop ends the wait.
  const held = new Promise<void>(() => undefined);
  const betweenBulkSlices = () => {
    waits++;
    return held;
  };
  await withEngine({ deps: { betweenBulkSlices } }, async ({ engine }) => {
    await enqueueMany(engine, 4 * firstSliceRows, () => job('q'));
    const started = await engine.startBulk({ action: 'cancel', filter: { queue: 'q' } });
    while (waits === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      [engine.getBulkOperation(started.id).state, engine.getBulkOperation(started.id).changed],
      ['running', firstSliceRows],
    );
    const stopped = await engine.cancelBulkOperation(started.id);
    assert.deepEqual(
      [stopped.state, stopped.changed, stopped.slices, waits],
      ['cancelled', firstSliceRows, 1, 1],
    );
  });
});

test('jobs enqueued after an operation began are left alone', async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueueMany(engine, 2 * maxSliceRows, () => job('q'));
    const started = await engine.startBulk({ action: 'cancel', filter: { queue: 'q' } });
    const late = await engine.enqueue(job('q'));
    const finished = await until(engine, started.id);
    assert.equal(finished.changed, 2 * maxSliceRows);
    assert.equal((await engine.getJob(late.jobId)).state, 'ready');
  });
});

test('the count before a confirmation is exact, or "at least" with how far it looked', async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueueMany(engine, 50, (i) => job('q', { metadata: { n: String(i % 2) } }));
    assert.deepEqual(await engine.countBulk('cancel', { queue: 'q', states: ['ready'] }), {
      matched: 50,
      exact: true,
      examined: 0,
    });
    const filter = { queue: 'q', metadata: { key: 'n', value: '1' } };
    assert.deepEqual(await engine.countBulk('cancel', filter), { matched: 25, exact: true, examined: 50 });
    assert.deepEqual(await engine.countBulk('cancel', filter, {}, 20), {
      matched: 10,
      exact: false,
      examined: 20,
    });
  });
});

test(`at most ${maxRunning} operations run at once; bad filters are refused before anything runs`, async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueueMany(engine, 2 * maxSliceRows, () => job('q', { delayMs: 60_000 }));
    const starts = Array.from({ length: maxRunning }, () =>
      engine.startBulk({ action: 'update', filter: { queue: 'q' }, changes: { priority: 3 } }),
    );
    await expectCode(engine.startBulk({ action: 'cancel', filter: { queue: 'q' } }), 'resource_exhausted');
    for (const s of await Promise.all(starts)) await until(engine, s.id);
    await expectCode(
      engine.startBulk({ action: 'requeue', filter: { states: ['ready'] } }),
      'invalid_argument',
    );
    await expectCode(engine.startBulk({ action: 'delete', filter: { queue: 'nope' } }), 'not_found');
    await expectCode(
      engine.startBulk({ action: 'cancel', filter: { type: 'a', typePrefix: 'a' } }),
      'invalid_argument',
    );
    await expectCode(
      engine.startBulk({ action: 'cancel', filter: { deadReason: 'expired' } }),
      'invalid_argument',
    );
    await expectCode(
      engine.startBulk({ action: 'update', filter: {}, changes: { delayMs: 5 } }),
      'invalid_argument',
    );
  });
});

/** Waits for an operation to end, one write barrier at a time. */
async function until(engine: Engine, id: string) {
  for (let i = 0; i < 10_000; i++) {
    const info = engine.getBulkOperation(id);
    if (info.state !== 'running') return info;
    await engine.ackBatch([]);
  }
  throw new Error(`operation ${id} did not end`);
}
