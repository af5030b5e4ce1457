/**
 * The Work stream's answers encoded in one pass over a buffer of the exact
 * size, instead of the generated encoder's (work.ts): that one grows its
 * buffer as it writes, shifts every nested message longer than 127 bytes to
 * widen its length prefix, turns each int64 (three per leased job) into a
 * BigInt, then copies the result twice (`finish()` and `Buffer.from`).
 *
 * The bytes are the generated encoder's, byte for byte (tests/rpc/work-response-codec.test.ts
 * compares them): the same fields, in the same order, the same defaults left
 * out. The shapes a drain sends — jobs (with their dependencies' results),
 * acks' answers, errors — take this path; anything else (cancel and timeout
 * notices, nack/extend/progress answers, a number the generated encoder would
 * refuse) goes to the generated encoder whole, so it answers exactly as before.
 */
import type { DependencyResult, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { WorkResponse, type WorkResponse_Settled } from '../../clients/typescript/src/gen/sepp/v1/work.js';

/** The encoded message, as grpc-js's `responseSerialize` returns it. */
export function encodeWorkResponse(message: WorkResponse): Buffer {
  return encodeDirect(message) ?? Buffer.from(WorkResponse.encode(message).finish());
}

/** Below this many UTF-16 units a string is measured and written by a loop here, above by Node. */
const shortString = 64;

/** The message's bytes, or null when it has a part this encoder leaves to the generated one. */
function encodeDirect(message: WorkResponse): Buffer | null {
  const kind = message.kind;
  if (kind === undefined) return Buffer.alloc(0);
  switch (kind.$case) {
    case 'job': {
      const size = jobSize(kind.value);
      if (size < 0) return null;
      const out = new Writer(1 + varintSize(size) + size);
      out.job(kind.value, 10, size);
      return out.done();
    }
    case 'settled': {
      const size = settledSize(kind.value);
      if (size < 0) return null;
      const out = new Writer(1 + varintSize(size) + size);
      out.settled(kind.value, 18, size);
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
      const out = new Writer(1 + varintSize(body) + body);
      out.tagLength(26, body);
      let at = 0;
      for (const settled of batch.settled) out.settled(settled, 10, sizes[at++]!);
      for (const job of batch.jobs) out.job(job, 18, sizes[at++]!);
      return out.done();
    }
    default:
      return null;
  }
}

/** Bytes of a Settled's body; -1 when it is left to the generated encoder. */
function settledSize(settled: WorkResponse_Settled): number {
  const { requestId, code, message, result, errorCode } = settled;
  if (!isUint64(requestId) || !isInt32(code)) return -1;
  if (result !== undefined && result.$case !== 'ack') return -1;
  let n = 0;
  if (requestId !== 0) n += 1 + varintSize(requestId);
  if (code !== 0) n += 1 + int32Size(code);
  if (message !== '') n += stringFieldSize(1, message);
  if (result !== undefined) n += 2; // An AckResponse has no fields: tag and a zero length.
  if (errorCode !== '') n += stringFieldSize(1, errorCode);
  return n;
}

/** Bytes of a LeasedJob's body; -1 when it is left to the generated encoder. */
function jobSize(job: LeasedJob): number {
  const { priority, attempt, maxAttempts, leaseDeadlineMs, enqueuedAtMs, runAtMs, timeoutAtMs } = job;
  if (!isInt32(priority) || !isInt32(attempt) || !isInt32(maxAttempts)) return -1;
  if (!isInt64(leaseDeadlineMs) || !isInt64(enqueuedAtMs) || !isInt64(runAtMs) || !isInt64(timeoutAtMs)) {
    return -1;
  }
  let n = 0;
  if (job.jobId !== '') n += stringFieldSize(1, job.jobId);
  if (job.queue !== '') n += stringFieldSize(1, job.queue);
  if (job.type !== '') n += stringFieldSize(1, job.type);
  if (job.payload.length !== 0) n += 1 + varintSize(job.payload.length) + job.payload.length;
  if (job.contentType !== '') n += stringFieldSize(1, job.contentType);
  if (priority !== 0) n += 1 + int32Size(priority);
  if (attempt !== 0) n += 1 + int32Size(attempt);
  if (maxAttempts !== 0) n += 1 + int32Size(maxAttempts);
  if (leaseDeadlineMs !== 0) n += 1 + int64Size(leaseDeadlineMs);
  if (enqueuedAtMs !== 0) n += 1 + int64Size(enqueuedAtMs);
  if (runAtMs !== 0) n += 1 + int64Size(runAtMs);
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
  if (timeoutAtMs !== 0) n += 2 + int64Size(timeoutAtMs);
  return n;
}

/** Bytes of a DependencyResult's body; -1 when it is left to the generated encoder. */
function dependencySize(dependency: DependencyResult): number {
  const { jobId, name, state, result, resultContentType, resultOmitted } = dependency;
  if (!isInt32(state) || typeof resultOmitted !== 'boolean') return -1;
  let n = 0;
  if (jobId !== '') n += stringFieldSize(1, jobId);
  if (name !== '') n += stringFieldSize(1, name);
  if (state !== 0) n += 1 + int32Size(state);
  if (result.length !== 0) n += 1 + varintSize(result.length) + result.length;
  if (resultContentType !== '') n += stringFieldSize(1, resultContentType);
  if (resultOmitted) n += 2;
  return n;
}

function entrySize(key: string, value: string): number {
  return (key === '' ? 0 : stringFieldSize(1, key)) + (value === '' ? 0 : stringFieldSize(1, value));
}

function stringFieldSize(tagBytes: number, value: string): number {
  const n = utf8Size(value);
  return tagBytes + varintSize(n) + n;
}

/** UTF-8 bytes of a string, lone surrogates counted as U+FFFD (3 bytes), as TextEncoder writes them. */
function utf8Size(value: string): number {
  if (value.length > shortString) return Buffer.byteLength(value, 'utf8');
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (isPair(value, i, c)) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

function isPair(value: string, i: number, c: number): boolean {
  return (c & 0xfc00) === 0xd800 && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
}

/** Bytes of a non-negative safe integer as a varint. */
function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  if (value < 2 ** 35) return 5;
  if (value < 2 ** 42) return 6;
  if (value < 2 ** 49) return 7;
  return 8; // Safe integers end below 2^53.
}

/** A negative int32 or int64 is sign-extended to ten bytes. */
function int32Size(value: number): number {
  return value < 0 ? 10 : varintSize(value);
}
const int64Size = int32Size;

function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;
}
function isInt64(value: number): boolean {
  return Number.isSafeInteger(value);
}
function isUint64(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** Writes into a buffer of the size the sizes above computed. */
class Writer {
  private readonly buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  done(): Buffer {
    if (this.pos !== this.buf.length) {
      throw new Error(`work-response-codec: wrote ${this.pos} bytes of ${this.buf.length}`);
    }
    return this.buf;
  }

  tagLength(tag: number, length: number): void {
    this.varint(tag);
    this.varint(length);
  }

  /** A Settled of `size` bytes (settledSize) as field `tag`. */
  settled(settled: WorkResponse_Settled, tag: number, size: number): void {
    this.tagLength(tag, size);
    const { requestId, code, message, result, errorCode } = settled;
    if (requestId !== 0) {
      this.buf[this.pos++] = 8;
      this.varint(requestId);
    }
    if (code !== 0) {
      this.buf[this.pos++] = 16;
      this.signed(code);
    }
    if (message !== '') this.string(26, message);
    if (result !== undefined) {
      this.buf[this.pos++] = 34;
      this.buf[this.pos++] = 0;
    }
    if (errorCode !== '') this.string(58, errorCode);
  }

  /** A LeasedJob of `size` bytes (jobSize) as field `tag`. */
  job(job: LeasedJob, tag: number, size: number): void {
    this.tagLength(tag, size);
    if (job.jobId !== '') this.string(10, job.jobId);
    if (job.queue !== '') this.string(18, job.queue);
    if (job.type !== '') this.string(26, job.type);
    if (job.payload.length !== 0) this.bytesField(34, job.payload);
    if (job.contentType !== '') this.string(42, job.contentType);
    if (job.priority !== 0) this.signedField(48, job.priority);
    if (job.attempt !== 0) this.signedField(56, job.attempt);
    if (job.maxAttempts !== 0) this.signedField(64, job.maxAttempts);
    if (job.leaseDeadlineMs !== 0) this.signedField(72, job.leaseDeadlineMs);
    if (job.enqueuedAtMs !== 0) this.signedField(80, job.enqueuedAtMs);
    if (job.runAtMs !== 0) this.signedField(88, job.runAtMs);
    for (const key in job.metadata) {
      const value = job.metadata[key]!;
      this.tagLength(98, entrySize(key, value));
      if (key !== '') this.string(10, key);
      if (value !== '') this.string(18, value);
    }
    if (job.traceparent !== '') this.string(106, job.traceparent);
    if (job.tracestate !== '') this.string(114, job.tracestate);
    if (job.idempotencyKey !== '') this.string(122, job.idempotencyKey);
    if (job.lastError !== '') this.string(130, job.lastError);
    if (job.group !== '') this.string(162, job.group);
    for (const dependency of job.dependencyResults) this.dependency(dependency);
    if (job.timeoutAtMs !== 0) this.signedField(560, job.timeoutAtMs);
  }

  private dependency(dependency: DependencyResult): void {
    this.tagLength(402, dependencySize(dependency));
    const { jobId, name, state, result, resultContentType, resultOmitted } = dependency;
    if (jobId !== '') this.string(10, jobId);
    if (name !== '') this.string(18, name);
    if (state !== 0) this.signedField(24, state);
    if (result.length !== 0) this.bytesField(34, result);
    if (resultContentType !== '') this.string(42, resultContentType);
    if (resultOmitted) {
      this.buf[this.pos++] = 48;
      this.buf[this.pos++] = 1;
    }
  }

  private bytesField(tag: number, bytes: Uint8Array): void {
    this.tagLength(tag, bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  private signedField(tag: number, value: number): void {
    this.varint(tag);
    this.signed(value);
  }

  /** An int32 or int64 (a safe integer): negative ones as ten bytes of two's complement. */
  private signed(value: number): void {
    if (value >= 0) {
      this.varint(value);
      return;
    }
    let bits = BigInt.asUintN(64, BigInt(value));
    for (let i = 0; i < 9; i++) {
      this.buf[this.pos++] = Number(bits & 0x7fn) | 0x80;
      bits >>= 7n;
    }
    this.buf[this.pos++] = Number(bits);
  }

  /** A non-negative safe integer: the low 28 bits by 7, then what is above them. */
  private varint(value: number): void {
    const buf = this.buf;
    if (value < 0x80) {
      buf[this.pos++] = value;
      return;
    }
    if (value > 0xfffffff) {
      // Above 2^28: seven bits at a time from the low 28, then the high part (an integer below 2^25).
      let low = value % 0x10000000;
      for (let i = 0; i < 4; i++) {
        buf[this.pos++] = (low & 0x7f) | 0x80;
        low >>>= 7;
      }
      value = Math.floor(value / 0x10000000);
    }
    while (value > 0x7f) {
      buf[this.pos++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    buf[this.pos++] = value;
  }

  /** A string field (tag up to two bytes), as UTF-8 with lone surrogates as U+FFFD. */
  private string(tag: number, value: string): void {
    this.varint(tag);
    const buf = this.buf;
    if (value.length > shortString) {
      const bytes = Buffer.byteLength(value, 'utf8');
      this.varint(bytes);
      this.pos += buf.write(value, this.pos, bytes, 'utf8');
      return;
    }
    // At most 64 × 3 bytes: a one- or two-byte length; the loop writes after it.
    const lengthAt = this.pos;
    const wide = value.length * 3 > 127 && utf8Size(value) > 127;
    let pos = lengthAt + (wide ? 2 : 1);
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c < 0x80) buf[pos++] = c;
      else if (c < 0x800) {
        buf[pos++] = 0xc0 | (c >> 6);
        buf[pos++] = 0x80 | (c & 0x3f);
      } else if (isPair(value, i, c)) {
        const point = 0x10000 + ((c - 0xd800) << 10) + (value.charCodeAt(++i) - 0xdc00);
        buf[pos++] = 0xf0 | (point >> 18);
        buf[pos++] = 0x80 | ((point >> 12) & 0x3f);
        buf[pos++] = 0x80 | ((point >> 6) & 0x3f);
        buf[pos++] = 0x80 | (point & 0x3f);
      } else {
        const unit = (c & 0xf800) === 0xd800 ? 0xfffd : c; // A lone surrogate.
        buf[pos++] = 0xe0 | (unit >> 12);
        buf[pos++] = 0x80 | ((unit >> 6) & 0x3f);
        buf[pos++] = 0x80 | (unit & 0x3f);
      }
    }
    const bytes = pos - lengthAt - (wide ? 2 : 1);
    if (wide) {
      buf[lengthAt] = (bytes & 0x7f) | 0x80;
      buf[lengthAt + 1] = bytes >>> 7;
    } else buf[lengthAt] = bytes;
    this.pos = pos;
  }
}
