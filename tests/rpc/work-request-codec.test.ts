/**
 * The Work stream's own decoder: for what it takes, the generated decoder's result; for
 * anything else (subscribe, odd bytes, strings that are not UTF-8 or hold U+0000), nothing,
 * so the generated decoder and the UTF-8 check answer as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type NackRequest,
  WorkRequest,
  type WorkRequest_Settlement,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { decodeWorkRequestDirect } from '../../src/rpc/work-request-codec.ts';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function id(next: () => number): string {
  if (next() < 0.1) return '';
  const chars = 'abcdef0123456789-';
  let out = '';
  const n = next() < 0.1 ? Math.floor(next() * 200) : 36;
  for (let i = 0; i < n; i++) out += chars[Math.floor(next() * chars.length)];
  return out;
}

function number(next: () => number, max: number): number {
  const r = next();
  if (r < 0.2) return 0;
  if (r < 0.6) return Math.floor(next() * 200);
  return Math.floor(next() * max);
}

/** Text as workers send it: mostly ASCII, sometimes other UTF-8 (never U+0000: left to the UTF-8 check). */
function text(next: () => number): string {
  const r = next();
  if (r < 0.3) return '';
  if (r < 0.5) return `échec: ${'x'.repeat(Math.floor(next() * 40))} ✓ 🚀`;
  return `Error: ${id(next)}`;
}

type SettlementKind = NonNullable<WorkRequest_Settlement['kind']>;

function settlementKind(next: () => number): SettlementKind {
  const r = next();
  const jobId = id(next);
  const attempt = number(next, 2 ** 31);
  if (r < 0.55) {
    const withResult = next() < 0.3;
    return {
      $case: 'ack',
      value: {
        jobId,
        attempt,
        result: withResult
          ? {
              data: Buffer.alloc(Math.floor(next() * 300), 65),
              contentType: next() < 0.5 ? '' : 'application/json',
            }
          : undefined,
      },
    };
  }
  if (r < 0.8) {
    const d = next();
    return {
      $case: 'nack',
      value: {
        jobId,
        attempt,
        errorMessage: text(next),
        directive:
          d < 0.25
            ? undefined
            : d < 0.5
              ? { $case: 'backoff', value: next() < 0.5 }
              : d < 0.75
                ? { $case: 'retryDelayMs', value: number(next, 2 ** 40) }
                : { $case: 'deadLetter', value: next() < 0.5 },
        errorClass: next() < 0.5 ? '' : 'TypeError',
        errorStack: text(next),
      },
    };
  }
  if (r < 0.9) return { $case: 'extend', value: { jobId, attempt, leaseDurationMs: number(next, 2 ** 40) } };
  return {
    $case: 'progress',
    value: {
      jobId,
      attempt,
      percent: next() < 0.3 ? 0 : next() * 100,
      hasPercent: next() < 0.7,
      json: next() < 0.5 ? '' : `{"step":"${text(next)}"}`,
    },
  };
}

function settlement(next: () => number): WorkRequest_Settlement {
  if (next() < 0.05) return { requestId: number(next, 2 ** 40), kind: undefined };
  return { requestId: number(next, Number.MAX_SAFE_INTEGER), kind: settlementKind(next) };
}

function request(next: () => number): WorkRequest {
  const r = next();
  const requestId = next() < 0.8 ? 0 : number(next, 2 ** 40);
  if (r < 0.15) return { requestId, kind: { $case: 'credit', value: { jobs: number(next, 2 ** 32) } } };
  if (r < 0.2) return { requestId, kind: undefined };
  // A settlement as a message of its own.
  if (r < 0.3) return { requestId, kind: settlementKind(next) } as WorkRequest;
  return {
    requestId,
    kind: {
      $case: 'batch',
      value: {
        settlements: Array.from({ length: Math.floor(next() * 60) }, () => settlement(next)),
        credit: number(next, 2 ** 32),
        stopDelivery: next() < 0.2,
      },
    },
  };
}

test('what the generated encoder writes for settlements and credit decodes to what the generated decoder reads', () => {
  let taken = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const value = request(random(seed));
    const bytes = Buffer.from(WorkRequest.encode(value).finish());
    const direct = decodeWorkRequestDirect(bytes);
    if (direct === undefined) continue;
    taken++;
    assert.deepStrictEqual(direct, WorkRequest.decode(bytes), `seed ${seed}`);
  }
  // Every one of these is canonical: all are taken.
  assert.equal(taken, 300);
});

test('other kinds, other bytes: left to the generated decoder, or read alike', () => {
  const others: WorkRequest[] = [
    {
      requestId: 1,
      kind: {
        $case: 'subscribe',
        value: { queues: ['q'], leaseDurationMs: 5, workerId: 'w', batchResponses: true },
      },
    },
    oneSettlement({ $case: 'ack', value: { jobId: 'j\u0000', attempt: 1, result: undefined } }),
    // An ack's strings are taken when ASCII only (a job id is).
    oneSettlement({ $case: 'ack', value: { jobId: 'jé', attempt: 1, result: undefined } }),
    oneSettlement({ $case: 'ack', value: { jobId: 'j', attempt: -1, result: undefined } }),
    oneSettlement({ $case: 'extend', value: { jobId: 'j', attempt: 1, leaseDurationMs: -1 } }),
    ...[
      { errorMessage: 'é\u0000', directive: undefined },
      { errorMessage: '', directive: { $case: 'retryDelayMs', value: -5 } as const },
    ].map(({ errorMessage, directive }) =>
      oneSettlement({
        $case: 'nack',
        value: { jobId: 'j', attempt: 1, errorMessage, directive, errorClass: '', errorStack: '' },
      }),
    ),
    oneSettlement({
      $case: 'progress',
      value: { jobId: 'j', attempt: 1, percent: 5, hasPercent: true, json: '{"a":"\u0000"}' },
    }),
    { requestId: 2 ** 53 + 2, kind: { $case: 'credit', value: { jobs: 1 } } },
  ];
  for (const [i, value] of others.entries()) {
    const bytes = Buffer.from(WorkRequest.encode(value).finish());
    assert.equal(decodeWorkRequestDirect(bytes), undefined, `case ${i}`);
  }
  // Every byte changed, every cut: taken only when the generated decoder reads the same.
  const next = random(5);
  for (let round = 0; round < 40; round++) {
    const bytes = Buffer.from(WorkRequest.encode(request(next)).finish());
    for (let i = 0; i < Math.min(bytes.length, 120); i++) {
      for (const mutated of [
        Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]),
        flip(bytes, i, next),
      ]) {
        const direct = decodeWorkRequestDirect(mutated);
        if (direct === undefined) continue;
        assert.deepStrictEqual(direct, WorkRequest.decode(mutated), `round ${round}, byte ${i}`);
      }
    }
  }
  // Repeated and unknown fields go to the generated decoder (which keeps the last / skips).
  const credit = Buffer.from(
    WorkRequest.encode({ requestId: 0, kind: { $case: 'credit', value: { jobs: 3 } } }).finish(),
  );
  assert.equal(decodeWorkRequestDirect(Buffer.concat([credit, credit])), undefined);
  assert.equal(decodeWorkRequestDirect(Buffer.concat([credit, Buffer.from([0x48, 1])])), undefined);
});

/** A batch of one settlement and a credit of one. */
function oneSettlement(kind: SettlementKind): WorkRequest {
  return {
    requestId: 0,
    kind: {
      $case: 'batch',
      value: { settlements: [{ requestId: 1, kind }], credit: 1, stopDelivery: false },
    },
  };
}

test('what the UTF-8 check refuses, or the generated decoder reads otherwise, is left to them', () => {
  // A nack as a message of its own: its fields are the message's last bytes.
  const nack = (errorMessage: string, directive: NackRequest['directive']) =>
    Buffer.from(
      WorkRequest.encode({
        requestId: 0,
        kind: {
          $case: 'nack',
          value: { jobId: 'j', attempt: 1, errorMessage, directive, errorClass: '', errorStack: '' },
        },
      }).finish(),
    );
  const good = nack('é!', undefined);
  assert.deepStrictEqual(decodeWorkRequestDirect(good), WorkRequest.decode(good));
  // é is C3 A9; C3 21 is not UTF-8.
  const bad = Buffer.from(good);
  bad[bad.indexOf(0xa9)] = 0x21;
  assert.equal(decodeWorkRequestDirect(bad), undefined);
  // A bool of 2 (the generated decoder reads true), and a second directive (it keeps the last):
  // the nack's field appended, its length (one byte, after its tag 2A) grown by two.
  for (const [extra, directive] of [
    [[0x20, 2], undefined],
    [[0x30, 1], { $case: 'backoff', value: true }],
  ] as const) {
    const grown = Buffer.concat([nack('e', directive), Buffer.from(extra)]);
    assert.equal(grown[0], 0x2a);
    grown[1]! += 2;
    assert.equal(decodeWorkRequestDirect(grown), undefined, `extra ${extra.join(',')}`);
    const generated = WorkRequest.decode(grown);
    assert.equal(generated.kind?.$case === 'nack' && generated.kind.value.errorMessage, 'e');
  }
});

function flip(bytes: Buffer, i: number, next: () => number): Buffer {
  const copy = Buffer.from(bytes);
  copy[i] = Math.floor(next() * 256);
  return copy;
}
