/** The job history through the Store interface: written once a minute, read back after a restart, rows bounded. */
import assert from 'node:assert/strict';
import type { HistoryRow } from '../../../../src/store/rows.ts';
import type { StoreCase } from '../harness.ts';

const row = (bucketMs: number, writer: string, completed: number): HistoryRow => ({
  resolution: 'm',
  bucket_ms: bucketMs,
  queue: 'q',
  type: 't',
  writer,
  completed,
  failed: 1,
  dead: 0,
  covered_ms: 0,
  wait_hist: '[[5,2]]',
  run_hist: null,
});

export const historyCases: StoreCase[] = [
  {
    name: 'history: rows put, replaced by key, read by bucket range and forgotten before a time',
    async run(h) {
      await h.write((tx) =>
        tx.history.put([row(60_000, 'a', 1), row(120_000, 'a', 2), row(120_000, 'b', 3)]),
      );
      await h.write((tx) => tx.history.put([row(120_000, 'a', 5)]));
      const read = await h.store.read((view) =>
        view.history.between({ resolution: 'm', fromMs: 100_000, toMs: 180_000 }),
      );
      assert.deepEqual(read.map((r) => [r.bucket_ms, r.writer, r.completed, r.failed, r.wait_hist]).sort(), [
        [120_000, 'a', 5, 1, '[[5,2]]'],
        [120_000, 'b', 3, 1, '[[5,2]]'],
      ]);
      assert.deepEqual(
        await h.store.read((view) => view.history.between({ resolution: 'h', fromMs: 0, toMs: 1e12 })),
        [],
      );
      await h.write((tx) => tx.history.forget({ resolution: 'm', beforeMs: 120_000 }));
      const left = await h.store.read((view) =>
        view.history.between({ resolution: 'm', fromMs: 0, toMs: 1e12 }),
      );
      assert.deepEqual(
        left.map((r) => r.bucket_ms),
        [120_000, 120_000],
      );
    },
  },
  {
    name: 'history: what jobs did survives a restart of the engine',
    async run(h) {
      const { engine, clock } = await h.engine();
      await engine.enqueue({ queue: 'q', type: 'mail', payload: new Uint8Array([1]) });
      clock.advance(200);
      const [leased] = await engine.reserve({ queues: ['q'] });
      clock.advance(3_000);
      await engine.ack({ jobId: leased!.id, attempt: leased!.attempt });
      clock.advance(60_000);
      await engine.flushHistory();
      const again = await h.engine({ clock });
      const h1 = await again.engine.history('1h');
      const mail = h1.types.find((t) => t.type === 'mail');
      assert.equal(mail?.completed, 1);
      assert.ok(Math.abs(mail!.runP50Ms! - 3_000) <= 270);
      assert.ok(Math.abs(mail!.waitP50Ms! - 200) <= 18);
      assert.equal((await again.engine.history('7d')).total.completed, 1);
      assert.ok(
        h1.buckets.some((b) => b.coveredMs === 0),
        'before the start: no data',
      );
    },
  },
];
