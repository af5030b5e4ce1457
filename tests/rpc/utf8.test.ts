/**
 * String fields hold UTF-8 (issue 14, item 5). Invalid bytes used to be
 * replaced by U+FFFD, so `order-\xff` and `order-\xfe` were the same
 * idempotency key and the second job was dropped as a duplicate. Now every
 * call refuses them with INVALID_ARGUMENT naming the field, and stores nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { ListDeadLettersRequest } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import {
  EnqueueBatchRequest,
  EnqueueRequest,
  ProduceRequest,
  ProduceResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import {
  NackRequest,
  ReserveRequest,
  WorkRequest,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { descriptorSetBase64 } from '../../src/rpc/gen/descriptor-set.js';
import { Utf8Fields } from '../../src/rpc/utf8-fields.ts';
import { rawBidi, rawUnary } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { collect, streamEnd } from '../helpers/streams.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.dispose());

const placeholder = 'PLACEHOLDER';

/** `encoded` with the bytes of `placeholder` replaced by as many `bad` bytes (the field length stays right). */
function withBytes(encoded: Uint8Array, bad: number[]): Buffer {
  const bytes = Buffer.from(encoded);
  const at = bytes.indexOf(placeholder);
  assert.ok(at >= 0 && bytes.indexOf(placeholder, at + 1) < 0, 'the placeholder occurs once');
  for (let i = 0; i < placeholder.length; i++) bytes[at + i] = bad[i % bad.length]!;
  return bytes;
}

const path = (rpc: string) => `/sepp.v1.QueueService/${rpc}`;
const storedJobs = async () =>
  (await t.server.engine.listQueues()).reduce(
    (n, q) => n + Object.values(q.counts).reduce((a, b) => a + b, 0),
    0,
  );

describe('invalid UTF-8 in a string field', () => {
  test('two idempotency keys that differ only in invalid bytes no longer collide: both are refused', async () => {
    const before = await storedJobs();
    for (const bad of [0xff, 0xfe]) {
      // order-\xff / order-\xfe: the key is `order-` and then one invalid byte.
      const encoded = EnqueueRequest.encode({
        job: testJob('orders', { idempotencyKey: `order-${placeholder.slice(0, 1)}` }),
      }).finish();
      const bytes = Buffer.from(encoded);
      const at = bytes.indexOf('order-P');
      bytes[at + 6] = bad;
      const answer = await rawUnary(t.client, path('Enqueue'), bytes);
      assert.equal(answer.code, status.INVALID_ARGUMENT, answer.details);
      assert.match(answer.details, /^job\.idempotency_key: not valid UTF-8/);
    }
    assert.equal(await storedJobs(), before, 'nothing stored');
    // Valid UTF-8 is kept byte for byte, U+FFFD itself included: three different keys, three jobs.
    const ids = new Set<string>();
    for (const key of ['order-ÿ', 'order-þ', 'order-\uFFFD']) {
      ids.add(
        (await call(t.client, t.client.enqueue, { job: testJob('orders', { idempotencyKey: key }) })).jobId,
      );
    }
    assert.equal(ids.size, 3);
  });

  const cases: [string, string, Uint8Array, RegExp][] = [
    ['Enqueue', 'queue', EnqueueRequest.encode({ job: testJob(placeholder) }).finish(), /^job\.queue:/],
    [
      'Enqueue',
      'type',
      EnqueueRequest.encode({ job: testJob('q', { type: placeholder }) }).finish(),
      /^job\.type:/,
    ],
    [
      'Enqueue',
      'a metadata key',
      EnqueueRequest.encode({ job: testJob('q', { metadata: { [placeholder]: 'v' } }) }).finish(),
      /^job\.metadata \(a key\):/,
    ],
    [
      'Enqueue',
      'a metadata value',
      EnqueueRequest.encode({ job: testJob('q', { metadata: { k: placeholder } }) }).finish(),
      /^job\.metadata \(a value\):/,
    ],
    [
      'EnqueueBatch',
      'the second job’s content type',
      EnqueueBatchRequest.encode({
        jobs: [testJob('q'), testJob('q', { contentType: placeholder })],
      }).finish(),
      /^jobs\[1\]\.content_type:/,
    ],
    [
      'Reserve',
      'a queue name',
      ReserveRequest.encode({
        maxResponseBytes: 0,
        queues: ['a', placeholder],
        maxJobs: 1,
        leaseDurationMs: 0,
        waitTimeoutMs: 0,
        workerId: '',
      }).finish(),
      /^queues\[1\]:/,
    ],
    [
      'Nack',
      'error_message',
      NackRequest.encode({
        jobId: '0190a4c2-0000-7000-8000-000000000000',
        attempt: 1,
        errorMessage: placeholder,
        errorClass: '',
        errorStack: '',
        directive: undefined,
      }).finish(),
      /^error_message:/,
    ],
    [
      'ListDeadLetters',
      'page_token',
      ListDeadLettersRequest.encode({ queue: 'q', reason: 0, pageSize: 0, pageToken: placeholder }).finish(),
      /^page_token:/,
    ],
  ];
  for (const [rpc, what, encoded, named] of cases) {
    for (const [kind, bad] of [
      ['a lone continuation byte', [0x80]],
      ['an overlong encoding', [0xc0, 0xaf]],
      ['a UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ] as const) {
      test(`${rpc}, ${what}, ${kind}: INVALID_ARGUMENT naming the field`, async () => {
        const before = await storedJobs();
        const answer = await rawUnary(t.client, path(rpc), withBytes(encoded, [...bad]));
        assert.equal(answer.code, status.INVALID_ARGUMENT, answer.details);
        assert.match(answer.details, named);
        assert.match(answer.details, /not valid UTF-8/);
        assert.equal(await storedJobs(), before);
      });
    }
  }

  test('Produce: the message is answered INVALID_ARGUMENT naming the field; the stream goes on', async () => {
    const before = await storedJobs();
    const s = rawBidi(t.client, path('Produce'), (b) => ProduceResponse.decode(b));
    const got = collect(s, (seen) => seen.length === 2);
    const bad = ProduceRequest.encode({
      sequence: 1,
      jobs: [testJob('q'), testJob('q', { idempotencyKey: placeholder })],
      atomic: false,
    }).finish();
    s.write(withBytes(bad, [0xff]));
    s.write(
      Buffer.from(ProduceRequest.encode({ sequence: 2, jobs: [testJob('q')], atomic: false }).finish()),
    );
    const [first, second] = await got;
    assert.equal(first?.code, status.INVALID_ARGUMENT);
    assert.match(first?.message ?? '', /^jobs\[1\]\.idempotency_key: not valid UTF-8/);
    assert.equal(second?.code, status.OK);
    s.end();
    await streamEnd(s);
    assert.equal(await storedJobs(), before + 1, 'only the valid message stored');
  });

  test('Work: a settlement with invalid UTF-8 ends the stream with INVALID_ARGUMENT naming it', async () => {
    const w = rawBidi(t.client, path('Work'), (b) => WorkResponse.decode(b));
    const ended = streamEnd(w);
    const subscribe: WorkRequest = {
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['q'], leaseDurationMs: 0, workerId: '', batchResponses: true },
      },
    };
    w.write(Buffer.from(WorkRequest.encode(subscribe).finish()));
    const nack: WorkRequest = {
      requestId: 0,
      kind: {
        $case: 'batch',
        value: {
          settlements: [
            {
              requestId: 1,
              kind: {
                $case: 'nack',
                value: {
                  jobId: '0190a4c2-0000-7000-8000-000000000000',
                  attempt: 1,
                  errorMessage: placeholder,
                  errorClass: '',
                  errorStack: '',
                  directive: undefined,
                },
              },
            },
          ],
          credit: 0,
          stopDelivery: false,
        },
      },
    };
    w.write(withBytes(WorkRequest.encode(nack).finish(), [0xfe]));
    const end = await ended;
    assert.equal(end.code, status.INVALID_ARGUMENT);
    assert.match(end.details, /^batch\.settlements\[0\]\.nack\.error_message: not valid UTF-8/);
  });
});

describe('U+0000 in a string field (one rule for both stores: PostgreSQL text cannot hold it)', () => {
  test('Enqueue, a nack and a filter are refused INVALID_ARGUMENT naming the field; nothing is stored', async () => {
    const before = await storedJobs();
    for (const [job, field] of [
      [testJob('nul', { idempotencyKey: 'order-\u0000' }), 'job.idempotency_key'],
      [testJob('nul', { type: 'a\u0000b' }), 'job.type'],
      [testJob('nul', { metadata: { tenant: 'acme\u0000' } }), 'job.metadata (a value)'],
    ] as const) {
      const refused = await call(t.client, t.client.enqueue, { job }).then(
        () => assert.fail(`${field}: accepted`),
        (error: { code: number; details: string }) => error,
      );
      assert.equal(refused.code, status.INVALID_ARGUMENT, refused.details);
      assert.equal(
        refused.details,
        `${field}: holds U+0000 (NUL), which no text field may hold; send binary data in the payload`,
      );
    }
    assert.equal(await storedJobs(), before, 'nothing stored');
    // A payload is bytes: zero bytes in it are kept.
    const { jobId } = await call(t.client, t.client.enqueue, {
      job: testJob('nul', { payload: Buffer.from([0, 1, 0]) }),
    });
    const leased = await call(t.client, t.client.reserve, {
      queues: ['nul'],
      maxJobs: 1,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: '',
      maxResponseBytes: 0,
    });
    assert.deepEqual(leased.jobs[0]?.payload, Buffer.from([0, 1, 0]));
    const nack = NackRequest.fromPartial({ jobId, attempt: 1, errorMessage: 'bad\u0000' });
    await assert.rejects(call(t.client, t.client.nack, nack), (error: { code: number; details: string }) => {
      assert.equal(error.code, status.INVALID_ARGUMENT);
      assert.match(error.details, /^error_message: holds U\+0000/);
      return true;
    });
    const list = ListDeadLettersRequest.fromPartial({ queue: 'nul\u0000' });
    await assert.rejects(call(t.client, t.client.listDeadLetters, list), { code: status.INVALID_ARGUMENT });
  });
});

test('the check finds exactly the bad field in random batches, and nothing in valid ones', () => {
  const utf8 = new Utf8Fields(Buffer.from(descriptorSetBase64, 'base64'), 'sepp.v1.QueueService');
  const fields = [
    'queue',
    'type',
    'contentType',
    'idempotencyKey',
    'traceparent',
    'tracestate',
    'group',
  ] as const;
  const snake = { contentType: 'content_type', idempotencyKey: 'idempotency_key' } as Record<string, string>;
  const text = fc
    .string({ maxLength: 20, unit: 'grapheme' })
    .filter((s) => !s.includes(placeholder) && !s.includes('\u0000'));
  const job = fc.record({
    queue: text,
    type: text,
    contentType: text,
    idempotencyKey: text,
    traceparent: text,
    tracestate: text,
    group: text,
    dependsOn: fc.array(text, { maxLength: 0 }),
    onDependencyFailure: fc.constant(0),
    timeoutMs: fc.constant(0),
    debounceKey: text,
    debounceMs: fc.constant(0),
    debounceMaxMs: fc.constant(0),
    // Payload bytes that look like tags and lengths must be skipped, not read.
    payload: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    priority: fc.integer({ min: -5, max: 20 }),
    maxAttempts: fc.integer({ min: 0, max: 100 }),
    metadata: fc.dictionary(text, text, { maxKeys: 3 }),
  });
  fc.assert(
    fc.property(
      fc.array(job, { minLength: 1, maxLength: 8 }),
      fc.nat(),
      fc.constantFrom(...fields),
      (jobs, pick, field) => {
        const request = { jobs: jobs.map((j) => ({ ...j, schedule: undefined, uniqueWhileActive: false })) };
        const valid = EnqueueBatchRequest.encode(request).finish();
        assert.equal(utf8.firstInvalid(path('EnqueueBatch'), valid), null);
        const index = pick % jobs.length;
        request.jobs[index] = { ...request.jobs[index]!, [field]: placeholder };
        const encoded = EnqueueBatchRequest.encode(request).finish();
        const named = `jobs[${index}].${snake[field] ?? field}`;
        assert.deepEqual(utf8.firstInvalid(path('EnqueueBatch'), withBytes(encoded, [0xff])), {
          field: named,
          problem: 'utf8',
        });
        // A zero byte is valid UTF-8, and U+0000: refused all the same (one rule for both stores).
        assert.deepEqual(utf8.firstInvalid(path('EnqueueBatch'), withBytes(encoded, [0x41, 0])), {
          field: named,
          problem: 'nul',
        });
      },
    ),
    { numRuns: 500 },
  );
});
