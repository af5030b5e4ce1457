/**
 * Bulk operations through the TypeScript SDK against a real server: act on
 * everything a filter matches in every queue (RequeueJobs, DeleteJobs), the
 * count before a confirmation, an operation in the background followed to its
 * end (GetBulkOperation, ListBulkOperations), dead letters by error text, and
 * the refusals (no queue without all_queues, unknown operation ids).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SeppError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

describe('bulk operations over gRPC', () => {
  const served = serverAndClient();

  /** `n` jobs of `queue` leased and nacked to the dead letters with `error`. */
  async function deadLetters(queue: string, n: number, error: string): Promise<void> {
    await served.client.enqueueBatch(
      Array.from({ length: n }, () => ({ queue, type: 'mail', payload: '{}' })),
    );
    const leased = await served.client.reserve({ queues: [queue], maxJobs: n });
    for (const job of leased) await served.client.nack(job, { error, deadLetter: true });
  }

  test('requeue every dead letter whose error matches, in every queue: counted first, one operation', async () => {
    await deadLetters('bulk-a', 3, 'SMTP timeout');
    await deadLetters('bulk-b', 2, 'smtp timeout');
    await deadLetters('bulk-b', 4, 'mailbox full');
    const filter = { allQueues: true, errorText: 'smtp timeout' };
    const counted = await served.client.jobs.countMatching('requeue', filter);
    assert.deepEqual(counted, { matched: 5, matchedAtLeast: false });
    const done = await served.client.jobs.requeueMatching(filter);
    assert.equal(done.changed, 5);
    assert.equal(done.operation?.state, 'done');
    assert.equal(done.operation?.details.errorText, 'smtp timeout');
    const queues = Object.fromEntries((await served.client.listQueues()).map((q) => [q.name, q.counts]));
    assert.deepEqual([queues['bulk-a']?.ready, queues['bulk-b']?.ready, queues['bulk-b']?.dead], [3, 2, 4]);
    // Dead letters by error text too.
    assert.equal(await served.client.dlq.delete('bulk-b', 'all', { errorText: 'MAILBOX' }), 4);
  });

  test('a delete in the background is followed to its end by its id', async () => {
    await served.client.enqueueBatch(
      Array.from({ length: 2500 }, () => ({ queue: 'bulk-c', type: 'x', payload: '{}' })),
    );
    const started = await served.client.jobs.startBulk('delete', { queue: 'bulk-c' });
    assert.equal(started.action, 'delete');
    assert.equal(started.matched, 2500);
    let op = started;
    for (let i = 0; i < 1000 && op.state === 'running'; i++)
      op = await served.client.jobs.bulkOperation(started.id);
    assert.equal(op.state, 'done');
    assert.equal(op.changed, 2500);
    assert.ok(op.slices >= 3, `${op.slices} slices`);
    assert.ok(op.finishedAt instanceof Date);
    assert.ok((await served.client.jobs.bulkOperations()).some((o) => o.id === started.id));
    assert.equal((await served.client.listQueues()).find((q) => q.name === 'bulk-c')?.counts.ready, 0);
  });

  test('refusals: no queue without allQueues, both, unknown operation ids', async () => {
    const code = async (p: Promise<unknown>) => {
      const error = await p.then(
        () => assert.fail('should be refused'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof SeppError);
      return error.code;
    };
    assert.equal(await code(served.client.jobs.deleteMatching({})), 'invalid_argument');
    assert.equal(
      await code(served.client.jobs.deleteMatching({ queue: 'bulk-a', allQueues: true })),
      'invalid_argument',
    );
    assert.equal(await code(served.client.jobs.bulkOperation('no-such-operation')), 'not_found');
    assert.equal(await code(served.client.jobs.stopBulkOperation('no-such-operation')), 'not_found');
  });
});
