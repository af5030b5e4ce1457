/**
 * Engine rejections never escape a handler (issue 14, item 1). The exact
 * sequences that crashed the server, then every engine call the rpc layer
 * makes, made to fail in every way (a SeppError or anything else, thrown at
 * once or rejected later), through every unary RPC and both streams: each
 * failure comes back as a status, the process sees no unhandled rejection or
 * uncaught exception, and the server goes on serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { SeppError } from '../../src/engine/errors.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import {
  collect,
  creditMessage,
  openProduce,
  openWork,
  streamEnd,
  subscribeMessage,
} from '../helpers/streams.ts';
import { testStoreKind } from '../helpers/test-store.ts';

/** Everything that escaped during this file: each one would have ended a real server. */
const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);
process.on('unhandledRejection', onEscape);
process.on('uncaughtException', onEscape);

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  process.off('unhandledRejection', onEscape);
  process.off('uncaughtException', onEscape);
  await t.dispose();
});

/** Lets queued continuations (the ones that used to reject unhandled) run. */
async function turns(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function assertServing(): Promise<void> {
  const info = await call(t.client, t.client.getServerInfo, {});
  assert.equal(info.version, '0.0.0-test', 'the server still answers');
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
  // Checked last: a round trip and a read of the store (many turns, real I/O) came first, so a
  // continuation that rejects late, as one injected fault does after 20 turns, has had its time.
  await turns();
  assert.deepEqual(escaped, [], 'nothing escaped a handler');
}

const jobs = (queue: string, n: number) => Array.from({ length: n }, () => testJob(queue));

describe('the Produce sequences that crashed the server', () => {
  for (const [name, sizes, codes] of [
    ['[1 job], [1 job], []', [1, 1, 0], [status.OK, status.OK, status.INVALID_ARGUMENT]],
    ['[1000 jobs], [1 job], [1001 jobs]', [1000, 1, 1001], [status.OK, status.OK, status.RESOURCE_EXHAUSTED]],
  ] as const) {
    test(`${name} sent back to back: each answered in order, the stream stays open`, async () => {
      const queue = `seq-${sizes.join('-')}`;
      const s = openProduce(t.client);
      const got = collect(s, (seen) => seen.length === 4);
      sizes.forEach((n, i) => {
        s.write({ sequence: i + 1, jobs: jobs(queue, n), atomic: false });
      });
      // The stream is still open: a fourth message is answered too.
      s.write({ sequence: 4, jobs: jobs(queue, 1), atomic: true });
      const answers = await got;
      assert.deepEqual(
        answers.map((a) => [a.sequence, a.code]),
        [...codes.map((code, i) => [i + 1, code]), [4, status.OK]],
      );
      assert.ok(answers[2]?.message.includes('jobs'), 'the failing message names the field');
      s.end();
      assert.equal((await streamEnd(s)).code, status.OK);
      const stored = (await t.server.engine.listQueues()).find((q) => q.name === queue)?.counts.ready;
      assert.equal(stored, sizes[0] + sizes[1] + 1, 'nothing stored from the rejected message');
      await assertServing();
    });
  }

  test('a rejected atomic message behind slow ones is answered in order too', async () => {
    const s = openProduce(t.client);
    const got = collect(s, (seen) => seen.length === 3);
    s.write({ sequence: 1, jobs: jobs('seq-atomic', 500), atomic: true });
    s.write({ sequence: 2, jobs: jobs('seq-atomic', 1001), atomic: true });
    s.write({ sequence: 3, jobs: [], atomic: true });
    const answers = await got;
    assert.deepEqual(
      answers.map((a) => [a.sequence, a.code]),
      [
        [1, status.OK],
        [2, status.RESOURCE_EXHAUSTED],
        [3, status.INVALID_ARGUMENT],
      ],
    );
    s.end();
    await assertServing();
  });
});

/** The engine methods the rpc layer calls, and ways to make each fail. */
type Fault = { name: string; make: () => unknown; code: number; later?: true };
const faults: Fault[] = [
  {
    name: 'throws a SeppError at once',
    make: () => {
      throw new SeppError('resource_exhausted', 'injected: full');
    },
    code: status.RESOURCE_EXHAUSTED,
  },
  {
    name: 'throws a TypeError at once',
    make: () => {
      throw new TypeError('injected: a bug');
    },
    code: status.INTERNAL,
  },
  {
    name: 'rejects with a SeppError later',
    make: async () => {
      await turns();
      throw new SeppError('unavailable', 'injected: disk gone');
    },
    code: status.UNAVAILABLE,
    later: true,
  },
  {
    name: 'rejects with a string later',
    make: () => new Promise((_, reject) => setImmediate(() => reject('injected: not an Error'))),
    code: status.INTERNAL,
    later: true,
  },
];

type EngineMethod =
  | 'enqueue'
  | 'enqueueBatch'
  | 'enqueueAtomic'
  | 'reserve'
  | 'ack'
  | 'ackBatch'
  | 'nack'
  | 'extend'
  | 'getJob'
  | 'cancel'
  | 'queuePage'
  | 'pauseQueue'
  | 'resumeQueue'
  | 'listDeadLetters'
  | 'requeueDeadLetters'
  | 'deleteDeadLetters'
  | 'backup';

/** Replaces one engine method for the duration of `run`. */
async function withFault(method: EngineMethod, fault: Fault, run: () => Promise<void>): Promise<void> {
  const engine = t.server.engine as unknown as Record<EngineMethod, unknown>;
  const original = engine[method];
  engine[method] = fault.make;
  try {
    await run();
  } finally {
    delete (engine as Partial<Record<EngineMethod, unknown>>)[method];
    assert.equal((t.server.engine as unknown as Record<EngineMethod, unknown>)[method], original);
  }
}

const jobId = '0190a4c2-0000-7000-8000-000000000000';
type Rejection = { code: number; details: string };
const rejection = (promise: Promise<unknown>): Promise<Rejection> =>
  promise.then(
    () => ({ code: status.OK, details: '' }),
    (e: Rejection) => e,
  );

/** Reads: synchronous in the engine, so they can fail only at once. */
const synchronous = new Set<EngineMethod>(['getJob', 'queuePage', 'listDeadLetters']);

/** Each unary RPC with a request that reaches the engine method it depends on. */
const unaryCalls: [EngineMethod, string, () => Promise<unknown>][] = [
  ['enqueue', 'Enqueue', () => call(t.client, t.client.enqueue, { job: testJob('f') })],
  ['enqueueBatch', 'EnqueueBatch', () => call(t.client, t.client.enqueueBatch, { jobs: [testJob('f')] })],
  ['enqueueAtomic', 'EnqueueAtomic', () => call(t.client, t.client.enqueueAtomic, { jobs: [testJob('f')] })],
  [
    'reserve',
    'Reserve',
    () =>
      call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: ['f'],
        maxJobs: 1,
        leaseDurationMs: 0,
        waitTimeoutMs: 0,
        workerId: '',
      }),
  ],
  ['ack', 'Ack', () => call(t.client, t.client.ack, { jobId, attempt: 1 })],
  ['ackBatch', 'AckBatch', () => call(t.client, t.client.ackBatch, { acks: [{ jobId, attempt: 1 }] })],
  [
    'nack',
    'Nack',
    () =>
      call(t.client, t.client.nack, {
        jobId,
        attempt: 1,
        errorMessage: '',
        errorClass: '',
        errorStack: '',
        directive: undefined,
      }),
  ],
  ['extend', 'Extend', () => call(t.client, t.client.extend, { jobId, attempt: 1, leaseDurationMs: 0 })],
  ['getJob', 'GetJob', () => call(t.client, t.client.getJob, { jobId })],
  ['cancel', 'CancelJob', () => call(t.client, t.client.cancelJob, { jobId })],
  ['queuePage', 'ListQueues', () => call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' })],
  ['pauseQueue', 'PauseQueue', () => call(t.client, t.client.pauseQueue, { queue: 'f', allowMissing: true })],
  [
    'resumeQueue',
    'ResumeQueue',
    () => call(t.client, t.client.resumeQueue, { queue: 'f', allowMissing: true }),
  ],
  [
    'listDeadLetters',
    'ListDeadLetters',
    () => call(t.client, t.client.listDeadLetters, { queue: 'f', reason: 0, pageSize: 0, pageToken: '' }),
  ],
  [
    'requeueDeadLetters',
    'RequeueDeadLetters',
    () =>
      call(t.client, t.client.requeueDeadLetters, {
        requestKey: '',
        queue: 'f',
        jobIds: [],
        all: true,
        reason: 0,
        errorText: '',
        background: false,
      }),
  ],
  [
    'deleteDeadLetters',
    'DeleteDeadLetters',
    () =>
      call(t.client, t.client.deleteDeadLetters, {
        requestKey: '',
        queue: 'f',
        jobIds: [],
        all: true,
        reason: 0,
        errorText: '',
        background: false,
      }),
  ],
];

describe('every engine failure becomes a status, whatever its kind and wherever it happens', () => {
  for (const fault of faults) {
    test(`unary RPCs: the engine ${fault.name}`, async () => {
      for (const [method, rpc, send] of unaryCalls) {
        if (fault.later && synchronous.has(method)) continue;
        await withFault(method, fault, async () => {
          const answer = await rejection(send());
          assert.equal(answer.code, fault.code, `${rpc}: ${answer.details}`);
          assert.match(answer.details, /injected/, rpc);
        });
      }
      await assertServing();
    });

    test(`Produce: the engine ${fault.name}; the message is answered with it and the stream goes on`, async () => {
      for (const method of ['enqueueBatch', 'enqueueAtomic'] as const) {
        const s = openProduce(t.client);
        const got = collect(s, (seen) => seen.length === 3);
        await withFault(method, fault, async () => {
          for (let i = 1; i <= 3; i++) s.write({ sequence: i, jobs: [testJob('pf')], atomic: i % 2 === 1 });
          const answers: ProduceResponse[] = await got;
          const failing = method === 'enqueueAtomic' ? [1, 3] : [2];
          for (const a of answers) {
            const expected = failing.includes(a.sequence) ? fault.code : status.OK;
            assert.equal(a.code, expected, `${method} #${a.sequence}: ${a.message}`);
          }
        });
        s.end();
        assert.equal((await streamEnd(s)).code, status.OK);
      }
      await assertServing();
    });

    test(`Work: the engine ${fault.name}; settlements are answered with it, a failing lease ends the stream`, async () => {
      // Settlements: each answered in place with the fault's code.
      for (const method of ['ack', 'nack', 'extend', 'ackBatch'] as const) {
        const w = openWork(t.client);
        w.write(subscribeMessage(['wf']));
        await withFault(method, fault, async () => {
          const settlement = (requestId: number) =>
            method === 'nack'
              ? {
                  $case: 'nack' as const,
                  value: {
                    jobId,
                    attempt: 1,
                    errorMessage: '',
                    errorClass: '',
                    errorStack: '',
                    directive: undefined,
                  },
                }
              : method === 'extend'
                ? { $case: 'extend' as const, value: { jobId, attempt: 1, leaseDurationMs: 0 } }
                : { $case: 'ack' as const, value: { jobId, attempt: requestId } };
          const got = collect(w, (seen) => seen.length >= 1);
          if (method === 'ackBatch') {
            // Two acks in one batch are one engine ackBatch.
            w.write({
              requestId: 0,
              kind: {
                $case: 'batch',
                value: {
                  settlements: [1, 2].map((requestId) => ({ requestId, kind: settlement(requestId) })),
                  credit: 0,
                  stopDelivery: false,
                },
              },
            });
          } else {
            w.write({ requestId: 1, kind: settlement(1) });
          }
          const [first] = await got;
          assert.ok(first?.kind?.$case === 'settled', `${method}: a settled answer`);
          assert.equal(first.kind.value.code, fault.code, `${method}: ${first.kind.value.message}`);
        });
        w.cancel();
      }
      // A lease that fails ends the stream with the fault's status.
      await withFault('reserve', fault, async () => {
        const w = openWork(t.client);
        const ended = streamEnd(w);
        w.write(subscribeMessage(['wf']));
        w.write(creditMessage(1));
        const end = await ended;
        assert.equal(end.code, fault.code, end.details);
      });
      await assertServing();
    });

    // The PostgreSQL store makes no backups: Backup is refused before the engine is asked
    // (FAILED_PRECONDITION naming the store, tests/rpc/backup.test.ts), so no fault can reach it.
    if (testStoreKind === 'sqlite')
      test(`Backup: the engine ${fault.name}; the stream ends with it`, async () => {
        await withFault('backup', fault, async () => {
          const stream = t.client.backup({});
          const end = await new Promise<Rejection>((resolve) => {
            stream.on('data', () => {});
            stream.on('error', resolve);
            stream.on('end', () => resolve({ code: status.OK, details: '' }));
          });
          assert.equal(end.code, fault.code, end.details);
        });
        await assertServing();
      });
  }
});

test('a bug caught in a handler is logged as rpc.internal_error; rejections a client caused are not', async () => {
  const lines: string[] = [];
  const logged = await startTestServer({
    logger: {
      debug() {},
      info() {},
      warn() {},
      error: (event, fields) => lines.push(`${event} ${JSON.stringify(fields)}`),
      enabled: () => true,
    },
  });
  try {
    const engine = logged.server.engine as unknown as Record<string, unknown>;
    engine.enqueueBatch = () => {
      throw new TypeError('injected: a bug');
    };
    const s = openProduce(logged.client);
    const got = collect(s, (seen) => seen.length === 2);
    s.write({ sequence: 1, jobs: [testJob('log')], atomic: false });
    s.write({ sequence: 2, jobs: [], atomic: true });
    const [bug, client] = await got;
    assert.equal(bug?.code, status.INTERNAL);
    assert.equal(client?.code, status.INVALID_ARGUMENT);
    s.end();
    await streamEnd(s);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0] ?? '', /^rpc\.internal_error .*"rpc":"Produce".*injected: a bug/);
  } finally {
    await logged.dispose();
  }
});
