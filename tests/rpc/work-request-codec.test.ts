/**
 * The Work stream's own decoder: for what it takes, the generated decoder's result; for
 * anything else (other kinds, odd bytes, non-ASCII strings), nothing, so the generated
 * decoder and the UTF-8 check answer as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkRequest, type WorkRequest_Settlement } from '../../clients/typescript/src/gen/sepp/v1/work.js';
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

function settlement(next: () => number): WorkRequest_Settlement {
  const r = next();
  if (r < 0.05) return { requestId: number(next, 2 ** 40), kind: undefined };
  const withResult = next() < 0.3;
  return {
    requestId: number(next, Number.MAX_SAFE_INTEGER),
    kind: {
      $case: 'ack',
      value: {
        jobId: id(next),
        attempt: number(next, 2 ** 31),
        result: withResult
          ? {
              data: Buffer.alloc(Math.floor(next() * 300), 65),
              contentType: next() < 0.5 ? '' : 'application/json',
            }
          : undefined,
      },
    },
  };
}

function request(next: () => number): WorkRequest {
  const r = next();
  const requestId = next() < 0.8 ? 0 : number(next, 2 ** 40);
  if (r < 0.15) return { requestId, kind: { $case: 'credit', value: { jobs: number(next, 2 ** 32) } } };
  if (r < 0.2) return { requestId, kind: undefined };
  return {
    requestId,
    kind: {
      $case: 'batch',
      value: {
        settlements: Array.from({ length: Math.floor(next() * 60) }, () => settlement(next)),
        credit: number(next, 2 ** 32),
      },
    },
  };
}

test('what the generated encoder writes for acks and credit decodes to what the generated decoder reads', () => {
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
    { requestId: 2, kind: { $case: 'ack', value: { jobId: 'j', attempt: 1, result: undefined } } },
    {
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
                  jobId: 'j',
                  attempt: 1,
                  errorMessage: 'e',
                  errorClass: '',
                  errorStack: '',
                  retry: undefined,
                } as never,
              },
            },
          ],
          credit: 0,
        },
      },
    },
    oneAck('jé', 1),
    oneAck('j\u0000', 1),
    oneAck('j', -1),
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

/** A batch of one ack and a credit of one. */
function oneAck(jobId: string, attempt: number): WorkRequest {
  const ack: WorkRequest_Settlement = {
    requestId: 1,
    kind: { $case: 'ack', value: { jobId, attempt, result: undefined } },
  };
  return { requestId: 0, kind: { $case: 'batch', value: { settlements: [ack], credit: 1 } } };
}

function flip(bytes: Buffer, i: number, next: () => number): Buffer {
  const copy = Buffer.from(bytes);
  copy[i] = Math.floor(next() * 256);
  return copy;
}
