/** Schedules' ticks: each enqueues its job exactly once, with the cursor, across a restart. */
import assert from 'node:assert/strict';
import type { StoreCase } from '../harness.ts';

export const scheduleCases: StoreCase[] = [
  {
    name: 'schedules: a tick enqueues its job and moves the cursor in one unit; a restart doubles nothing',
    async run(h) {
      const { engine, clock } = await h.engine();
      const startMs = clock.nowMs();
      await engine.putSchedule(
        {
          name: 'every-minute',
          intervalMs: 60_000,
          template: { queue: 'q', type: 't', payload: new TextEncoder().encode('tick') },
        },
        'create',
      );
      const first = (await engine.getSchedule('every-minute')).nextTickMs!;
      assert.ok(first > startMs);
      clock.advance(first - startMs);
      await engine.runMaintenance();
      const ticked = await engine.getSchedule('every-minute');
      assert.equal(ticked.lastTickMs, first);
      assert.equal(ticked.nextTickMs, first + 60_000);
      assert.equal(ticked.ticksEnqueued, 1);
      // The run history has the tick, with its job.
      const [run] = await engine.scheduleRuns('every-minute');
      assert.deepEqual([run?.outcome, run?.tickMs, run?.jobId], ['enqueued', first, ticked.lastJobId]);
      const job = await engine.getJob(ticked.lastJobId!);
      assert.equal(job.idempotencyKey, `schedule:every-minute:${new Date(first).toISOString()}`);
      // A restart at the same moment: the cursor is past the tick, nothing is enqueued twice.
      const again = await h.engine({ clock });
      await again.engine.runMaintenance();
      assert.equal((await again.engine.getSchedule('every-minute')).ticksEnqueued, 1);
      assert.equal((await again.engine.scheduleRuns('every-minute')).length, 1);
      assert.equal((await again.engine.listQueues()).find((q) => q.name === 'q')?.counts.ready, 1);
      assert.deepEqual(
        (await again.engine.listSchedules()).map((s) => s.name),
        ['every-minute'],
      );
    },
  },
];
