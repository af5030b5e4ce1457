/**
 * A Worker whose server was killed under it says, for each job, that settling it failed: an ack
 * whose retries ran out with the lease, and one still unanswered when `close` gave up waiting —
 * as the Python Worker logs "settling job X failed" (_runner.py). A real server, shut down
 * mid-attempt; the leases are short so that the retries end soon. And a job whose handler never
 * returned is named when `close` abandons it, as the Python Worker's "abandoning job X".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppClient, type WorkerLogger } from '../../clients/typescript/src/index.ts';
import { startTestServer } from '../helpers/server.ts';
import { deferred, until } from './helpers.ts';

/** Every line the worker logs at level `error`. */
function errorLines(): { logger: WorkerLogger; errors: string[] } {
  const errors: string[] = [];
  return { errors, logger: { info: () => {}, warn: () => {}, error: (line: string) => errors.push(line) } };
}

/** A worker leasing one job of `queue` for `leaseMs`, and the server killed while its handler runs. */
async function killedUnder(leaseMs: number) {
  const t = await startTestServer();
  const client = SeppClient.connect(t.address);
  const { id } = await client.enqueue('settle', 't');
  const started = deferred();
  const handlerDone = deferred();
  const { logger, errors } = errorLines();
  const worker = client.worker({
    queues: ['settle'],
    leaseMs,
    logger,
    reconnect: { baseDelayMs: 5, maxDelayMs: 20 },
    handlers: {
      t: async () => {
        started.resolve();
        await handlerDone.promise;
      },
    },
  });
  await started.promise;
  await t.dispose();
  handlerDone.resolve();
  return { id, worker, errors, client };
}

test("an ack whose retries ran out with the lease: 'settling job X failed', named", async () => {
  const { id, worker, errors, client } = await killedUnder(400);
  try {
    await until(() => errors.some((line) => line.includes('settling job')), 'the failed settlement told');
    const told = errors.filter((line) => line.includes(`settling job ${id} failed: `));
    assert.equal(told.length, 1, errors.join('\n'));
    assert.match(told[0]!, /; it runs again once its lease ends$/);
  } finally {
    await worker.close({ timeoutMs: 0 });
    await client.close();
  }
});

test("an ack unanswered when close gave up: 'settling job X failed', once", async () => {
  const { id, worker, errors, client } = await killedUnder(60_000);
  try {
    await worker.close({ timeoutMs: 10 });
    const told = errors.filter((line) => line.includes(`settling job ${id} failed: `));
    assert.equal(told.length, 1, errors.join('\n'));
    assert.match(told[0]!, /the worker closed before its ack or nack was answered/);
  } finally {
    await client.close();
  }
});

test('a handler that never returns: close names the job it abandons, once', async () => {
  const t = await startTestServer();
  const client = SeppClient.connect(t.address);
  const warnings: string[] = [];
  const started = deferred();
  try {
    const { id } = await client.enqueue('abandon', 't');
    const worker = client.worker({
      queues: ['abandon'],
      logger: { info: () => {}, warn: (line: string) => warnings.push(line), error: () => {} },
      handlers: {
        // Deaf to its signal: close waits its timeout and the grace after the abort, then gives up.
        t: () => {
          started.resolve();
          return new Promise<void>(() => {});
        },
      },
    });
    await started.promise;
    await worker.close({ timeoutMs: 10 });
    const told = warnings.filter((line) => line.includes(`abandoning job ${id} `));
    assert.equal(told.length, 1, warnings.join('\n'));
    assert.match(told[0]!, /its handler did not return\); its lease expires and it runs again$/);
  } finally {
    await client.close();
    await t.dispose();
  }
});
