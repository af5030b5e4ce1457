/**
 * The job history (src/engine/history/): what it counts, that it survives a
 * restart (injected clock, the same data directory), that time no server ran is
 * "no data", and its bounds (series cap, retention).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { job, withEngine } from '../helpers/engine.ts';

const minute = 60_000;

async function runOne(
  engine: Engine,
  clock: { advance(ms: number): void },
  type: string,
  waitMs: number,
  runMs: number,
  outcome: 'ack' | 'nack' | 'dead',
): Promise<void> {
  await engine.enqueue(job('q', { type, maxAttempts: 2 }));
  clock.advance(waitMs);
  const [leased] = await engine.reserve({ queues: ['q'] });
  assert.ok(leased);
  clock.advance(runMs);
  if (outcome === 'ack') await engine.ack({ jobId: leased.id, attempt: leased.attempt });
  else
    await engine.nack({
      jobId: leased.id,
      attempt: leased.attempt,
      error: 'boom',
      directive: outcome === 'dead' ? { kind: 'dead_letter' } : { kind: 'delay', delayMs: 3_600_000 },
    });
}

test('history: counts, p50/p95, no data before the start, and it survives a restart', async () => {
  await withEngine({}, async (t) => {
    const { engine, clock } = t;
    const startMs = clock.nowMs();
    for (let i = 0; i < 20; i++) await runOne(engine, clock, 'mail', 100, 1_000, 'ack');
    await runOne(engine, clock, 'mail', 100, 2_000, 'nack');
    await runOne(engine, clock, 'mail', 100, 2_000, 'dead');
    await runOne(engine, clock, 'resize', 5_000, 10, 'ack');
    // Nothing is written before the minute ends; then one write.
    assert.equal(t.db.prepare('SELECT count(*) AS n FROM job_history').pluck().get() as number, 0);
    clock.advance(minute - (clock.nowMs() - startMs));
    await engine.flushHistory();
    const rows = t.db.prepare('SELECT count(*) AS n FROM job_history').pluck().get() as number;
    // Minute: coverage + 2 series; hour: coverage + 2 series.
    assert.equal(rows, 6);

    const h = await engine.history('1h');
    assert.equal(h.bucketMs, minute);
    assert.equal(h.buckets.length, 60);
    assert.equal(h.toMs, startMs + minute);
    assert.equal(h.fromMs, startMs + minute - 60 * minute);
    // The 59 minutes before the server started are no data, not zeros.
    assert.deepEqual(h.buckets.filter((b) => b.coveredMs === 0).length, 59);
    assert.equal(h.firstDataMs, startMs);
    assert.equal(h.coveredMs, minute);
    const mail = h.types.find((x) => x.type === 'mail')!;
    assert.equal(mail.completed, 20);
    assert.equal(mail.failed, 2);
    assert.equal(mail.dead, 1);
    assert.equal(mail.failureRate, 2 / 22);
    // Within the histograms' 9 %.
    assert.ok(Math.abs(mail.runP50Ms! - 1_000) <= 90, `run p50 ${mail.runP50Ms}`);
    assert.ok(Math.abs(mail.runP95Ms! - 2_000) <= 180, `run p95 ${mail.runP95Ms}`);
    assert.ok(Math.abs(mail.waitP50Ms! - 100) <= 9, `wait p50 ${mail.waitP50Ms}`);
    const resize = h.types.find((x) => x.type === 'resize')!;
    assert.ok(Math.abs(resize.waitP95Ms! - 5_000) <= 450);
    assert.equal(h.total.completed, 21);
    assert.deepEqual(
      h.queues.map((q) => [q.queue, q.completed]),
      [['q', 21]],
    );

    // A restart: the history is read back from the database; the down time is no data.
    const after = await t.reopen();
    after.clock.advance(5 * minute);
    await runOne(after.engine, after.clock, 'mail', 100, 1_000, 'ack');
    after.clock.advance(minute);
    await after.engine.flushHistory();
    const again = await after.engine.history('1h');
    assert.equal(again.types.find((x) => x.type === 'mail')!.completed, 21);
    const covered = again.buckets.filter((b) => b.coveredMs > 0).map((b) => (b.startMs - startMs) / minute);
    // Minute 0 (before the restart) and the minutes since the reopen; the time between was not covered.
    assert.equal(covered[0], 0);
    assert.ok(covered.length >= 2 && covered.length <= 8, `covered minutes ${covered}`);
    const day = await after.engine.history('24h');
    assert.equal(day.bucketMs, 3_600_000);
    assert.equal(day.total.completed, 22);
    const week = await after.engine.history('7d');
    assert.equal(week.buckets.length, 168);
    assert.equal(week.total.completed, 22);
    // One queue only.
    assert.equal((await after.engine.history('1h', 'other')).total.completed, 0);
    return after;
  });
});

test('history: a shutdown writes the minute in progress', async () => {
  await withEngine({}, async (t) => {
    await runOne(t.engine, t.clock, 'a', 10, 10, 'ack');
    const after = await t.reopen();
    // Written by the shutdown: the minute in progress, covered up to then.
    const rows = after.db
      .prepare("SELECT count(*) AS n FROM job_history WHERE type = 'a'")
      .pluck()
      .get() as number;
    assert.equal(rows, 2);
    after.clock.advance(minute);
    const h = await after.engine.history('1h');
    assert.equal(h.total.completed, 1);
    return after;
  });
});

test('history: acks settled together (AckBatches) are counted, each with its own wait and run time', async () => {
  await withEngine({}, async (t) => {
    const { engine, clock } = t;
    for (let i = 0; i < 30; i++) await engine.enqueue(job('q', { type: 'batch' }));
    clock.advance(200);
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 30 });
    assert.equal(leased.length, 30);
    clock.advance(3_000);
    const outcomes = await engine.ackBatch(leased.map((j) => ({ jobId: j.id, attempt: j.attempt })));
    assert.ok(outcomes.every((o) => o.ok));
    clock.advance(minute);
    await engine.flushHistory();
    const h = await engine.history('1h');
    const batch = h.types.find((x) => x.type === 'batch')!;
    assert.equal(batch.completed, 30);
    assert.ok(Math.abs(batch.runP50Ms! - 3_000) <= 270, `run p50 ${batch.runP50Ms}`);
    assert.ok(Math.abs(batch.waitP95Ms! - 200) <= 18, `wait p95 ${batch.waitP95Ms}`);
  });
});

test('history: series past the cap count under (other); minute rows are kept 3 hours', async () => {
  await withEngine({}, async (t) => {
    const { engine, clock } = t;
    for (let i = 0; i < 203; i++) {
      await engine.enqueue(job('q', { type: `t${String(i).padStart(3, '0')}` }));
    }
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 203 } as never);
    for (const l of leased) await engine.ack({ jobId: l.id, attempt: l.attempt });
    clock.advance(minute);
    await engine.flushHistory();
    const h = await engine.history('1h');
    assert.equal(h.maxSeries, 200);
    assert.equal(h.types.length, 201);
    const other = h.types.find((x) => x.queue === '(other)' && x.type === '(other)');
    assert.equal(other?.completed, leased.length - 200);
    // Retention: 4 hours on, the first minute's rows are gone, its hour stays.
    for (let i = 0; i < 4 * 60; i++) {
      clock.advance(minute);
      await engine.flushHistory();
    }
    const old = t.db
      .prepare("SELECT count(*) AS n FROM job_history WHERE resolution = 'm' AND bucket_ms < ?")
      .pluck()
      .get(clock.nowMs() - 3 * 3_600_000) as number;
    assert.equal(old, 0);
    const rows = t.db
      .prepare("SELECT count(*) AS n FROM job_history WHERE resolution = 'm'")
      .pluck()
      .get() as number;
    assert.ok(rows <= 3 * 60 + 1, `minute rows ${rows}`);
    assert.equal((await engine.history('24h')).total.completed, leased.length);
  });
});
