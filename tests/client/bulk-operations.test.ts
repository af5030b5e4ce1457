/**
 * Bulk operations through the TypeScript SDK against a real server: act on
 * everything a filter matches in every queue (RequeueJobs, DeleteJobs), the
 * count before a confirmation, an operation in the background followed to its
 * end (GetBulkOperation, ListBulkOperations), dead letters by error text,
 * `background` on the dead-letter calls, a purge and the flat aliases
 * (`cancelJobs`, `requeueDeadLetters`, `deleteDeadLetters`, `purgeQueue`), a
 * count of a priority change, `dryRun` and `background` on `updateMatching` and
 * `updateJobs` (whose changes are `BulkChanges`), and the refusals (no queue without all_queues,
 * unknown operation ids). Beside them, the admin read of the workers' page
 * with the reserves waiting.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type BulkOperation, type BulkResult, SeppError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

describe('bulk operations over gRPC', () => {
  const served = serverAndClient();

  /** A bulk operation followed to its end by its id. */
  async function ended(id: string): Promise<BulkOperation> {
    let op = await served.client.jobs.bulkOperation(id);
    for (let i = 0; i < 1000 && op.state === 'running'; i++) op = await served.client.jobs.bulkOperation(id);
    return op;
  }

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

  test('background on dead letters and a purge: answered as the operation began, followed by its id', async () => {
    const { client } = served;
    await deadLetters('bg-dlq', 3, 'boom');
    const requeued = await client.dlq.requeue('bg-dlq', 'all', { background: true });
    const begun = requeued.operation;
    assert.deepEqual(
      [requeued.changed, requeued.matched, begun?.action, begun?.state, begun?.changed],
      [0, 3, 'requeue', 'running', 0],
      'answered before any slice ran',
    );
    assert.deepEqual(
      [(await ended(begun?.id ?? '')).state, (await ended(begun?.id ?? '')).changed],
      ['done', 3],
    );

    await deadLetters('bg-dlq-2', 3, 'boom');
    const [first] = (await client.dlq.list('bg-dlq-2')).jobs;
    const byId = await client.dlq.delete('bg-dlq-2', [first?.id ?? ''], { background: true });
    assert.deepEqual([byId.changed, byId.operation], [1, null], 'chosen ids change at once');
    const deleted = await client.dlq.delete('bg-dlq-2', 'all', { errorText: 'BOOM', background: true });
    assert.deepEqual(
      [deleted.matched, deleted.operation?.action, deleted.operation?.state],
      [2, 'delete', 'running'],
    );
    assert.equal((await ended(deleted.operation?.id ?? '')).changed, 2);
    await client.enqueueBatch([
      { queue: 'bg-purge', type: 't' },
      { queue: 'bg-purge', type: 't', delayMs: 3_600_000 },
    ]);
    const purge = await client.queues.purge('bg-purge', { background: true });
    assert.deepEqual([purge.changed, purge.matched, purge.operation?.state], [0, 2, 'running']);
    assert.equal((await ended(purge.operation?.id ?? '')).changed, 2);
    const counts = Object.fromEntries((await client.listQueues()).map((q) => [q.name, q.counts]));
    assert.deepEqual(
      [
        counts['bg-dlq']?.ready,
        counts['bg-dlq-2']?.dead,
        counts['bg-purge']?.ready,
        counts['bg-purge']?.scheduled,
      ],
      [3, 0, 0, 0],
    );
  });

  test('the flat dead-letter and purge aliases take reason, errorText and background', async () => {
    const { client } = served;
    await deadLetters('alias-dlq', 3, 'SMTP timeout');
    await deadLetters('alias-dlq', 2, 'connection refused');
    // The annotations check the overloads: a count without background, a BulkResult with it.
    const other: number = await client.requeueDeadLetters('alias-dlq', 'all', {
      reason: 'attempts_exhausted',
    });
    assert.equal(other, 0, 'nacked to the dead letters: dead_lettered, not attempts_exhausted');
    const timeouts: number = await client.requeueDeadLetters('alias-dlq', 'all', {
      reason: 'dead_lettered',
      errorText: 'TIMEOUT',
    });
    assert.equal(timeouts, 3);
    const begun: BulkResult = await client.deleteDeadLetters('alias-dlq', 'all', {
      errorText: 'refused',
      background: true,
    });
    assert.deepEqual(
      [begun.matched, begun.operation?.action, begun.operation?.state],
      [2, 'delete', 'running'],
    );
    assert.equal((await ended(begun.operation?.id ?? '')).changed, 2);
    await client.enqueue('alias-dlq', 't', undefined, { delayMs: 3_600_000 });
    const purge: BulkResult = await client.purgeQueue('alias-dlq', { background: true });
    assert.deepEqual([purge.matched, purge.operation?.state], [4, 'running'], '3 requeued, 1 scheduled');
    assert.equal((await ended(purge.operation?.id ?? '')).changed, 4);
    await client.enqueue('alias-dlq', 't');
    const purged: number = await client.purgeQueue('alias-dlq');
    assert.equal(purged, 1);
  });

  test('countMatching counts a priority change; the flat cancelJobs takes background', async () => {
    const { client } = served;
    await client.enqueueBatch([
      { queue: 'bg-count', type: 't' },
      { queue: 'bg-count', type: 't' },
      { queue: 'bg-count', type: 't', delayMs: 3_600_000 },
    ]);
    const filter = { queue: 'bg-count' };
    assert.equal(
      (await client.jobs.countMatching('update', filter)).matched,
      1,
      'run now: the scheduled job',
    );
    assert.equal((await client.jobs.countMatching('update', filter, { priority: 9 })).matched, 3);
    const notAnUpdate = (e: unknown) =>
      e instanceof SeppError && e.code === 'invalid_argument' && /changes of an update/.test(e.message);
    await assert.rejects(client.jobs.countMatching('cancel', filter, { priority: 9 }), notAnUpdate);
    // startBulk refuses them too (as Python's start_bulk does) rather than cancel without them.
    const operationsBefore = (await client.jobs.bulkOperations()).length;
    await assert.rejects(client.jobs.startBulk('cancel', filter, { priority: 9 }), notAnUpdate);
    await assert.rejects(client.jobs.startBulk('delete', filter, { runNow: true }), notAnUpdate);
    assert.equal((await client.jobs.bulkOperations()).length, operationsBefore, 'nothing started');
    const started = await client.cancelJobs(filter, { background: true });
    assert.deepEqual(
      [started.cancelled, started.changed, started.matched, started.operation?.state],
      [0, 0, 3, 'running'],
    );
    assert.equal((await ended(started.operation?.id ?? '')).changed, 3);
  });

  test('updateMatching and the flat updateJobs take dryRun and background; without them, a count', async () => {
    const { client } = served;
    const enqueued = await client.enqueueBatch([
      { queue: 'bg-update', type: 't' },
      { queue: 'bg-update', type: 't', delayMs: 3_600_000 },
      { queue: 'bg-update', type: 't', delayMs: 3_600_000 },
    ]);
    const filter = { queue: 'bg-update' };
    // The annotations check the overloads: a BulkResult with dryRun or background, a count without.
    const dry: BulkResult = await client.jobs.updateMatching(filter, { runNow: true }, { dryRun: true });
    assert.deepEqual(dry, { changed: 0, matched: 2, matchedAtLeast: false, operation: null });
    const flatDry: BulkResult = await client.updateJobs(filter, { priority: 9 }, { dryRun: true });
    assert.equal(flatDry.matched, 3, 'a priority: every waiting job');
    const waiting = (await client.listQueues()).find((q) => q.name === 'bg-update')?.counts;
    assert.deepEqual([waiting?.ready, waiting?.scheduled], [1, 2], 'a dry run changes nothing');

    const begun: BulkResult = await client.updateJobs(filter, { priority: 9 }, { background: true });
    assert.deepEqual(
      [begun.changed, begun.matched, begun.operation?.action, begun.operation?.state],
      [0, 3, 'update', 'running'],
      'answered as the operation began',
    );
    assert.equal((await ended(begun.operation?.id ?? '')).changed, 3);
    const priorities = [];
    for (const job of enqueued) priorities.push(job.ok ? (await client.getJob(job.id)).priority : -1);
    assert.deepEqual(priorities, [9, 9, 9]);
    const ranNow: number = await client.jobs.updateMatching(filter, { runNow: true });
    assert.equal(ranNow, 2, 'the scheduled ones');
    // What changes one job at a time is no bulk change to the types (typecheck runs on this file).
    // @ts-expect-error delayMs: one job at a time (jobs.update)
    const delayed = client.jobs.updateMatching(filter, { delayMs: 1_000 }, { dryRun: true });
    await assert.rejects(delayed, (e) => e instanceof SeppError && e.code === 'invalid_argument');
    // @ts-expect-error group: one job at a time
    await assert.rejects(client.jobs.startBulk('update', filter, { group: 'acme' }), SeppError);
  });

  test('listWorkersPage: one page of the workers, with the reserves waiting for jobs', async () => {
    const { client } = served;
    const stop = new AbortController();
    const waiting = client
      .reserve({ queues: ['bg-idle'], waitMs: 30_000, workerId: 'bg-waiter', signal: stop.signal })
      .catch(() => []);
    let page = await client.listWorkersPage();
    for (let i = 0; i < 1000 && page.waitingReserves === 0; i++) page = await client.listWorkersPage();
    assert.equal(page.waitingReserves, 1);
    assert.equal(page.nextPageToken, '');
    stop.abort();
    await waiting;
    for (let i = 0; i < 1000 && page.waitingReserves === 1; i++) page = await client.listWorkersPage();
    assert.equal(page.waitingReserves, 0, 'the long-poll ended');
  });
});
