/**
 * Random sequences of Produce and Work messages for the stream fuzzer
 * (stream-fuzz.test.ts): valid and invalid messages, each with what the
 * protocol says its answer must be, as far as that is known before sending.
 * Every message is encoded here, so that undecodable bytes and invalid UTF-8
 * can be sent too.
 */
import { status } from '@grpc/grpc-js';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { ProduceRequest } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { WorkRequest, type WorkRequest_Settlement } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { intsFrom } from '../helpers/prng.ts';
import { testJob } from '../helpers/server.ts';

/** The limits the fuzzer's server runs with (small, so that crossing them is cheap). */
export const fuzzLimits = { maxBatchJobs: 8, maxReserveJobs: 8, maxPayloadBytes: 1024 };
/**
 * A queue whose jobs may be large: max_reserve_jobs of them are more than a
 * client takes in one message (4 MiB by default), as in issue 29, item 2.
 */
export const bigQueue = { name: 'big', maxPayloadBytes: 1024 * 1024 };
/**
 * A long allowed_types list (the fuzzer's jobs are of type `t`): a job of
 * another type is refused with a message that must not list all of them.
 */
const allowedTypes = ['t', ...Array.from({ length: 1000 }, (_, i) => `type-${i}-${'x'.repeat(40)}`)];
export const fuzzToml = `
# The fuzzer tests answers, not fsync: without one per commit it runs several times faster.
[server]
durability = "relaxed"
[limits]
max_batch_jobs = ${fuzzLimits.maxBatchJobs}
max_reserve_jobs = ${fuzzLimits.maxReserveJobs}
max_wait_ms = "1s"
[queue_defaults]
max_payload_bytes = ${fuzzLimits.maxPayloadBytes}
allowed_types = [${allowedTypes.map((type) => `"${type}"`).join(', ')}]
[queues.${bigQueue.name}]
max_payload_bytes = ${bigQueue.maxPayloadBytes}
`;

/** How long an oversize string is: far past every limit and the message cap, short enough to send often. */
export const oversizeLength = 64 * 1024;
const oversize = (unit: string) =>
  unit.repeat(Math.ceil(oversizeLength / unit.length)).slice(0, oversizeLength);

/**
 * Jobs every server must refuse, each for one field: a bad or oversize name,
 * an oversize idempotency key or content type, too many metadata entries, a
 * type outside a long allowed_types. Their messages must stay short.
 */
const badJobFields: ((d: Draw) => Partial<EnqueueJob>)[] = [
  () => ({ queue: 'not a name!' }),
  (d) => ({ queue: oversize(d.pick(['a', 'not a name! '])) }),
  (d) => ({ type: oversize(d.pick(['a', 'not a name! '])) }),
  (d) => ({ group: oversize(d.pick(['a', 'not a name! '])) }),
  () => ({ idempotencyKey: oversize('k') }),
  () => ({ contentType: oversize('c') }),
  () => ({
    metadata: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`key ${i}`, 'not a value!'])),
  }),
  () => ({ type: 'not-allowed' }),
];

export type Ending = 'half-close' | 'cancel-at-once' | 'cancel-after-first-answer';

export interface Draw {
  random: () => number;
  int: (min: number, max: number) => number;
  pick: <T>(items: readonly T[]) => T;
  chance: (p: number) => boolean;
}

export function draw(random: () => number): Draw {
  const int = intsFrom(random);
  return {
    random,
    int,
    pick: (items) => items[int(0, items.length - 1)]!,
    chance: (p) => random() < p,
  };
}

const placeholder = 'BADUTF8';

/** Bytes of `message` with the placeholder text replaced by invalid UTF-8 of the same length. */
function withInvalidUtf8(encoded: Uint8Array): Buffer {
  const bytes = Buffer.from(encoded);
  const at = bytes.indexOf(placeholder);
  if (at < 0) throw new Error('no placeholder to corrupt');
  bytes.fill(0xff, at, at + placeholder.length);
  return bytes;
}

function randomBytes(d: Draw): Buffer {
  // Field 1, length-delimited, 127 bytes long, then at most 12 bytes of noise: truncated, so never a
  // valid message of either stream. (A field of the wrong wire type is not enough: decoders skip it
  // as an unknown field, and noise after it decoded as a valid WorkRequest once, seed 1536504123,
  // sequence 10380.)
  return Buffer.from([0x0a, 0x7f, ...Array.from({ length: d.int(0, 12) }, () => d.int(0, 255))]);
}

// ------------------------------------------------------------------ Produce

export interface ProduceStep {
  kind:
    | 'valid'
    | 'empty'
    | 'too-many'
    | 'bad-job'
    | 'big-payload'
    | 'undecodable'
    | 'bad-utf8'
    | 'repeat'
    | 'flow'
    | 'flow-and-jobs';
  bytes: Buffer;
  sequence: number;
  atomic: boolean;
  /** The message carries a flow (all or nothing, answered in `flow`); its keys are its jobs'. */
  flow: boolean;
  /** Idempotency keys of the jobs, in order (empty when the message does not decode). */
  keys: string[];
  /** Index of the one job every server must refuse (bad name, payload too big), or -1. */
  refusedJob: number;
  /** The answer's code the protocol promises. */
  code: status;
}

export function produceSequence(d: Draw, queue: string, tag: string): ProduceStep[] {
  const steps: ProduceStep[] = [];
  let n = 0;
  const job = (fields: Partial<EnqueueJob> = {}): EnqueueJob =>
    testJob(queue, { idempotencyKey: `${tag}-${n++}`, payload: Buffer.from(`${tag}-${n}`), ...fields });
  for (let i = 0, count = d.int(1, 8); i < count; i++) {
    const sequence = i + 1;
    const atomic = d.chance(0.4);
    const kind = d.pick<ProduceStep['kind']>([
      'valid',
      'valid',
      'valid',
      'empty',
      'too-many',
      'bad-job',
      'big-payload',
      'undecodable',
      'bad-utf8',
      'repeat',
      'flow',
      'flow-and-jobs',
    ]);
    const step = (jobs: EnqueueJob[], code: status, refusedJob = -1, bytes?: Buffer): ProduceStep => ({
      kind,
      sequence,
      atomic,
      flow: false,
      keys: jobs.map((j) => j.idempotencyKey),
      refusedJob,
      code,
      bytes: bytes ?? Buffer.from(ProduceRequest.encode({ sequence, jobs, atomic }).finish()),
    });
    switch (kind) {
      case 'valid':
        steps.push(
          step(
            Array.from({ length: d.int(1, 3) }, () => job()),
            status.OK,
          ),
        );
        break;
      case 'empty':
        steps.push(step([], status.INVALID_ARGUMENT));
        break;
      case 'too-many':
        steps.push(
          step(
            Array.from({ length: fuzzLimits.maxBatchJobs + d.int(1, 3) }, () => job()),
            status.RESOURCE_EXHAUSTED,
          ),
        );
        break;
      case 'bad-job':
      case 'big-payload': {
        const jobs = Array.from({ length: d.int(1, 3) }, () => job());
        const at = d.int(0, jobs.length);
        const bad =
          kind === 'bad-job'
            ? job(d.pick(badJobFields)(d))
            : job({ payload: Buffer.alloc(fuzzLimits.maxPayloadBytes + 1) });
        jobs.splice(at, 0, bad);
        steps.push(step(jobs, status.OK, at));
        break;
      }
      case 'undecodable':
        steps.push({ ...step([], status.INVALID_ARGUMENT, -1, randomBytes(d)), sequence: 0 });
        break;
      case 'bad-utf8': {
        const jobs = [job(), job({ type: placeholder })];
        const bytes = withInvalidUtf8(ProduceRequest.encode({ sequence, jobs, atomic }).finish());
        steps.push(step(jobs, status.INVALID_ARGUMENT, -1, bytes));
        break;
      }
      case 'repeat': {
        // The keys of an earlier message: deduplicated, nothing new stored.
        const earlier = steps.filter((s) => s.kind === 'valid');
        const keys = earlier.length === 0 ? [`${tag}-${n++}`] : d.pick(earlier).keys;
        const jobs = keys.map((k) => job({ idempotencyKey: k }));
        steps.push(step(jobs, status.OK));
        break;
      }
      case 'flow':
      case 'flow-and-jobs': {
        // Jobs, one of them maybe too large (refused by index, nothing stored); with jobs beside it the
        // whole message is INVALID_ARGUMENT. No edges: the clean-up purges ready jobs, not waiting ones.
        const jobs = Array.from({ length: d.int(1, 3) }, () => job());
        const refused = d.chance(0.3) ? d.int(0, jobs.length - 1) : -1;
        if (refused >= 0) jobs[refused]!.payload = Buffer.alloc(fuzzLimits.maxPayloadBytes + 1);
        const flow = { jobs: jobs.map((j, k) => ({ name: `j${k}`, job: j, after: [] })) };
        const beside = kind === 'flow' ? [] : [job()];
        const bytes = Buffer.from(
          ProduceRequest.encode({ sequence, jobs: beside, atomic: false, flow }).finish(),
        );
        steps.push({
          ...(kind === 'flow'
            ? step(jobs, status.OK, refused, bytes)
            : step([...jobs, ...beside], status.INVALID_ARGUMENT, -1, bytes)),
          atomic: false,
          flow: true,
        });
        break;
      }
    }
  }
  return steps;
}

// ------------------------------------------------------------------ Work

/** What the fuzzer knows of a job when it writes a settlement for it. */
export type Target =
  | { kind: 'ours'; jobId: string }
  | { kind: 'foreign'; jobId: string; attempt: number; stale: boolean }
  | { kind: 'unknown'; jobId: string }
  | { kind: 'not-an-id'; jobId: string };

export interface WorkStep {
  kind:
    | 'subscribe'
    | 'credit'
    | 'settle'
    | 'batch'
    | 'second-subscribe'
    | 'too-much-credit'
    | 'undecodable'
    | 'no-kind'
    | 'too-many-settlements';
  bytes: Buffer;
  /** Credit this message grants when the server takes it. */
  credit: number;
  /** Settlements it carries: request id, what it names, and its kind. */
  settlements: { requestId: number; target: Target; op: 'ack' | 'nack' | 'extend' }[];
  /** The status that ends the stream at this message, when it breaks the rules. */
  violation: status | undefined;
}

export interface WorkSetup {
  queue: string;
  /** Jobs only this stream can lease (attempt 1 once pushed). */
  ours: string[];
  /** Jobs leased by a unary Reserve before the stream opens. */
  foreign: { jobId: string; attempt: number }[];
}

export function workSequence(d: Draw, setup: WorkSetup): WorkStep[] {
  const steps: WorkStep[] = [];
  let requestId = 1;
  let grantedCredit = 0;
  const encode = (message: WorkRequest) => Buffer.from(WorkRequest.encode(message).finish());
  const target = (): Target => {
    const choice = d.int(0, 9);
    if (choice < 5 && setup.ours.length > 0) return { kind: 'ours', jobId: d.pick(setup.ours) };
    if (choice < 7 && setup.foreign.length > 0) {
      const f = d.pick(setup.foreign);
      const stale = d.chance(0.7);
      return { kind: 'foreign', jobId: f.jobId, attempt: stale ? f.attempt + 1 : f.attempt, stale };
    }
    if (choice < 9) return { kind: 'unknown', jobId: '0190a4c2-0000-7000-8000-00000000f022' };
    return { kind: 'not-an-id', jobId: d.chance(0.5) ? 'not-a-job-id' : oversize('not a job id ') };
  };
  const settlement = () => {
    const t = target();
    const op = d.pick(['ack', 'ack', 'nack', 'extend'] as const);
    const attempt = t.kind === 'foreign' ? t.attempt : 1;
    const kind: WorkRequest_Settlement['kind'] =
      op === 'ack'
        ? { $case: 'ack', value: { jobId: t.jobId, attempt } }
        : op === 'nack'
          ? {
              $case: 'nack',
              value: {
                jobId: t.jobId,
                attempt,
                errorMessage: d.chance(0.8) ? 'fuzz' : oversize('a long error '),
                errorClass: '',
                errorStack: '',
                directive: { $case: 'retryDelayMs', value: 60_000 },
              },
            }
          : { $case: 'extend', value: { jobId: t.jobId, attempt, leaseDurationMs: d.pick([0, 5000]) } };
    return { requestId: requestId++, target: t, op, kind };
  };
  const subscribe = (queues: string[]): WorkRequest => ({
    requestId: 0,
    kind: {
      $case: 'subscribe',
      value: { queues, leaseDurationMs: 60_000, workerId: 'fuzz', batchResponses: d.chance(0.5) },
    },
  });
  const plain = { credit: 0, settlements: [], violation: undefined };

  if (d.chance(0.9)) steps.push({ kind: 'subscribe', bytes: encode(subscribe([setup.queue])), ...plain });
  for (let i = 0, count = d.int(1, 10); i < count; i++) {
    const kind = d.pick<WorkStep['kind']>([
      'credit',
      'credit',
      'settle',
      'settle',
      'settle',
      'batch',
      'batch',
      'second-subscribe',
      'too-much-credit',
      'undecodable',
      'no-kind',
      'too-many-settlements',
    ]);
    const subscribed = steps.some((s) => s.kind === 'subscribe');
    const beforeSubscribe = subscribed ? undefined : status.INVALID_ARGUMENT;
    switch (kind) {
      case 'credit': {
        // Never more in all than the limit: how much is unused when it arrives depends on
        // the jobs pushed meanwhile, so only 'too-much-credit' crosses it (at once).
        const jobs = Math.min(d.int(0, 3), fuzzLimits.maxReserveJobs - grantedCredit);
        steps.push({
          kind,
          bytes: encode({ requestId: 0, kind: { $case: 'credit', value: { jobs } } }),
          credit: jobs,
          settlements: [],
          violation: beforeSubscribe,
        });
        grantedCredit += jobs;
        break;
      }
      case 'too-much-credit':
        steps.push({
          kind,
          bytes: encode({
            requestId: 0,
            kind: { $case: 'credit', value: { jobs: fuzzLimits.maxReserveJobs + 1 } },
          }),
          credit: 0,
          settlements: [],
          violation: status.INVALID_ARGUMENT,
        });
        break;
      case 'settle': {
        const s = settlement();
        steps.push({
          kind,
          bytes: encode({ requestId: s.requestId, kind: s.kind } as WorkRequest),
          credit: 0,
          settlements: [s],
          violation: beforeSubscribe,
        });
        break;
      }
      case 'batch':
      case 'too-many-settlements': {
        const n = kind === 'batch' ? d.int(0, 4) : fuzzLimits.maxBatchJobs + 1;
        const list = Array.from({ length: n }, settlement);
        const credit =
          kind === 'batch' ? Math.min(d.int(0, 2), fuzzLimits.maxReserveJobs - grantedCredit) : 0;
        steps.push({
          kind,
          bytes: encode({
            requestId: 0,
            kind: {
              $case: 'batch',
              value: {
                settlements: list.map(({ requestId: id, kind: k }) => ({ requestId: id, kind: k })),
                credit,
                stopDelivery: false,
              },
            },
          }),
          credit,
          settlements: kind === 'batch' ? list : [],
          violation:
            beforeSubscribe ?? (kind === 'too-many-settlements' ? status.RESOURCE_EXHAUSTED : undefined),
        });
        grantedCredit += credit;
        break;
      }
      case 'second-subscribe':
        steps.push({
          kind,
          bytes: encode(subscribe([setup.queue])),
          ...plain,
          violation: subscribed ? status.INVALID_ARGUMENT : undefined,
        });
        if (!subscribed) steps[steps.length - 1]!.kind = 'subscribe';
        break;
      case 'undecodable':
        steps.push({ kind, bytes: randomBytes(d), ...plain, violation: status.INVALID_ARGUMENT });
        break;
      case 'no-kind':
        steps.push({
          kind,
          bytes: encode({ requestId: 9, kind: undefined }),
          ...plain,
          violation: status.INVALID_ARGUMENT,
        });
        break;
    }
  }
  return steps;
}
