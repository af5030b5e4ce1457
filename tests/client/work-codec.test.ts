/**
 * The Worker's hand-written Work codec (clients/typescript/src/work-codec.ts): its
 * answers are the generated decoder's, field for field, for random messages of every
 * kind and for bytes it does not take (an unknown field, a negative number, bytes that
 * end early); its requests are the generated encoder's bytes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { type LeasedJob, LeasedJob as LeasedJobCodec } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  WorkRequest,
  type WorkRequest_Settlement,
  WorkResponse,
  type WorkResponse_Settled,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import {
  decodeWorkResponse,
  decodeWorkResponseDirect,
  encodeAckBatch,
  encodeWorkRequest,
} from '../../clients/typescript/src/work-codec.ts';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function pick<T>(next: () => number, choices: readonly T[]): T {
  return choices[Math.floor(next() * choices.length)]!;
}

/** Text: mostly ASCII, sometimes other UTF-8, a BOM or a lone surrogate, sometimes empty. */
function text(next: () => number): string {
  return pick(next, [
    '',
    '',
    'w5',
    '0193a6f2-7c1e-7000-8c3d-1b2e3f4a5b6c',
    'échec ✓ 🚀',
    '\ufeffbom',
    'x\ud800y',
  ]);
}

function number(next: () => number, max: number): number {
  const r = next();
  if (r < 0.3) return 0;
  if (r < 0.7) return Math.floor(next() * 200);
  return Math.floor(next() * max);
}

function job(next: () => number): LeasedJob {
  return LeasedJobCodec.fromPartial({
    jobId: text(next),
    queue: text(next),
    type: text(next),
    payload: Buffer.from(next() < 0.3 ? '' : JSON.stringify({ n: next() })),
    contentType: pick(next, ['', 'application/json', 'text/plain; charset=utf-8']),
    priority: number(next, 10),
    attempt: number(next, 2 ** 31),
    maxAttempts: number(next, 2 ** 31),
    leaseDeadlineMs: number(next, Number.MAX_SAFE_INTEGER),
    enqueuedAtMs: number(next, 2 ** 42),
    runAtMs: number(next, 2 ** 42),
    metadata: next() < 0.2 ? { a: text(next), [text(next)]: 'b' } : {},
    traceparent: text(next),
    tracestate: text(next),
    idempotencyKey: text(next),
    lastError: text(next),
    group: text(next),
    dependencyResults:
      next() < 0.2
        ? [
            {
              jobId: text(next),
              name: text(next),
              state: number(next, 7),
              result: Buffer.from(text(next)),
              resultContentType: text(next),
              resultOmitted: next() < 0.5,
            },
          ]
        : [],
    batchId: text(next),
    leaseToken: text(next),
    timeoutAtMs: number(next, 2 ** 42),
    flowLimited: next() < 0.5,
  });
}

function settled(next: () => number): WorkResponse_Settled {
  const r = next();
  const result: WorkResponse_Settled['result'] =
    r < 0.5
      ? { $case: 'ack', value: {} }
      : r < 0.6
        ? { $case: 'nack', value: { state: number(next, 5), runAtMs: number(next, 2 ** 42) } }
        : r < 0.7
          ? { $case: 'extend', value: { leaseDeadlineMs: number(next, 2 ** 42) } }
          : r < 0.8
            ? { $case: 'progress', value: {} }
            : undefined;
  return {
    requestId: number(next, Number.MAX_SAFE_INTEGER),
    code: number(next, 17),
    message: text(next),
    result,
    errorCode: text(next),
    retry: text(next),
  };
}

function response(next: () => number): WorkResponse {
  const r = next();
  const many = <T>(make: (next: () => number) => T, max: number) =>
    Array.from({ length: Math.floor(next() * max) }, () => make(next));
  if (r < 0.6)
    return {
      kind: {
        $case: 'batch',
        value: {
          settled: many(settled, 60),
          jobs: many(job, 60),
          cancels: many(
            (n) => ({
              jobId: text(n),
              attempt: number(n, 9),
              cancelledBy: text(n),
              cancelledAtMs: number(n, 2 ** 42),
            }),
            3,
          ),
          timeouts: many(
            (n) => ({ jobId: text(n), attempt: number(n, 9), timeoutAtMs: number(n, 2 ** 42) }),
            3,
          ),
        },
      },
    };
  if (r < 0.75) return { kind: { $case: 'job', value: job(next) } };
  if (r < 0.9) return { kind: { $case: 'settled', value: settled(next) } };
  if (r < 0.95)
    return {
      kind: { $case: 'cancel', value: { jobId: text(next), attempt: 1, cancelledBy: '', cancelledAtMs: 5 } },
    };
  return { kind: { $case: 'timeout', value: { jobId: text(next), attempt: 2, timeoutAtMs: 7 } } };
}

/** Both decoders' answers to the same bytes: equal values, or both throw. */
function sameDecode(bytes: Buffer, label: string): void {
  let expected: WorkResponse | Error;
  try {
    expected = WorkResponse.decode(bytes);
  } catch (error) {
    expected = error as Error;
  }
  if (expected instanceof Error) {
    assert.throws(() => decodeWorkResponse(bytes), label);
    return;
  }
  assert.deepStrictEqual(decodeWorkResponse(bytes), expected, label);
}

test('decoded Work answers are the generated decoder’s, for random messages of every kind', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const bytes = Buffer.from(WorkResponse.encode(response(random(seed))).finish());
    // What the generated encoder writes, the hand-written decoder takes.
    assert.notEqual(decodeWorkResponseDirect(bytes), undefined, `seed ${seed}`);
    sameDecode(bytes, `seed ${seed}`);
  }
});

test('bytes the hand-written decoder does not take are decoded as the generated decoder decodes them', () => {
  const next = random(7);
  const jobBytes = LeasedJobCodec.encode(job(next)).finish();
  // An unknown field (99, varint) inside a job of a batch.
  const withUnknown = new BinaryWriter();
  withUnknown
    .uint32(26)
    .fork()
    .uint32(18)
    .fork()
    .raw(jobBytes)
    .uint32(99 << 3)
    .uint32(5)
    .join()
    .join();
  const unknownBytes = Buffer.from(withUnknown.finish());
  assert.equal(decodeWorkResponse(unknownBytes).kind?.$case, 'batch');
  assert.equal(decodeWorkResponseDirect(unknownBytes), undefined);
  sameDecode(unknownBytes, 'unknown field');
  // A negative attempt (ten bytes) and a field with the wrong wire type.
  const negative = new BinaryWriter();
  negative
    .uint32(10)
    .fork()
    .uint32(56)
    .int32(-3)
    .uint32(8 << 3)
    .uint32(4)
    .join();
  sameDecode(Buffer.from(negative.finish()), 'negative int32');
  const wrongType = new BinaryWriter();
  wrongType
    .uint32(10)
    .fork()
    .uint32((1 << 3) | 0)
    .uint32(4)
    .join();
  sameDecode(Buffer.from(wrongType.finish()), 'wrong wire type');
  // Bytes that end early: both throw.
  const whole = Buffer.from(WorkResponse.encode(response(random(11))).finish());
  for (const cut of [1, 2, Math.floor(whole.length / 2), whole.length - 1]) {
    if (cut > 0 && cut < whole.length) sameDecode(whole.subarray(0, cut), `cut at ${cut}`);
  }
  // A payload is a copy, not a view of the message.
  const one = Buffer.from(WorkResponse.encode({ kind: { $case: 'job', value: job(random(3)) } }).finish());
  const leased = decodeWorkResponse(one).kind;
  assert.equal(leased?.$case, 'job');
  assert.ok(leased?.$case === 'job' && leased.value.payload.length > 0);
  const payload = Buffer.from(leased.value.payload);
  one.fill(0);
  assert.deepStrictEqual(leased.value.payload, payload);
});

function settlement(next: () => number, acksOnly: boolean): WorkRequest_Settlement {
  const requestId = number(next, Number.MAX_SAFE_INTEGER);
  const r = acksOnly ? 0 : next();
  if (r < 0.8)
    return {
      requestId,
      kind: {
        $case: 'ack',
        value: {
          jobId: text(next),
          attempt: number(next, 2 ** 31),
          result:
            next() < 0.3
              ? { data: Buffer.from(next() < 0.3 ? '' : text(next)), contentType: text(next) }
              : undefined,
        },
      },
    };
  return {
    requestId,
    kind: { $case: 'extend', value: { jobId: text(next), attempt: 1, leaseDurationMs: 30_000 } },
  };
}

test('encoded Work requests are the generated encoder’s bytes', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const next = random(seed);
    const acksOnly = next() < 0.7;
    const message: WorkRequest =
      next() < 0.9
        ? {
            requestId: next() < 0.9 ? 0 : 3,
            kind: {
              $case: 'batch',
              value: {
                settlements: Array.from({ length: Math.floor(next() * 60) }, () =>
                  settlement(next, acksOnly),
                ),
                credit: number(next, 2 ** 32),
                stopDelivery: false,
              },
            },
          }
        : { requestId: 0, kind: { $case: 'credit', value: { jobs: 50 } } };
    const expected = Buffer.from(WorkRequest.encode(message).finish());
    assert.deepStrictEqual(encodeWorkRequest(message), expected, `seed ${seed}`);
    // A batch of acks alone is written by hand.
    const handWritten = message.kind?.$case === 'batch' && message.requestId === 0 && acksOnly;
    assert.deepStrictEqual(encodeAckBatch(message), handWritten ? expected : undefined, `seed ${seed}`);
  }
  // A negative attempt (the generated encoder's ten bytes).
  const negative: WorkRequest = {
    requestId: 0,
    kind: {
      $case: 'batch',
      value: {
        settlements: [{ requestId: 1, kind: { $case: 'ack', value: { jobId: 'j', attempt: -1 } } }],
        credit: 0,
        stopDelivery: false,
      },
    },
  };
  assert.equal(encodeAckBatch(negative), undefined);
  // A batch that stops delivery is the generated encoder's, with its flag.
  const stop: WorkRequest = {
    requestId: 0,
    kind: {
      $case: 'batch',
      value: {
        settlements: [
          { requestId: 1, kind: { $case: 'ack', value: { jobId: 'j', attempt: 1, result: undefined } } },
        ],
        credit: 0,
        stopDelivery: true,
      },
    },
  };
  assert.equal(encodeAckBatch(stop), undefined);
  assert.deepStrictEqual(WorkRequest.decode(encodeWorkRequest(stop)), stop);
  assert.deepStrictEqual(encodeWorkRequest(negative), Buffer.from(WorkRequest.encode(negative).finish()));
});
