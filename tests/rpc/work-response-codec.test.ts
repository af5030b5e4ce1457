/** The Work stream's own encoder writes the generated encoder's bytes, for every shape it is given. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DependencyResult, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { WorkResponse, type WorkResponse_Settled } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { encodeWorkResponse } from '../../src/rpc/work-response-codec.ts';

/** A seeded generator, so a failure names the case that reproduces it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const pieces = ['a', 'job', 'é', 'ü', '€', '漢', '😀', '\ud800', '\udfff', '\u0000', '~', 'x'.repeat(40)];

function text(next: () => number, maxPieces: number): string {
  if (next() < 0.3) return '';
  let out = '';
  const count = Math.floor(next() * maxPieces);
  for (let i = 0; i < count; i++) out += pieces[Math.floor(next() * pieces.length)]!;
  return out;
}

function int(next: () => number, kind: 'int32' | 'int64' | 'uint64'): number {
  const r = next();
  if (r < 0.25) return 0;
  if (r < 0.4) return Math.floor(next() * 128);
  if (r < 0.55) return Math.floor(next() * 20_000);
  if (kind === 'int32') return r < 0.8 ? Math.floor(next() * 2 ** 31) : -Math.floor(next() * 2 ** 31) - 1;
  if (kind === 'uint64') return Math.floor(next() * Number.MAX_SAFE_INTEGER);
  if (r < 0.7) return 1_700_000_000_000 + Math.floor(next() * 1e11);
  if (r < 0.85) return Math.floor(next() * Number.MAX_SAFE_INTEGER);
  return -Math.floor(next() * Number.MAX_SAFE_INTEGER);
}

function job(next: () => number): LeasedJob {
  const metadata: Record<string, string> = {};
  const entries = next() < 0.6 ? 0 : Math.floor(next() * 4);
  for (let i = 0; i < entries; i++) metadata[text(next, 3) + String(i)] = text(next, 3);
  if (next() < 0.1) metadata[''] = text(next, 2);
  return {
    jobId: text(next, 3),
    queue: text(next, 2),
    type: text(next, 2),
    payload: Buffer.alloc(next() < 0.2 ? 0 : Math.floor(next() * (next() < 0.1 ? 20_000 : 200)), 7),
    contentType: text(next, 2),
    priority: int(next, 'int32'),
    attempt: int(next, 'int32'),
    maxAttempts: int(next, 'int32'),
    leaseDeadlineMs: int(next, 'int64'),
    enqueuedAtMs: int(next, 'int64'),
    runAtMs: int(next, 'int64'),
    metadata,
    traceparent: text(next, 2),
    tracestate: text(next, 2),
    idempotencyKey: text(next, 4),
    lastError: next() < 0.05 ? 'e'.repeat(70 + Math.floor(next() * 300)) + text(next, 3) : text(next, 6),
    group: text(next, 2),
    dependencyResults:
      next() < 0.8 ? [] : Array.from({ length: Math.floor(next() * 4) }, () => dependency(next)),
    batchId: text(next, 3),
    leaseToken: text(next, 3),
    timeoutAtMs: int(next, 'int64'),
    flowLimited: next() < 0.5,
  };
}

function dependency(next: () => number): DependencyResult {
  return {
    jobId: text(next, 3),
    name: text(next, 2),
    state: int(next, 'int32'),
    result: Buffer.alloc(next() < 0.3 ? 0 : Math.floor(next() * 300), 9),
    resultContentType: text(next, 2),
    resultOmitted: next() < 0.2,
  };
}

function settled(next: () => number): WorkResponse_Settled {
  const ok = next() < 0.6;
  return {
    requestId: int(next, 'uint64'),
    code: ok ? 0 : int(next, 'int32'),
    message: ok ? '' : text(next, 8),
    result: ok ? { $case: 'ack', value: {} } : undefined,
    errorCode: ok ? '' : text(next, 2),
    retry: ok || next() < 0.5 ? '' : text(next, 2),
  };
}

function message(next: () => number): WorkResponse {
  const r = next();
  if (r < 0.15) return { kind: { $case: 'job', value: job(next) } };
  if (r < 0.3) return { kind: { $case: 'settled', value: settled(next) } };
  if (r < 0.33) return { kind: undefined };
  const settledCount = next() < 0.3 ? 0 : Math.floor(next() * 60);
  const jobCount = next() < 0.3 ? 0 : Math.floor(next() * 60);
  return {
    kind: {
      $case: 'batch',
      value: {
        settled: Array.from({ length: settledCount }, () => settled(next)),
        jobs: Array.from({ length: jobCount }, () => job(next)),
        cancels: [],
        timeouts: [],
      },
    },
  };
}

function assertSameBytes(value: WorkResponse, label: string): void {
  const expected = Buffer.from(WorkResponse.encode(value).finish());
  const actual = encodeWorkResponse(value);
  assert.ok(Buffer.isBuffer(actual), label);
  assert.ok(actual.equals(expected), `${label}: bytes differ`);
}

test('random jobs, answers and batches: the same bytes as the generated encoder', () => {
  for (let seed = 1; seed <= 400; seed++) assertSameBytes(message(random(seed)), `seed ${seed}`);
});

test('lengths at the edges of one- and two-byte prefixes', () => {
  const next = random(7);
  for (let n = 0; n <= 200; n++) {
    const base = job(next);
    for (const jobId of ['a'.repeat(n), 'é'.repeat(n), '😀'.repeat(n >> 1), '\ud800'.repeat(n >> 1)]) {
      assertSameBytes(
        { kind: { $case: 'job', value: { ...base, jobId, payload: Buffer.alloc(n) } } },
        `n ${n}`,
      );
    }
  }
});

test('dependency results, and what this encoder leaves to the generated one: the same bytes', () => {
  const next = random(11);
  const withDependencies: LeasedJob = {
    ...job(next),
    dependencyResults: [
      {
        jobId: 'j',
        name: 'n',
        state: 3,
        result: Buffer.from('r'),
        resultContentType: 'text/plain',
        resultOmitted: false,
      },
    ],
  };
  const cases: WorkResponse[] = [
    { kind: { $case: 'job', value: withDependencies } },
    {
      kind: {
        $case: 'batch',
        value: { settled: [settled(next)], jobs: [withDependencies], cancels: [], timeouts: [] },
      },
    },
    {
      kind: {
        $case: 'settled',
        value: {
          requestId: 3,
          code: 0,
          message: '',
          result: { $case: 'nack', value: { state: 2, runAtMs: 9 } },
          errorCode: '',
          retry: '',
        },
      },
    },
    { kind: { $case: 'cancel', value: { jobId: 'j', attempt: 1, cancelledBy: 'op', cancelledAtMs: 5 } } },
    { kind: { $case: 'timeout', value: { jobId: 'j', attempt: 1, timeoutAtMs: 5 } } },
    {
      kind: {
        $case: 'batch',
        value: {
          settled: [],
          jobs: [job(next)],
          cancels: [{ jobId: 'j', attempt: 1, cancelledBy: 'op', cancelledAtMs: 5 }],
          timeouts: [{ jobId: 'k', attempt: 2, timeoutAtMs: 6 }],
        },
      },
    },
    { kind: { $case: 'job', value: { ...job(next), runAtMs: 2 ** 60 } } },
  ];
  for (const [i, value] of cases.entries()) assertSameBytes(value, `case ${i}`);
  // A number the generated encoder refuses is refused alike.
  const bad: WorkResponse = { kind: { $case: 'job', value: { ...job(next), attempt: 1.5 } } };
  assert.throws(() => WorkResponse.encode(bad));
  assert.throws(() => encodeWorkResponse(bad));
});
