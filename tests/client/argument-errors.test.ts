/**
 * A number the protocol cannot carry, given to the TypeScript SDK (1.5 or NaN where an
 * integer goes, Infinity, a negative page size, past int32 or 2^53, a string from
 * JavaScript), answers `invalid_argument` naming the option or the call: never
 * `internal`, never an uncaught throw (grpc-js throws on a deadline it cannot encode),
 * and on the Produce and Work streams it fails that call only (REFERENCE.md, "Errors").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RetryAfter, SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { deferred } from './helpers.ts';

/** The error a call ended with; fails the test when it threw synchronously or resolved. */
async function refusal(call: () => Promise<unknown>): Promise<SeppError> {
  const promise = call();
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SeppError, String(error));
    return error;
  }
  assert.fail('the call should have been refused');
}

/** The classes of bad value, as a JavaScript caller may pass them. */
const notIntegers: unknown[] = [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '3', 'x'];
const notMs: unknown[] = [Number.NaN, Number.NEGATIVE_INFINITY, 2 ** 60, '3'];

describe('arguments the protocol cannot carry', () => {
  const served = serverAndClient();
  let unary: SeppClient;
  before(() => {
    unary = SeppClient.connect(served.server.address, { transport: 'unary' });
  });
  after(() => unary.close());

  test('integer options: invalid_argument naming the option, over both transports', async () => {
    for (const value of notIntegers) {
      const v = value as number;
      for (const client of [served.client, unary]) {
        const e = await refusal(() => client.enqueue('args', 't', 'x', { priority: v }));
        assert.equal(e.code, 'invalid_argument');
        assert.match(e.message, /^priority: .* is not an integer from 0 to 9$/);
        const batch = await refusal(() =>
          client.enqueueBatch([{ queue: 'args', type: 't', maxAttempts: v }]),
        );
        assert.match(batch.message, /^maxAttempts: /);
      }
      const checks: [string, () => Promise<unknown>][] = [
        ['pageSize', () => unary.listWorkersPage({ pageSize: v })],
        ['pageSize', () => unary.queues.listPage({ pageSize: v })],
        ['pageSize', () => unary.listDeadLetters('args', { pageSize: v })],
        ['maxJobs', () => unary.reserve({ queues: ['args-none'], maxJobs: v })],
        ['priority', () => unary.jobs.update('01a24eeb-8823-7000-a88b-5cf447b776db', { priority: v })],
      ];
      for (const [name, call] of checks) {
        const e = await refusal(call);
        assert.equal(e.code, 'invalid_argument', `${name} ${String(value)}: ${e.message}`);
        assert.ok(e.message.startsWith(`${name}: `), e.message);
      }
    }
    const negative = await refusal(() => unary.listWorkersPage({ pageSize: -1 }));
    assert.match(negative.message, /^pageSize: -1 is not an integer from 1/);
  });

  test('an option without its own check: the call is named, the encoder says why', async () => {
    const { id } = await unary.enqueue('args', 't', 'x');
    const e = await refusal(() => unary.getFlow(id, { limit: 1.5 }));
    assert.equal(e.code, 'invalid_argument');
    assert.match(
      e.message,
      /^GetFlow: the request holds a value the protocol cannot carry \(invalid int32: 1\.5\)/,
    );
  });

  test('ms options and deadlines: invalid_argument, never an uncaught throw', async () => {
    for (const value of notMs) {
      const v = value as number;
      const checks: [string, () => Promise<unknown>][] = [
        ['delayMs', () => served.client.enqueue('args', 't', 'x', { delayMs: v })],
        ['executionTimeoutMs', () => unary.enqueue('args', 't', 'x', { executionTimeoutMs: v })],
        ['leaseMs', () => unary.reserve({ queues: ['args-none'], leaseMs: v })],
        ['waitMs', () => unary.reserve({ queues: ['args-none'], waitMs: v })],
        ['leaseMs', () => unary.extend({ id: '01a24eeb-8823-7000-a88b-5cf447b776db', attempt: 1 }, v)],
        ['deadlineMs', () => unary.getServerInfo({ deadlineMs: v })],
        ['deadlineMs', () => served.client.enqueue('args', 't', 'x', { deadlineMs: v })],
        ['timeoutMs', () => unary.waitFor('01a24eeb-8823-7000-a88b-5cf447b776db', { timeoutMs: v })],
        ['timeoutMs', () => unary.ready(v)],
      ];
      for (const [name, call] of checks) {
        const e = await refusal(call);
        assert.equal(e.code, 'invalid_argument', `${name} ${String(value)}: ${e.message}`);
        assert.ok(e.message.startsWith(`${name}: `), e.message);
      }
    }
    assert.throws(() => SeppClient.connect(served.server.address, { defaultDeadlineMs: 2 ** 60 }), /a year/);
  });

  test('Produce stream: a bad job fails its own enqueue; the others of the same turn are stored', async () => {
    const before = (await served.client.queues.list()).find((q) => q.name === 'args-turn')?.counts.ready ?? 0;
    const calls = [
      served.client.enqueue('args-turn', 't', 'a'),
      served.client.enqueue('args-turn', 't', 'b', { priority: 1.5 }),
      served.client.enqueue('args-turn', 't', 'c'),
      served.client.enqueue('args-turn', 't', 'd', { delayMs: Number.NaN }),
      served.client.enqueue('args-turn', 't', 'e', { onDependencyFailure: 'never' as 'run' }),
      served.client.enqueue('args-turn', 't', 'f'),
    ];
    const settled = await Promise.allSettled(calls);
    assert.deepEqual(
      settled.map((s) => (s.status === 'fulfilled' ? 'ok' : (s.reason as SeppError).code)),
      ['ok', 'invalid_argument', 'ok', 'invalid_argument', 'invalid_argument', 'ok'],
    );
    const after = (await served.client.queues.list()).find((q) => q.name === 'args-turn')?.counts.ready;
    assert.equal(after, before + 3);
    assert.ok(served.client.stats().produceMessages > 0, 'the jobs went over the Produce stream');
  });

  test('Work stream: a RetryAfter the protocol cannot carry retries with the backoff; other jobs complete', async () => {
    await served.client.enqueue('args-work', 'bad', 'x', { maxAttempts: 2 });
    await served.client.enqueue('args-work', 'good', 'y');
    const failed = deferred<string>();
    const completed = deferred<string>();
    const worker = served.client.worker({
      queues: ['args-work'],
      concurrency: 2,
      logger: { info() {}, warn() {}, error() {} },
      handlers: {
        bad: async () => {
          throw new RetryAfter(Number.NaN);
        },
        good: async () => 'done',
      },
    });
    worker.on('failed', (_job, _error, result) => failed.resolve(result.state));
    worker.on('completed', (job) => completed.resolve(job.type));
    worker.on('error', (error) => failed.reject(error));
    try {
      assert.equal(await completed.promise, 'good');
      assert.match(await failed.promise, /^(ready|scheduled)$/);
    } finally {
      await worker.close();
    }
  });
});
