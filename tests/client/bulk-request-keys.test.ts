/**
 * Request keys of bulk calls through the TypeScript SDK against a real server, behind a proxy
 * that loses the first answer: the SDK's retry (same key) answers with the operation the first
 * call started — one operation, one audit entry — for a background start, a purge and `all` of
 * the dead letters. A key of the caller's own repeats safely too; with another request it is
 * refused (invalid_argument), and a key outside the bounds is refused at the door.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { AnswerCutProxy } from '../helpers/answer-cut-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('bulk request keys over gRPC', () => {
  let server: TestServer;
  let proxy: AnswerCutProxy;
  let client: SeppClient;

  before(async () => {
    server = await startTestServer();
    proxy = new AnswerCutProxy(server.server.grpcPort);
    client = SeppClient.connect(await proxy.listen(), {
      retry: { unavailable: true, maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 },
    });
  });
  after(async () => {
    await client.close();
    await proxy.close();
    await server.dispose();
  });

  const engine = () => server.server.engine;
  const operationsOf = (queue: string) =>
    engine()
      .listBulkOperations()
      .filter((op) => op.details.queue === queue);
  const auditOf = async (queue: string) =>
    (await engine().listAudit({ target: `queue:${queue}` })).items.filter((e) => e.details.operationId);
  /** Loses the answer of the next call that starts an operation on `queue`. */
  const loseNextAnswer = (queue: string) => {
    const before = operationsOf(queue).length;
    proxy.cutNextAnswer(() => operationsOf(queue).length > before);
  };
  const enqueue = (queue: string, n: number) =>
    client.enqueueBatch(Array.from({ length: n }, () => ({ queue, type: 't', payload: '{}' })));

  test('a background start whose answer was lost: the retry answers with the same operation', async () => {
    await enqueue('keys-a', 30);
    const cutsBefore = proxy.cuts;
    loseNextAnswer('keys-a');
    const started = await client.jobs.startBulk('delete', { queue: 'keys-a' });
    assert.equal(proxy.cuts, cutsBefore + 1, 'the first answer was lost');
    const ops = operationsOf('keys-a');
    assert.deepEqual(
      ops.map((op) => op.id),
      [started.id],
    );
    let op = await client.jobs.bulkOperation(started.id);
    for (let i = 0; i < 1000 && op.state === 'running'; i++) op = await client.jobs.bulkOperation(started.id);
    assert.deepEqual([op.state, op.changed], ['done', 30]);
    assert.equal((await auditOf('keys-a')).length, 1);
  });

  test('a purge and all of the dead letters, answers lost: one operation and one audit entry each', async () => {
    await enqueue('keys-b', 5);
    loseNextAnswer('keys-b');
    assert.equal(await client.queues.purge('keys-b'), 5);
    assert.equal(operationsOf('keys-b').length, 1);

    await enqueue('keys-c', 4);
    const leased = await client.reserve({ queues: ['keys-c'], maxJobs: 4 });
    for (const job of leased) await client.nack(job, { error: 'boom', deadLetter: true });
    loseNextAnswer('keys-c');
    const requeued = await client.dlq.requeue('keys-c', 'all', { background: true });
    assert.equal(operationsOf('keys-c').length, 1);
    assert.equal(requeued.operation?.id, operationsOf('keys-c')[0]?.id);
    assert.equal((await auditOf('keys-b')).length, 1);
    assert.equal((await auditOf('keys-c')).length, 1);
  });

  test("the caller's key: a repeat answers with its operation; another request under it is refused", async () => {
    await enqueue('keys-d', 3);
    const first = await client.jobs.cancelMatching({ queue: 'keys-d' }, { requestKey: 'nightly-2026-12-07' });
    const again = await client.jobs.cancelMatching({ queue: 'keys-d' }, { requestKey: 'nightly-2026-12-07' });
    assert.equal(first.cancelled, 3);
    assert.equal(again.operation?.id, first.operation?.id);
    assert.equal(again.cancelled, 3, 'the answer is the first operation’s, as it ended');
    await assert.rejects(
      client.jobs.cancelMatching({ queue: 'keys-d', type: 'other' }, { requestKey: 'nightly-2026-12-07' }),
      (e: unknown) =>
        e instanceof SeppError && e.code === 'invalid_argument' && /another request/.test(e.message),
    );
    await assert.rejects(
      client.jobs.startBulk('delete', { queue: 'keys-d' }, {}, { requestKey: 'no spaces here' }),
      (e: unknown) =>
        e instanceof SeppError && e.code === 'invalid_argument' && /request_key/.test(e.message),
    );
    assert.equal(operationsOf('keys-d').length, 1);
    // Waited for (no background), all of the dead letters: the repeat answers the first one's count.
    await enqueue('keys-e', 2);
    const leased = await client.reserve({ queues: ['keys-e'], maxJobs: 2 });
    for (const job of leased) await client.nack(job, { error: 'boom', deadLetter: true });
    assert.equal(await client.dlq.delete('keys-e', 'all', { requestKey: 'dlq-e' }), 2);
    assert.equal(await client.dlq.delete('keys-e', 'all', { requestKey: 'dlq-e' }), 2);
    assert.equal(operationsOf('keys-e').length, 1);
    assert.equal((await auditOf('keys-e')).length, 1);
  });
});
