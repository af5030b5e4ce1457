/**
 * A settlement on the Work stream whose answer never comes fails with
 * DEADLINE_EXCEEDED once the client's `defaultDeadlineMs` passed since it was
 * made, like a unary call's deadline. Node's mock timers drive the deadline;
 * the server's engine holds the acks back.
 */
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer } from '../helpers/server.ts';
import { deferred, until } from './helpers.ts';

test('settlements not answered fail with DEADLINE_EXCEEDED at their own deadline, not before', async () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 1));
  const t = await startTestServer({ clock });
  const client = SeppClient.connect(t.address, { transport: 'stream', defaultDeadlineMs: 10_000 });
  const queue = 'deadline';
  await client.enqueueJson(queue, 'early', {});
  await client.enqueueJson(queue, 'late', {});
  const answer = deferred();
  let acks = 0;
  const engineAck = t.server.engine.ack.bind(t.server.engine);
  t.server.engine.ack = async (settlement) => {
    acks++;
    await answer.promise;
    return engineAck(settlement);
  };
  const lateGate = deferred();
  const errors: SeppError[] = [];
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  try {
    const worker = client.worker({
      queues: [queue],
      concurrency: 2,
      streams: 1, // Both on one stream: the second deadline is timed after the first.
      clock,
      handlers: { early: () => {}, late: () => lateGate.promise },
    });
    worker.on('error', (error) => errors.push(error));
    await until(() => acks === 1, 'the first ack to reach the engine');
    mock.timers.tick(5000);
    lateGate.resolve(); // The second ack is made 5 s after the first.
    await until(() => acks === 2, 'the second ack to reach the engine');

    // Each settlement fails exactly 10 s after it was made: at 10 s and at 15 s.
    for (const [n, waitMs] of [
      [1, 5000],
      [2, 5000],
    ] as const) {
      mock.timers.tick(waitMs - 1);
      // The mocked timers run the deadline sweep inside tick(), and a settlement it fails reaches
      // the 'error' event through promise reactions only (no I/O, no timer): one turn of the
      // event loop runs them all, so an early deadline would have been reported by now.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(errors.length, n - 1, `settlement ${n} does not fail before its deadline`);
      mock.timers.tick(1);
      await until(() => errors.length === n, `deadline ${n}`);
      assert.equal(errors[n - 1]?.grpcCode, status.DEADLINE_EXCEEDED);
      assert.match(
        errors[n - 1]?.message ?? '',
        /no answer from sepp on the Work stream before the deadline/,
      );
    }
    mock.timers.reset();
    answer.resolve();
    await worker.close({ timeoutMs: 0 });
  } finally {
    mock.timers.reset();
    answer.resolve();
    await client.close();
    await t.dispose();
  }
});
