/**
 * SeppClient's calls grouped by what they act on (`client.jobs`, `client.queues`,
 * `client.dlq`, `client.audit`, as `client.schedules`), and the flat methods of
 * earlier versions, which stay as their aliases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('SeppClient: calls grouped by what they act on', () => {
  let t: TestServer;
  let client: SeppClient;
  before(async () => {
    t = await startTestServer();
    client = SeppClient.connect(t.address);
  });
  after(async () => {
    await client.close();
    await t.dispose();
  });

  test('jobs, queues, dlq and audit, each the same call as its flat alias', async () => {
    const queue = 'grouped';
    const { id } = await client.enqueue(queue, 't');
    assert.equal((await client.jobs.get(id)).id, (await client.getJob(id)).id);
    await client.queues.pause(queue);
    assert.deepEqual(
      (await client.queues.list()).filter((q) => q.name === queue).map((q) => q.paused),
      [true],
    );
    await client.resumeQueue(queue);
    assert.deepEqual(
      (await client.listQueues()).filter((q) => q.name === queue).map((q) => q.paused),
      [false],
    );
    assert.equal((await client.jobs.cancelMatching({ queue }, { dryRun: true })).matched, 1);
    assert.equal((await client.jobs.cancel(id)).state, 'cancelled');
    assert.deepEqual((await client.dlq.list(queue)).jobs, []);
    const all = [];
    for await (const job of client.dlq.all(queue)) all.push(job);
    for await (const job of client.deadLetters(queue)) all.push(job);
    assert.deepEqual(all, []);
    const entries = [];
    for await (const entry of client.audit.entries({ target: `job:${id}` })) entries.push(entry.action);
    assert.deepEqual(entries, ['job.cancel']);
    assert.equal(
      (await client.listAuditEntries({ target: `queue:${queue}` })).entries[0]?.action,
      'queue.resume',
    );
    assert.equal(await client.queues.purge(queue), 0);
  });
});
