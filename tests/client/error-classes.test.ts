/**
 * Why jobs fail, through the TypeScript SDK (issue 36, item 2): a handler's thrown
 * error reaches the server with its class and stack on both transports; GetJob
 * shows them per attempt; `client.dlq.topErrors` groups the dead letters; a group
 * is requeued and deleted with `requeueMatching` / `deleteMatching` as one act.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeadLetter, SeppClient, type Worker } from '../../clients/typescript/src/index.ts';
import { errorFields } from '../../clients/typescript/src/lease-calls.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from './helpers.ts';

class PaymentDeclined extends Error {}

for (const transport of ['stream', 'unary'] as const) {
  describe(`error class and stack (${transport})`, () => {
    let t: TestServer;
    let client: SeppClient;
    const clock = new FakeClock(Date.UTC(2026, 11, 1));
    const workers: Worker[] = [];

    before(async () => {
      t = await startTestServer({ clock });
      client = SeppClient.connect(t.address, { transport });
    });
    after(async () => {
      await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
      await client.close();
      await t.dispose();
    });

    test('a thrown error’s class and stack are kept per attempt; top errors groups them; a group is requeued', async () => {
      const queue = `errors-${transport}`;
      for (let i = 0; i < 6; i++) {
        await client.enqueueJson(queue, i % 2 === 0 ? 'charge' : 'parse', { i }, { maxAttempts: 1 });
      }
      const worker = client.worker({
        clock,
        queues: [queue],
        concurrency: 2,
        handlers: {
          // DeadLetter's message, with the class and stack of what it wraps (a subclass that
          // leaves `name` as 'Error': its constructor names it).
          charge: async () => {
            throw new DeadLetter('card declined', { cause: new PaymentDeclined('card 4242 said no') });
          },
          // A TypeError from the job's own code, on its last attempt: dead, with its own stack.
          parse: async (job) => {
            const data = (job.json() as { i: number; missing?: { field: string } }).missing;
            return data!.field;
          },
        },
      });
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      workers.push(worker);
      let failed = 0;
      worker.on('failed', () => failed++);
      await until(() => failed === 6, 'six failures');
      await worker.close();

      const top = await client.dlq.topErrors(queue);
      assert.equal(top.deadTotal, 6);
      assert.equal(top.complete, true);
      assert.deepEqual(top.groups.map((g) => [g.errorClass, g.firstLine, g.jobs]).sort(), [
        ['PaymentDeclined', 'card declined', 3],
        ['TypeError', "Cannot read properties of undefined (reading 'field')", 3],
      ]);
      const { jobs } = await client.dlq.list(queue);
      const stacks = new Map<string, string>();
      for (const dead of jobs) {
        const [attempt, ...more] = (await client.getJob(dead.id)).errors;
        assert.equal(more.length, 0);
        stacks.set(attempt!.errorClass!, attempt!.stack!);
      }
      assert.match(stacks.get('TypeError')!, /^TypeError: Cannot read properties of undefined/);
      assert.match(stacks.get('TypeError')!, /error-classes\.test\.ts/, 'the stack of the job’s own code');
      assert.match(
        stacks.get('PaymentDeclined')!,
        /^Error: card 4242 said no\n/,
        'the stack of the wrapped error',
      );

      const declined = top.groups.find((g) => g.errorClass === 'PaymentDeclined')!;
      const requeued = await client.jobs.requeueMatching({
        queue,
        states: ['dead'],
        errorGroup: { errorClass: declined.errorClass, firstLine: declined.firstLine },
      });
      assert.equal(requeued.changed, 3);
      const rest = (await client.dlq.topErrors(queue)).groups;
      assert.deepEqual(
        rest.map((g) => [g.errorClass, g.jobs]),
        [['TypeError', 3]],
      );
      const deleted = await client.jobs.deleteMatching({ queue, states: ['dead'], errorGroup: rest[0]! });
      assert.equal(deleted.changed, 3);
      assert.deepEqual((await client.dlq.topErrors(queue)).groups, []);
    });
  });
}

test('errorFields: the class is the error’s name or its constructor’s, printable and bounded; strings send no class', () => {
  assert.deepEqual(errorFields('plain'), { errorMessage: 'plain', errorClass: '', errorStack: '' });
  assert.deepEqual(errorFields(undefined), { errorMessage: '', errorClass: '', errorStack: '' });
  const typeError = errorFields(new TypeError('bad'));
  assert.equal(typeError.errorClass, 'TypeError');
  assert.match(typeError.errorStack, /^TypeError: bad\n/);
  assert.equal(errorFields(new PaymentDeclined('no')).errorClass, 'PaymentDeclined');
  const odd = new Error('x');
  odd.name = `Bad\nName${'y'.repeat(300)}`;
  const fields = errorFields(odd);
  assert.equal(fields.errorClass.length, 256);
  assert.ok(!fields.errorClass.includes('\n'));
});
