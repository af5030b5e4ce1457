/**
 * Why jobs fail (issue 36, item 2): a nack's error class and stack are kept per
 * attempt; "top errors" groups a queue's dead letters by (class, first line of
 * the last error) with counts and first/last failure times; a group is a bulk
 * filter, so its jobs are requeued or deleted as one act — on every store.
 */
import assert from 'node:assert/strict';
import { SeppError } from '../../../../src/engine/errors.ts';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const errorCases: StoreCase[] = [
  {
    name: 'errors: class and stack per attempt; top errors groups dead letters; a group is requeued as one act',
    async run(h) {
      const { engine, clock } = await h.engine();
      await engine.enqueueBatch(
        Array.from({ length: 9 }, (_, i) => ({ queue: 'q', type: `t${i % 3}`, payload: bytes('x') })),
      );
      // Three kinds of failure: a TypeError (two lines of message), a class-less error with an id
      // on its second line, and a RangeError whose first attempt is retried before it goes dead.
      const leased = await engine.reserve({ queues: ['q'], maxJobs: 9 });
      assert.equal(leased.length, 9);
      let at = 0;
      for (const j of leased) {
        clock.advance(1000);
        at++;
        const kind = j.type;
        await engine.nack({
          jobId: j.id,
          attempt: j.attempt,
          error: kind === 't0' ? `x is undefined\nwhile reading ${j.id}` : kind === 't1' ? 'boom' : 'too far',
          ...(kind === 't0'
            ? { errorClass: 'TypeError', stack: `TypeError: x is undefined\n    at f (a.js:${at}:1)` }
            : {}),
          ...(kind === 't2' ? { errorClass: 'RangeError' } : {}),
          directive: kind === 't2' ? { kind: 'delay', delayMs: 0 } : { kind: 'dead_letter' },
        });
      }
      for (const j of await engine.reserve({ queues: ['q'], maxJobs: 9 })) {
        clock.advance(1000);
        await engine.nack({
          jobId: j.id,
          attempt: j.attempt,
          error: 'too far',
          errorClass: 'RangeError',
          directive: { kind: 'dead_letter' },
        });
      }
      const t0 = leased.find((j) => j.type === 't0')!;
      const job = await engine.getJob(t0.id);
      assert.equal(job.errors.length, 1);
      assert.equal(job.errors[0]!.errorClass, 'TypeError');
      assert.match(job.errors[0]!.stack!, /^TypeError: x is undefined\n {4}at f/);
      const t2 = await engine.getJob(leased.find((j) => j.type === 't2')!.id);
      assert.deepEqual(
        t2.errors.map((e) => [e.attempt, e.errorClass, e.stack]),
        [
          [1, 'RangeError', null],
          [2, 'RangeError', null],
        ],
      );
      const t1 = await engine.getJob(leased.find((j) => j.type === 't1')!.id);
      assert.deepEqual([t1.errors[0]!.errorClass, t1.errors[0]!.stack], [null, null]);

      const top = await engine.topErrors({ queue: 'q' });
      assert.deepEqual(
        top.groups.map((g) => [g.errorClass, g.firstLine, g.jobs]),
        [
          // Ties by the latest failure: RangeError's second attempts failed last, then boom's.
          ['RangeError', 'too far', 3],
          ['', 'boom', 3],
          ['TypeError', 'x is undefined', 3],
        ],
      );
      assert.deepEqual([top.groupCount, top.scanned, top.deadTotal, top.complete], [3, 9, 9, true]);
      const range = top.groups[0]!;
      assert.ok(range.firstFailedAtMs < range.lastFailedAtMs);
      assert.equal((await engine.topErrors({ queue: 'q', limit: 1 })).groups.length, 1);
      await assert.rejects(
        async () => engine.topErrors({ queue: 'q', limit: 0 }),
        (e: unknown) => e instanceof SeppError && e.code === 'invalid_argument',
      );

      // Dead letters of one reason are counted by one index range (the dead letters page's "Requeue all N").
      assert.equal(
        await h.store.read((v) => v.deadLetters.countByReason({ queue: 'q', reason: 'dead_lettered' })),
        9,
      );
      assert.equal(
        await h.store.read((v) => v.deadLetters.countByReason({ queue: 'q', reason: 'expired' })),
        0,
      );
      // The TypeError group: counted, then requeued as one bulk operation (one audit entry).
      const group = { errorClass: 'TypeError', firstLine: 'x is undefined' };
      assert.equal(
        (await engine.countBulk('requeue', { queue: 'q', states: ['dead'], errorGroup: group })).matched,
        3,
      );
      const requeued = await engine.runBulk({
        action: 'requeue',
        filter: { queue: 'q', states: ['dead'], errorGroup: group },
        audit: { actor: 'key:ops', action: 'jobs.requeue', target: 'queue:q' },
      });
      assert.deepEqual([requeued.state, requeued.changed], ['done', 3]);
      // The class-less group by its empty class; then nothing of it is left.
      const none = { errorClass: '', firstLine: 'boom' };
      const deleted = await engine.runBulk({
        action: 'delete',
        filter: { queue: 'q', states: ['dead'], errorGroup: none },
      });
      assert.equal(deleted.changed, 3);
      assert.deepEqual(
        (await engine.topErrors({ queue: 'q' })).groups.map((g) => [g.errorClass, g.jobs]),
        [['RangeError', 3]],
      );
      const [q] = await engine.listQueues();
      assert.deepEqual([q?.counts.ready, q?.counts.dead], [3, 3]);
    },
  },
  {
    name: 'errors: a nack’s class is checked and its stack bounded at the boundary',
    async run(h) {
      const { engine } = await h.engine();
      await engine.enqueueBatch([{ queue: 'q', type: 't', payload: bytes('x') }]);
      const [j] = await engine.reserve({ queues: ['q'] });
      for (const errorClass of ['Bad\nClass', 'x'.repeat(257)]) {
        await assert.rejects(
          engine.nack({ jobId: j!.id, attempt: j!.attempt, error: 'e', errorClass }),
          (e: unknown) =>
            e instanceof SeppError && e.code === 'invalid_argument' && /error_class/.test(e.message),
        );
      }
      await engine.nack({
        jobId: j!.id,
        attempt: j!.attempt,
        error: 'e',
        errorClass: 'E'.repeat(256),
        stack: 's'.repeat(100_000),
      });
      const [e] = (await engine.getJob(j!.id)).errors;
      assert.equal(e!.errorClass, 'E'.repeat(256));
      assert.ok(Buffer.byteLength(e!.stack!) <= 8192, 'cut to max_error_bytes');
      assert.match(e!.stack!, /… \[truncated\]$/);
      await assert.rejects(
        async () =>
          engine.countBulk('requeue', { queue: 'q', errorGroup: { errorClass: '', firstLine: 'a\nb' } }),
        (e: unknown) => e instanceof SeppError && e.code === 'invalid_argument',
      );
    },
  },
];
