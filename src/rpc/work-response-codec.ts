/**
 * The Work stream's answers encoded in one pass over a buffer of the exact
 * size, instead of the generated encoder's (work.ts): that one grows its
 * buffer as it writes, shifts every nested message longer than 127 bytes to
 * widen its length prefix, turns each int64 (three per leased job) into a
 * BigInt, then copies the result twice (`finish()` and `Buffer.from`).
 *
 * The bytes are the generated encoder's, byte for byte (tests/rpc/work-response-codec.test.ts
 * compares them): the same fields, in the same order, the same defaults left
 * out. The shapes a drain sends — jobs (with their dependencies' results and batch),
 * acks' answers, errors — take this path; anything else (cancel and timeout
 * notices, nack/extend/progress answers, a number the generated encoder would
 * refuse) goes to the generated encoder whole, so it answers exactly as before.
 */
import type { DependencyResult, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { WorkResponse, type WorkResponse_Settled } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import {
  isInt32,
  isInt64,
  isUint64,
  signedSize,
  stringFieldSize,
  varintSize,
  WireWriter,
} from './wire-writer.ts';

/** The encoded message, as grpc-js's `responseSerialize` returns it. */
export function encodeWorkResponse(message: WorkResponse): Buffer {
  return encodeDirect(message) ?? Buffer.from(WorkResponse.encode(message).finish());
}

/** The message's bytes, or null when it has a part this encoder leaves to the generated one. */
function encodeDirect(message: WorkResponse): Buffer | null {
  const kind = message.kind;
  if (kind === undefined) return Buffer.alloc(0);
  switch (kind.$case) {
    case 'job': {
      const size = jobSize(kind.value);
      if (size < 0) return null;
      const out = new WireWriter(1 + varintSize(size) + size);
      writeJob(out, kind.value, 10, size);
      return out.done();
    }
    case 'settled': {
      const size = settledSize(kind.value);
      if (size < 0) return null;
      const out = new WireWriter(1 + varintSize(size) + size);
      writeSettled(out, kind.value, 18, size);
      return out.done();
    }
    case 'batch': {
      const batch = kind.value;
      if (batch.cancels.length > 0 || batch.timeouts.length > 0) return null;
      const sizes: number[] = [];
      let body = 0;
      for (const settled of batch.settled) {
        const n = settledSize(settled);
        if (n < 0) return null;
        sizes.push(n);
        body += 1 + varintSize(n) + n;
      }
      for (const job of batch.jobs) {
        const n = jobSize(job);
        if (n < 0) return null;
        sizes.push(n);
        body += 1 + varintSize(n) + n;
      }
      const out = new WireWriter(1 + varintSize(body) + body);
      out.tagLength(26, body);
      let at = 0;
      for (const settled of batch.settled) writeSettled(out, settled, 10, sizes[at++]!);
      for (const job of batch.jobs) writeJob(out, job, 18, sizes[at++]!);
      return out.done();
    }
    default:
      return null;
  }
}

/** Bytes of a Settled's body; -1 when it is left to the generated encoder. */
function settledSize(settled: WorkResponse_Settled): number {
  const { requestId, code, message, result, errorCode, retry } = settled;
  if (!isUint64(requestId) || !isInt32(code)) return -1;
  if (result !== undefined && result.$case !== 'ack') return -1;
  let n = 0;
  if (requestId !== 0) n += 1 + varintSize(requestId);
  if (code !== 0) n += 1 + signedSize(code);
  if (message !== '') n += stringFieldSize(1, message);
  if (result !== undefined) n += 2; // An AckResponse has no fields: tag and a zero length.
  if (errorCode !== '') n += stringFieldSize(1, errorCode);
  if (retry !== '') n += stringFieldSize(1, retry);
  return n;
}

/** Bytes of a LeasedJob's body; -1 when it is left to the generated encoder. */
function jobSize(job: LeasedJob): number {
  const { priority, attempt, maxAttempts, leaseDeadlineMs, enqueuedAtMs, runAtMs, timeoutAtMs, flowLimited } =
    job;
  if (!isInt32(priority) || !isInt32(attempt) || !isInt32(maxAttempts) || typeof flowLimited !== 'boolean') {
    return -1;
  }
  if (!isInt64(leaseDeadlineMs) || !isInt64(enqueuedAtMs) || !isInt64(runAtMs) || !isInt64(timeoutAtMs)) {
    return -1;
  }
  let n = 0;
  if (job.jobId !== '') n += stringFieldSize(1, job.jobId);
  if (job.queue !== '') n += stringFieldSize(1, job.queue);
  if (job.type !== '') n += stringFieldSize(1, job.type);
  if (job.payload.length !== 0) n += 1 + varintSize(job.payload.length) + job.payload.length;
  if (job.contentType !== '') n += stringFieldSize(1, job.contentType);
  if (priority !== 0) n += 1 + signedSize(priority);
  if (attempt !== 0) n += 1 + signedSize(attempt);
  if (maxAttempts !== 0) n += 1 + signedSize(maxAttempts);
  if (leaseDeadlineMs !== 0) n += 1 + signedSize(leaseDeadlineMs);
  if (enqueuedAtMs !== 0) n += 1 + signedSize(enqueuedAtMs);
  if (runAtMs !== 0) n += 1 + signedSize(runAtMs);
  for (const key in job.metadata) {
    const entry = entrySize(key, job.metadata[key]!);
    n += 1 + varintSize(entry) + entry;
  }
  if (job.traceparent !== '') n += stringFieldSize(1, job.traceparent);
  if (job.tracestate !== '') n += stringFieldSize(1, job.tracestate);
  if (job.idempotencyKey !== '') n += stringFieldSize(1, job.idempotencyKey);
  if (job.lastError !== '') n += stringFieldSize(2, job.lastError);
  if (job.group !== '') n += stringFieldSize(2, job.group);
  for (const dependency of job.dependencyResults) {
    const size = dependencySize(dependency);
    if (size < 0) return -1;
    n += 2 + varintSize(size) + size;
  }
  if (job.batchId !== '') n += stringFieldSize(2, job.batchId);
  if (job.leaseToken !== '') n += stringFieldSize(2, job.leaseToken);
  if (timeoutAtMs !== 0) n += 2 + signedSize(timeoutAtMs);
  if (flowLimited) n += 3;
  return n;
}

/** Bytes of a DependencyResult's body; -1 when it is left to the generated encoder. */
function dependencySize(dependency: DependencyResult): number {
  const { jobId, name, state, result, resultContentType, resultOmitted } = dependency;
  if (!isInt32(state) || typeof resultOmitted !== 'boolean') return -1;
  let n = 0;
  if (jobId !== '') n += stringFieldSize(1, jobId);
  if (name !== '') n += stringFieldSize(1, name);
  if (state !== 0) n += 1 + signedSize(state);
  if (result.length !== 0) n += 1 + varintSize(result.length) + result.length;
  if (resultContentType !== '') n += stringFieldSize(1, resultContentType);
  if (resultOmitted) n += 2;
  return n;
}

function entrySize(key: string, value: string): number {
  return (key === '' ? 0 : stringFieldSize(1, key)) + (value === '' ? 0 : stringFieldSize(1, value));
}

/** A Settled of `size` bytes (settledSize) as field `tag`. */
function writeSettled(out: WireWriter, settled: WorkResponse_Settled, tag: number, size: number): void {
  out.tagLength(tag, size);
  const { requestId, code, message, result, errorCode, retry } = settled;
  if (requestId !== 0) {
    out.byte(8);
    out.varint(requestId);
  }
  if (code !== 0) out.signedField(16, code);
  if (message !== '') out.string(26, message);
  if (result !== undefined) out.tagLength(34, 0); // An AckResponse has no fields.
  if (errorCode !== '') out.string(58, errorCode);
  if (retry !== '') out.string(74, retry);
}

/** A LeasedJob of `size` bytes (jobSize) as field `tag`. */
function writeJob(out: WireWriter, job: LeasedJob, tag: number, size: number): void {
  out.tagLength(tag, size);
  if (job.jobId !== '') out.string(10, job.jobId);
  if (job.queue !== '') out.string(18, job.queue);
  if (job.type !== '') out.string(26, job.type);
  if (job.payload.length !== 0) out.bytesField(34, job.payload);
  if (job.contentType !== '') out.string(42, job.contentType);
  if (job.priority !== 0) out.signedField(48, job.priority);
  if (job.attempt !== 0) out.signedField(56, job.attempt);
  if (job.maxAttempts !== 0) out.signedField(64, job.maxAttempts);
  if (job.leaseDeadlineMs !== 0) out.signedField(72, job.leaseDeadlineMs);
  if (job.enqueuedAtMs !== 0) out.signedField(80, job.enqueuedAtMs);
  if (job.runAtMs !== 0) out.signedField(88, job.runAtMs);
  for (const key in job.metadata) {
    const value = job.metadata[key]!;
    out.tagLength(98, entrySize(key, value));
    if (key !== '') out.string(10, key);
    if (value !== '') out.string(18, value);
  }
  if (job.traceparent !== '') out.string(106, job.traceparent);
  if (job.tracestate !== '') out.string(114, job.tracestate);
  if (job.idempotencyKey !== '') out.string(122, job.idempotencyKey);
  if (job.lastError !== '') out.string(130, job.lastError);
  if (job.group !== '') out.string(162, job.group);
  for (const dependency of job.dependencyResults) writeDependency(out, dependency);
  if (job.batchId !== '') out.string(410, job.batchId);
  if (job.leaseToken !== '') out.string(418, job.leaseToken);
  if (job.timeoutAtMs !== 0) out.signedField(560, job.timeoutAtMs);
  if (job.flowLimited) out.signedField(568, 1);
}

function writeDependency(out: WireWriter, dependency: DependencyResult): void {
  out.tagLength(402, dependencySize(dependency));
  const { jobId, name, state, result, resultContentType, resultOmitted } = dependency;
  if (jobId !== '') out.string(10, jobId);
  if (name !== '') out.string(18, name);
  if (state !== 0) out.signedField(24, state);
  if (result.length !== 0) out.bytesField(34, result);
  if (resultContentType !== '') out.string(42, resultContentType);
  if (resultOmitted) {
    out.byte(48);
    out.byte(1);
  }
}
