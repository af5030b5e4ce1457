/**
 * CPU per job of the TypeScript SDK's Work codec on W1's shapes: the Worker decoding the
 * server's answer (a batch of 50 leased jobs and the 50 answers to its acks; and W5's, where
 * one job in 25 is a collector carrying its 20 children's results) and encoding its request
 * (a batch of 50 acks with its credit), the generated code (gen/sepp/v1/work.ts)
 * against the hand-written clients/typescript/src/work-codec.ts, interleaved, medians of --rounds.
 *
 *   npx tsx bench/sdk-work-codec.ts [--rounds 15] [--batches 2000]
 */
import { parseArgs } from 'node:util';
import { LeasedJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { WorkRequest, WorkResponse } from '../clients/typescript/src/gen/sepp/v1/work.js';
import { decodeWorkResponse, encodeWorkRequest } from '../clients/typescript/src/work-codec.ts';
import { compareCodecs } from './lib/codec-ab.ts';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '15' }, batches: { type: 'string', default: '2000' } },
});
const rounds = Number(args.rounds);
const batches = Number(args.batches);
const perBatch = 50;

const now = Date.now();
const jobId = (i: number) => `0193a6f2-7c1e-7${String(i).padStart(3, '0')}-8c3d-1b2e3f4a5b6c`;
/** A leased job as W1 hands it out (256 B of JSON payload; the fields not named here at their defaults). */
const job = (i: number): LeasedJob =>
  LeasedJob.fromPartial({
    jobId: jobId(i),
    queue: 'w1',
    type: 'noop',
    payload: Buffer.from(JSON.stringify({ n: i, pad: 'x'.repeat(240) })),
    contentType: 'application/json',
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: now + 30_000,
    enqueuedAtMs: now - 5_000,
    runAtMs: now - 5_000,
  });
/** The server's answer: `jobs` leased, and 50 acks answered. */
const answerOf = (jobs: LeasedJob[]): Buffer =>
  Buffer.from(
    WorkResponse.encode({
      kind: {
        $case: 'batch',
        value: {
          settled: Array.from({ length: perBatch }, (_, i) => ({
            requestId: 1000 + i,
            code: 0,
            message: '',
            result: { $case: 'ack' as const, value: {} },
            errorCode: '',
            retry: '',
          })),
          jobs,
          cancels: [],
          timeouts: [],
        },
      },
    }).finish(),
  );
const answer = answerOf(Array.from({ length: perBatch }, (_, i) => job(i)));
/**
 * W5's collector shape: 48 children (no payload) and 2 collectors, each with the results of
 * its 20 children (no result bytes), with the 50 acks answered.
 */
const child = (i: number, collector: boolean): LeasedJob =>
  LeasedJob.fromPartial({
    jobId: jobId(i),
    queue: 'w5',
    type: collector ? 'collector' : 'child',
    contentType: 'application/octet-stream',
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: now + 30_000,
    enqueuedAtMs: now - 5_000,
    runAtMs: now - 5_000,
    dependencyResults: collector
      ? Array.from({ length: 20 }, (_, c) => ({
          jobId: jobId(100 + c),
          name: `c${c}`,
          state: 4,
          result: Buffer.alloc(0),
          resultContentType: '',
          resultOmitted: false,
        }))
      : [],
  });
const w5Answer = answerOf(Array.from({ length: perBatch }, (_, i) => child(i, i % 25 === 24)));
const request: WorkRequest = {
  requestId: 0,
  kind: {
    $case: 'batch',
    value: {
      settlements: Array.from({ length: perBatch }, (_, i) => ({
        requestId: 1000 + i,
        kind: { $case: 'ack' as const, value: { jobId: jobId(i), attempt: 1, result: undefined } },
      })),
      credit: perBatch,
      stopDelivery: false,
    },
  },
};
if (!encodeWorkRequest(request).equals(WorkRequest.encode(request).finish()))
  throw new Error('the encoders differ');

type Code = 'generated' | 'hand-written';
const cases: Record<string, Record<Code, () => number>> = {
  'decode answer (50 jobs, 50 acks answered)': {
    generated: () => (WorkResponse.decode(answer).kind === undefined ? 0 : 1),
    'hand-written': () => (decodeWorkResponse(answer).kind === undefined ? 0 : 1),
  },
  'decode W5 answer (48 children, 2 collectors of 20 results, 50 acks answered)': {
    generated: () => (WorkResponse.decode(w5Answer).kind === undefined ? 0 : 1),
    'hand-written': () => (decodeWorkResponse(w5Answer).kind === undefined ? 0 : 1),
  },
  'encode request (50 acks, credit)': {
    generated: () => Buffer.from(WorkRequest.encode(request).finish()).length,
    'hand-written': () => encodeWorkRequest(request).length,
  },
};

compareCodecs(
  ['generated', 'hand-written'],
  Object.fromEntries(
    Object.entries(cases).map(([label, c]) => [label, [c.generated, c['hand-written']] as const]),
  ),
  { rounds, batches, perBatch },
);
