/**
 * SeppClient's calls grouped by what they act on (`client.jobs`, `client.queues`,
 * `client.dlq`, `client.audit`, as `client.schedules`), and the flat methods of
 * earlier versions, which stay as their aliases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serverAndClient } from '../helpers/sdk-server.ts';

describe('SeppClient: calls grouped by what they act on', () => {
  const served = serverAndClient();

  test('jobs, queues, dlq and audit, each the same call as its flat alias', async () => {
    const queue = 'grouped';
    const { id } = await served.client.enqueue(queue, 't');
    assert.equal((await served.client.jobs.get(id)).id, (await served.client.getJob(id)).id);
    await served.client.queues.pause(queue);
    assert.deepEqual(
      (await served.client.queues.list()).filter((q) => q.name === queue).map((q) => q.paused),
      [true],
    );
    await served.client.resumeQueue(queue);
    assert.deepEqual(
      (await served.client.listQueues()).filter((q) => q.name === queue).map((q) => q.paused),
      [false],
    );
    assert.equal((await served.client.jobs.cancelMatching({ queue }, { dryRun: true })).matched, 1);
    assert.equal((await served.client.jobs.cancel(id)).state, 'cancelled');
    assert.deepEqual((await served.client.dlq.list(queue)).jobs, []);
    const all = [];
    for await (const job of served.client.dlq.all(queue)) all.push(job);
    for await (const job of served.client.deadLetters(queue)) all.push(job);
    assert.deepEqual(all, []);
    const entries = [];
    for await (const entry of served.client.audit.entries({ target: `job:${id}` }))
      entries.push(entry.action);
    assert.deepEqual(entries, ['job.cancel']);
    assert.equal(
      (await served.client.listAuditEntries({ target: `queue:${queue}` })).entries[0]?.action,
      'queue.resume',
    );
    assert.equal(await served.client.queues.purge(queue), 0);
  });
});
