/**
 * Single enqueues of one event-loop turn go to the engine as one batch, and
 * each caller still gets exactly what its own `enqueue` would have: its job,
 * a duplicate recognised, its own rejection; a failure of the whole batch
 * fails each; batches stay within limits.max_batch_jobs. Then over HTTP:
 * concurrent requests, one of them a duplicate of another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppError } from '../../src/engine/errors.ts';
import type { EnqueueRequest, EnqueueResult } from '../../src/engine/types.ts';
import { EnqueueCoalescer } from '../../src/http/enqueue-coalescer.ts';
import { apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const job = (type: string): EnqueueRequest => ({ queue: 'q', type, payload: new Uint8Array() });

describe('EnqueueCoalescer', () => {
  test('one turn is one batch; each caller gets its own result or rejection', async () => {
    const calls: string[][] = [];
    const coalescer = new EnqueueCoalescer(
      async (requests) => {
        calls.push(requests.map((r) => r.type));
        return requests.map(
          (r, i): EnqueueResult =>
            r.type === 'bad'
              ? { ok: false, reason: 'invalid_name', message: 'type is bad' }
              : { ok: true, jobId: `id-${i}`, deduplicated: false },
        );
      },
      () => 3,
    );
    const answers = await Promise.allSettled(
      ['a', 'bad', 'c', 'd'].map((type) => coalescer.enqueue(job(type))),
    );
    assert.deepEqual(calls, [['a', 'bad', 'c'], ['d']], 'one turn, split at max_batch_jobs');
    assert.deepEqual(answers[0], {
      status: 'fulfilled',
      value: { ok: true, jobId: 'id-0', deduplicated: false },
    });
    assert.equal(answers[1]?.status, 'rejected');
    const rejected = (answers[1] as PromiseRejectedResult).reason as SeppError;
    assert.equal(rejected.code, 'invalid_argument');
    assert.equal(rejected.rejection?.reason, 'invalid_name');
    assert.equal((answers[3] as PromiseFulfilledResult<{ jobId: string }>).value.jobId, 'id-0');
    await coalescer.enqueue(job('later'));
    assert.deepEqual(calls.at(-1), ['later'], 'a later turn is a batch of its own');
  });

  test('a failure of the whole batch fails every caller of that turn with it', async () => {
    const coalescer = new EnqueueCoalescer(
      async () => {
        throw new SeppError('unavailable', 'storage unavailable');
      },
      () => 1000,
    );
    const answers = await Promise.allSettled([coalescer.enqueue(job('a')), coalescer.enqueue(job('b'))]);
    for (const answer of answers) {
      assert.equal(answer.status, 'rejected');
      assert.equal(((answer as PromiseRejectedResult).reason as SeppError).code, 'unavailable');
    }
  });
});

describe('coalesced enqueues over HTTP', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ http: true });
  });
  after(() => t.dispose());

  test('concurrent requests each get their job; a duplicate key in the same turn is recognised', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        apiCall<{ jobId: string; deduplicated: boolean }>(t.httpUrl, '/v1/jobs', {
          body: { queue: 'co', type: 't', payload: { i }, ...(i < 2 ? { idempotencyKey: 'same' } : {}) },
        }),
      ),
    );
    assert.ok(answers.every((a) => a.status === 200));
    const [first, second] = answers;
    assert.equal(first?.json.jobId, second?.json.jobId, 'the second of one key is the first job');
    assert.deepEqual([first?.json.deduplicated, second?.json.deduplicated].sort(), [false, true]);
    assert.equal(new Set(answers.map((a) => a.json.jobId)).size, 39);
    assert.equal((await t.server.engine.listQueues()).find((q) => q.name === 'co')?.counts.ready, 39);
  });
});
