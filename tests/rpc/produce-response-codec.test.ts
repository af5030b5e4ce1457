/** The Produce stream's own encoder writes the generated encoder's bytes, for every answer it is given (flows' too). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EnqueueFlowResponse } from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import type { EnqueueResult } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { encodeProduceResponse } from '../../src/rpc/produce-response-codec.ts';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const pieces = ['0193a6f2-7c1e-7000-8c3d-1b2e3f4a5b6c', 'é', '😀', '\ud800', 'x'.repeat(70), 'rejected: '];

function text(next: () => number): string {
  let out = '';
  const count = next() < 0.3 ? 0 : Math.floor(next() * 4);
  for (let i = 0; i < count; i++) out += pieces[Math.floor(next() * pieces.length)]!;
  return out;
}

function int(next: () => number, max: number): number {
  const r = next();
  if (r < 0.3) return 0;
  if (r < 0.6) return Math.floor(next() * 200);
  if (r < 0.9) return Math.floor(next() * max);
  return -Math.floor(next() * 2 ** 31);
}

function result(next: () => number): EnqueueResult {
  const r = next();
  if (r < 0.05) return { outcome: undefined };
  if (r < 0.8) {
    return {
      outcome: {
        $case: 'accepted',
        value: { jobId: text(next), deduplicated: next() < 0.2, debounced: next() < 0.2 },
      },
    };
  }
  return { outcome: { $case: 'rejection', value: { reason: int(next, 2 ** 31), message: text(next) } } };
}

function response(next: () => number): ProduceResponse {
  return {
    sequence: Math.abs(int(next, Number.MAX_SAFE_INTEGER)),
    code: int(next, 2 ** 31),
    message: text(next),
    results: Array.from({ length: next() < 0.2 ? 0 : Math.floor(next() * 60) }, () => result(next)),
    atomic: undefined,
    retry: next() < 0.9 ? '' : text(next),
  };
}

function assertSameBytes(value: ProduceResponse, label: string): void {
  const expected = Buffer.from(ProduceResponse.encode(value).finish());
  assert.ok(encodeProduceResponse(value).equals(expected), `${label}: bytes differ`);
}

test('random answers: the same bytes as the generated encoder', () => {
  for (let seed = 1; seed <= 300; seed++) assertSameBytes(response(random(seed)), `seed ${seed}`);
});

function flowAnswer(next: () => number): EnqueueFlowResponse {
  const refused = next() < 0.1;
  return {
    committed: !refused && next() < 0.9,
    jobs: Array.from({ length: next() < 0.1 ? 0 : Math.floor(next() * 30) }, () => ({
      name: text(next),
      jobId: text(next),
      deduplicated: next() < 0.2,
    })),
    rejections: refused ? [{ index: int(next, 100), reason: int(next, 10), message: text(next) }] : [],
  };
}

function withFlows(next: () => number): ProduceResponse {
  const base = { ...response(next), results: next() < 0.8 ? [] : [result(next)] };
  if (next() < 0.3) return { ...base, flow: flowAnswer(next) };
  const answers = Array.from({ length: Math.floor(next() * 12) }, () => ({
    code: next() < 0.7 ? 0 : int(next, 2 ** 31),
    message: text(next),
    flow: next() < 0.15 ? undefined : flowAnswer(next),
    retry: next() < 0.9 ? '' : text(next),
  }));
  return { ...base, flows: { answers }, ...(next() < 0.1 ? { flow: flowAnswer(next) } : {}) };
}

test('random answers to flows (a refused one among them now and then): the same bytes as the generated encoder', () => {
  for (let seed = 1; seed <= 300; seed++) assertSameBytes(withFlows(random(seed)), `seed ${seed}`);
});

test('an atomic answer, a flow answer, the answers to flows and a number the generated encoder refuses go to it', () => {
  const next = random(3);
  assertSameBytes(
    {
      ...response(next),
      results: [],
      atomic: {
        committed: true,
        results: [{ jobId: 'j', deduplicated: false, debounced: false }],
        rejections: [],
      },
    },
    'atomic',
  );
  assertSameBytes(
    {
      ...response(next),
      results: [],
      flow: {
        committed: true,
        jobs: [{ name: 'extract', jobId: 'j', deduplicated: true }],
        rejections: [],
      },
    },
    'flow',
  );
  assertSameBytes(
    {
      ...response(next),
      results: [],
      flows: {
        answers: [
          {
            code: 0,
            message: '',
            flow: { committed: true, jobs: [{ name: 'a', jobId: 'j', deduplicated: false }], rejections: [] },
            retry: '',
          },
          { code: 3, message: 'a cycle', flow: undefined, retry: '' },
        ],
      },
    },
    'flows',
  );
  const bad: ProduceResponse = { ...response(next), sequence: 1.5 };
  assert.throws(() => ProduceResponse.encode(bad));
  assert.throws(() => encodeProduceResponse(bad));
});
