/** The admin API's job detail shows a running attempt's hard timeout (issue 35) on its timeline. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobDetail } from '../../src/admin/job-view.ts';
import { job, withEngine } from '../helpers/engine.ts';

test("job detail: a leased job's timeout and the time its attempt must end, on the timeline", async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { timeoutMs: 5000 }));
    const waiting = jobDetail(await engine.getJob(jobId));
    assert.equal(waiting.timeoutMs, 5000);
    assert.equal(waiting.timeoutAtMs, null);
    assert.ok(!waiting.timeline.some((e) => e.event === 'timeout'), 'no attempt runs yet');
    await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
    const running = jobDetail(await engine.getJob(jobId));
    assert.equal(running.timeoutAtMs, clock.nowMs() + 5000);
    const timeout = running.timeline.find((e) => e.event === 'timeout');
    assert.deepEqual(timeout, {
      atMs: clock.nowMs() + 5000,
      event: 'timeout',
      detail: 'the attempt ends failed (reason timeout), extended or not',
    });
    await engine.ack({ jobId, attempt: 1 });
  });
});
