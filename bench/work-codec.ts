/**
 * CPU per job of the streams' codecs on W1's shapes: the Work stream's answer (a
 * batch of 50 leased jobs and 50 acks' answers) and request (a batch of 50 acks with
 * its credit, then the UTF-8 check the generated decoder needs; 45 acks and 5 nacks),
 * and the Produce stream's answer (50 accepted jobs); the generated code against src/rpc's
 * work-response-codec.ts, work-request-codec.ts and produce-response-codec.ts,
 * interleaved, medians of --rounds.
 *
 *   npx tsx bench/work-codec.ts [--rounds 15] [--batches 2000]
 */
import { parseArgs } from 'node:util';
import { LeasedJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { ProduceResponse } from '../clients/typescript/src/gen/sepp/v1/produce.js';
import { WorkRequest, WorkResponse } from '../clients/typescript/src/gen/sepp/v1/work.js';
import { descriptorSetBase64 } from '../src/rpc/gen/descriptor-set.js';
import { encodeProduceResponse } from '../src/rpc/produce-response-codec.ts';
import { Utf8Fields } from '../src/rpc/utf8-fields.ts';
import { decodeWorkRequestDirect } from '../src/rpc/work-request-codec.ts';
import { encodeWorkResponse } from '../src/rpc/work-response-codec.ts';
import { compareCodecs } from './lib/codec-ab.ts';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '15' }, batches: { type: 'string', default: '2000' } },
});
const rounds = Number(args.rounds);
const batches = Number(args.batches);
const perBatch = 50;

const now = Date.now();
/** A leased job as W1 hands it out (the fields not named here at their defaults). */
const job = (i: number): LeasedJob =>
  LeasedJob.fromPartial({
    jobId: `0193a6f2-7c1e-7${String(i).padStart(3, '0')}-8c3d-1b2e3f4a5b6c`,
    queue: 'w1',
    type: 'noop',
    payload: Buffer.from(JSON.stringify({ n: i, pad: 'x'.repeat(64) })),
    contentType: 'application/json',
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: now + 30_000,
    enqueuedAtMs: now - 5_000,
    runAtMs: now - 5_000,
  });
const message: WorkResponse = {
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
      jobs: Array.from({ length: perBatch }, (_, i) => job(i)),
      cancels: [],
      timeouts: [],
    },
  },
};

/** A batch of 50 settlements with their credit: acks, and a nack every `nackEvery`th (0: none). */
function settlements(nackEvery: number): Buffer {
  return Buffer.from(
    WorkRequest.encode({
      requestId: 0,
      kind: {
        $case: 'batch',
        value: {
          settlements: Array.from({ length: perBatch }, (_, i) => ({
            requestId: 1000 + i,
            kind:
              nackEvery > 0 && i % nackEvery === nackEvery - 1
                ? {
                    $case: 'nack' as const,
                    value: {
                      jobId: job(i).jobId,
                      attempt: 1,
                      errorMessage: 'connection refused',
                      directive: undefined,
                      errorClass: 'Error',
                      errorStack: 'Error: connection refused\n    at handler (/app/worker.js:12:9)',
                    },
                  }
                : { $case: 'ack' as const, value: { jobId: job(i).jobId, attempt: 1, result: undefined } },
          })),
          credit: perBatch,
          stopDelivery: false,
        },
      },
    }).finish(),
  );
}
const request = settlements(0);
/** W1's request when one job in ten failed: 45 acks and 5 nacks. */
const withNacks = settlements(10);
const utf8 = new Utf8Fields(Buffer.from(descriptorSetBase64, 'base64'), 'sepp.v1.QueueService');
const workPath = '/sepp.v1.QueueService/Work';

/** The Produce stream's answer to a message of 50 jobs, all accepted. */
const produced: ProduceResponse = {
  sequence: 7,
  code: 0,
  message: '',
  results: Array.from({ length: perBatch }, (_, i) => ({
    outcome: {
      $case: 'accepted' as const,
      value: { jobId: job(i).jobId, deduplicated: false, debounced: false },
    },
  })),
  atomic: undefined,
  retry: '',
};

type Code = 'generated' | 'direct';
const cases: Record<string, Record<Code, () => number>> = {
  'encode answer': {
    generated: () => Buffer.from(WorkResponse.encode(message).finish()).length,
    direct: () => encodeWorkResponse(message).length,
  },
  'decode request': {
    generated: () => {
      const decoded = WorkRequest.decode(request);
      return utf8.firstInvalid(workPath, request) === null && decoded.kind !== undefined ? 1 : 0;
    },
    direct: () => (decodeWorkRequestDirect(request)?.kind !== undefined ? 1 : 0),
  },
  'decode request with nacks': {
    generated: () => {
      const decoded = WorkRequest.decode(withNacks);
      return utf8.firstInvalid(workPath, withNacks) === null && decoded.kind !== undefined ? 1 : 0;
    },
    direct: () => (decodeWorkRequestDirect(withNacks)?.kind !== undefined ? 1 : 0),
  },
  'encode Produce answer': {
    generated: () => Buffer.from(ProduceResponse.encode(produced).finish()).length,
    direct: () => encodeProduceResponse(produced).length,
  },
};
if (
  !cases['encode answer']!.generated() ||
  !encodeWorkResponse(message).equals(WorkResponse.encode(message).finish()) ||
  !encodeProduceResponse(produced).equals(ProduceResponse.encode(produced).finish())
) {
  throw new Error('the encoders differ');
}

compareCodecs(
  ['generated', 'direct'],
  Object.fromEntries(Object.entries(cases).map(([label, c]) => [label, [c.generated, c.direct] as const])),
  { rounds, batches, perBatch },
);
