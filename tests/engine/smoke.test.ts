import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytes, openTestEngine } from '../helpers/engine.ts';

test('enqueue, reserve, ack', async () => {
  const t = await openTestEngine();
  try {
    const { jobId, deduplicated } = await t.engine.enqueue({
      queue: 'emails',
      type: 'welcome',
      payload: bytes('hi'),
    });
    assert.equal(deduplicated, false);
    const [job] = await t.engine.reserve({ queues: ['emails'] });
    assert.ok(job);
    assert.equal(job.id, jobId);
    assert.equal(job.attempt, 1);
    await t.engine.ack({ jobId, attempt: 1 });
    assert.deepEqual(await t.engine.counterMismatches(), []);
    assert.equal((await t.engine.listQueues())[0]?.counts.leased, 0);
  } finally {
    t.dispose();
  }
});
