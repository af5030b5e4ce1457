/**
 * The Work stream's messages on the Worker's hot path, coded by hand: the
 * server's answers (a batch of settled answers and leased jobs) decoded in one
 * pass with no reader object, BigInt or TextDecoder per field, and a batch of
 * acks with its credit encoded into one buffer. Everything else goes through
 * the generated code (gen/sepp/v1/work.ts), and the result is the generated
 * code's, field for field (tests/client/work-codec.test.ts compares them).
 *
 * The decoder takes what the server writes: known fields with their wire
 * types, numbers in their range (a negative int32 or int64, ten bytes, is not
 * taken), a field given twice replacing the first as in the generated decoder.
 * The parts that are rare on the hot path (a job's metadata, a nack's or
 * extend's answer, cancel and timeout notices) are read by the generated
 * decoder of their own message. Anything else (an unknown
 * field, bytes that end early) decodes the whole message again with the
 * generated decoder, which answers as before. The encoder takes a batch of
 * acks alone (a nack, extend or progress report in it, or any other kind of
 * request, is encoded by the generated code).
 */
import {
  type DependencyResult,
  type JobResult,
  type LeasedJob,
  LeasedJob_MetadataEntry,
} from './gen/sepp/v1/job.js';
import {
  AckResponse,
  ExtendResponse,
  NackResponse,
  ReportProgressResponse,
  WorkRequest,
  type WorkRequest_Settlement,
  WorkResponse,
  type WorkResponse_Batch,
  WorkResponse_CancelNotice,
  type WorkResponse_Settled,
  WorkResponse_TimeoutNotice,
} from './gen/sepp/v1/work.js';

/** Thrown inside the decoder to give up; caught at its door. */
const notTaken = Symbol('not taken by the hand-written decoder');

/** A Work stream answer from its bytes (gRPC's deserializer). */
export function decodeWorkResponse(bytes: Buffer): WorkResponse {
  return decodeWorkResponseDirect(bytes) ?? WorkResponse.decode(bytes);
}

/** The answer, or undefined when the hand-written decoder does not take its bytes (see the top). */
export function decodeWorkResponseDirect(bytes: Buffer): WorkResponse | undefined {
  try {
    return new Reader(bytes).workResponse();
  } catch (error) {
    if (error === notTaken) return undefined;
    throw error;
  }
}

class Reader {
  private pos = 0;

  constructor(private readonly bytes: Buffer) {}

  workResponse(): WorkResponse {
    const end = this.bytes.length;
    let kind: WorkResponse['kind'];
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 26) kind = { $case: 'batch', value: this.batch(this.length(end)) };
      else if (tag === 10) kind = { $case: 'job', value: this.job(this.length(end)) };
      else if (tag === 18) kind = { $case: 'settled', value: this.settled(this.length(end)) };
      else if (tag === 34) kind = { $case: 'cancel', value: WorkResponse_CancelNotice.decode(this.sub(end)) };
      else if (tag === 562)
        kind = { $case: 'timeout', value: WorkResponse_TimeoutNotice.decode(this.sub(end)) };
      else throw notTaken;
    }
    return { kind };
  }

  private batch(end: number): WorkResponse_Batch {
    const value: WorkResponse_Batch = { settled: [], jobs: [], cancels: [], timeouts: [] };
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10) value.settled.push(this.settled(this.length(end)));
      else if (tag === 18) value.jobs.push(this.job(this.length(end)));
      else if (tag === 26) value.cancels.push(WorkResponse_CancelNotice.decode(this.sub(end)));
      else if (tag === 562) value.timeouts.push(WorkResponse_TimeoutNotice.decode(this.sub(end)));
      else throw notTaken;
    }
    this.at(end);
    return value;
  }

  private settled(end: number): WorkResponse_Settled {
    const value: WorkResponse_Settled = {
      requestId: 0,
      code: 0,
      message: '',
      result: undefined,
      errorCode: '',
      retry: '',
    };
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 8) value.requestId = this.uint53(end);
      else if (tag === 16) value.code = this.int32(end);
      else if (tag === 26) value.message = this.text(this.length(end));
      else if (tag === 34) value.result = { $case: 'ack', value: this.ackResponse(end) };
      else if (tag === 42) value.result = { $case: 'nack', value: NackResponse.decode(this.sub(end)) };
      else if (tag === 50) value.result = { $case: 'extend', value: ExtendResponse.decode(this.sub(end)) };
      else if (tag === 66)
        value.result = { $case: 'progress', value: ReportProgressResponse.decode(this.sub(end)) };
      else if (tag === 58) value.errorCode = this.text(this.length(end));
      else if (tag === 74) value.retry = this.text(this.length(end));
      else throw notTaken;
    }
    this.at(end);
    return value;
  }

  /** An ack's answer: empty (made here, as the generated decoder makes it), else that decoder's. */
  private ackResponse(end: number): AckResponse {
    const bytes = this.sub(end);
    return bytes.length === 0 ? {} : AckResponse.decode(bytes);
  }

  private job(end: number): LeasedJob {
    const job: LeasedJob = {
      jobId: '',
      queue: '',
      type: '',
      payload: emptyPayload(),
      contentType: '',
      priority: 0,
      attempt: 0,
      maxAttempts: 0,
      leaseDeadlineMs: 0,
      enqueuedAtMs: 0,
      runAtMs: 0,
      metadata: {},
      traceparent: '',
      tracestate: '',
      idempotencyKey: '',
      lastError: '',
      group: '',
      dependencyResults: [],
      batchId: '',
      leaseToken: '',
      timeoutAtMs: 0,
      flowLimited: false,
    };
    while (this.pos < end) {
      const tag = this.varint(end);
      switch (tag) {
        case 10:
          job.jobId = this.text(this.length(end));
          break;
        case 18:
          job.queue = this.text(this.length(end));
          break;
        case 26:
          job.type = this.text(this.length(end));
          break;
        case 34:
          job.payload = this.copy(this.length(end));
          break;
        case 42:
          job.contentType = this.text(this.length(end));
          break;
        case 48:
          job.priority = this.int32(end);
          break;
        case 56:
          job.attempt = this.int32(end);
          break;
        case 64:
          job.maxAttempts = this.int32(end);
          break;
        case 72:
          job.leaseDeadlineMs = this.uint53(end);
          break;
        case 80:
          job.enqueuedAtMs = this.uint53(end);
          break;
        case 88:
          job.runAtMs = this.uint53(end);
          break;
        case 98: {
          const entry = LeasedJob_MetadataEntry.decode(this.sub(end));
          if (entry.value !== undefined) job.metadata[entry.key] = entry.value;
          break;
        }
        case 106:
          job.traceparent = this.text(this.length(end));
          break;
        case 114:
          job.tracestate = this.text(this.length(end));
          break;
        case 122:
          job.idempotencyKey = this.text(this.length(end));
          break;
        case 130:
          job.lastError = this.text(this.length(end));
          break;
        case 162:
          job.group = this.text(this.length(end));
          break;
        case 402:
          job.dependencyResults.push(this.dependencyResult(this.length(end)));
          break;
        case 410:
          job.batchId = this.text(this.length(end));
          break;
        case 418:
          job.leaseToken = this.text(this.length(end));
          break;
        case 560:
          job.timeoutAtMs = this.uint53(end);
          break;
        case 568:
          job.flowLimited = this.varint(end) !== 0;
          break;
        default:
          throw notTaken;
      }
    }
    this.at(end);
    return job;
  }

  /** What a collector's dependency ended with (W5's collectors carry ~20 each). */
  private dependencyResult(end: number): DependencyResult {
    const value: DependencyResult = {
      jobId: '',
      name: '',
      state: 0,
      result: emptyPayload(),
      resultContentType: '',
      resultOmitted: false,
    };
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10) value.jobId = this.text(this.length(end));
      else if (tag === 18) value.name = this.text(this.length(end));
      else if (tag === 24) value.state = this.int32(end);
      else if (tag === 34) value.result = this.copy(this.length(end));
      else if (tag === 42) value.resultContentType = this.text(this.length(end));
      else if (tag === 48) value.resultOmitted = this.varint(end) !== 0;
      else throw notTaken;
    }
    this.at(end);
    return value;
  }

  /** Bytes up to `stop`, copied as the generated decoder copies them: a job must not hold the whole message. */
  private copy(stop: number): Buffer {
    const bytes = Buffer.from(this.bytes.subarray(this.pos, stop));
    this.pos = stop;
    return bytes;
  }

  /** A length-delimited field's end, checked against its message's. */
  private length(end: number): number {
    const length = this.varint(end);
    const stop = this.pos + length;
    if (stop > end) throw notTaken;
    return stop;
  }

  /** A length-delimited field's bytes (for a generated decoder), the position past them. */
  private sub(end: number): Buffer {
    const stop = this.length(end);
    const start = this.pos;
    this.pos = stop;
    return this.bytes.subarray(start, stop);
  }

  private at(end: number): void {
    if (this.pos !== end) throw notTaken;
  }

  /** Text up to `stop`: ASCII read directly, anything else by the generated decoder's TextDecoder. */
  private text(stop: number): string {
    const { bytes } = this;
    const start = this.pos;
    this.pos = stop;
    for (let i = start; i < stop; i++) {
      if (bytes[i]! > 0x7f) return utf8.decode(bytes.subarray(start, stop));
    }
    return bytes.toString('latin1', start, stop);
  }

  /** A varint of at most 32 bits (tags, lengths, int32 fields), unsigned. */
  private varint(end: number): number {
    const { bytes } = this;
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= end) throw notTaken;
      const byte = bytes[this.pos++]!;
      if (shift === 28 && byte > 0x0f) throw notTaken;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    throw notTaken;
  }

  /** An int32 that is not negative (a negative one takes ten bytes: not taken). */
  private int32(end: number): number {
    const value = this.varint(end);
    if (value > 0x7fffffff) throw notTaken;
    return value;
  }

  /** An int64 or uint64 from 0 to 2^53 - 1, as a number. */
  private uint53(end: number): number {
    const { bytes } = this;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.pos >= end) throw notTaken;
      const byte = bytes[this.pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (value > Number.MAX_SAFE_INTEGER) throw notTaken;
        return value;
      }
      scale *= 128;
    }
    throw notTaken;
  }
}

/** As @bufbuild/protobuf's reader decodes a string that is not ASCII: U+FFFD for invalid bytes, a BOM kept. */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A new empty payload (or result) per message, as the generated decoder's `Buffer.alloc(0)`. */
function emptyPayload(): Buffer {
  return Buffer.alloc(0);
}

/**
 * A Work stream request as bytes (gRPC's serializer): a batch of acks (and its
 * credit) written here, anything else by the generated encoder, with the same bytes.
 */
export function encodeWorkRequest(message: WorkRequest): Buffer {
  return encodeAckBatch(message) ?? Buffer.from(WorkRequest.encode(message).finish());
}

/** A batch of acks alone (and its credit) as bytes; undefined for any other request (one that stops delivery too). */
export function encodeAckBatch(message: WorkRequest): Buffer | undefined {
  const kind = message.kind;
  if (
    kind?.$case !== 'batch' ||
    message.requestId !== 0 ||
    kind.value.stopDelivery ||
    !allAcks(kind.value.settlements)
  )
    return undefined;
  const { settlements, credit } = kind.value;
  // Sizes first (each ack's, then the batch's), then one buffer written front to back.
  const ackSizes = new Array<number>(settlements.length);
  let batchSize = credit === 0 ? 0 : 1 + varintSize(credit);
  for (let i = 0; i < settlements.length; i++) {
    const settlement = settlements[i]!;
    const size = settlementSize(settlement, ackSizes, i);
    batchSize += 1 + varintSize(size) + size;
  }
  const total = 1 + varintSize(batchSize) + batchSize;
  const out = Buffer.allocUnsafe(total);
  let pos = writeVarint(out, 0, 58);
  pos = writeVarint(out, pos, batchSize);
  for (let i = 0; i < settlements.length; i++) {
    const settlement = settlements[i]!;
    const ack = (settlement.kind as { value: AckFields }).value;
    const ackSize = ackSizes[i]!;
    const size = settlementOuterSize(settlement.requestId, ackSize);
    out[pos++] = 10;
    pos = writeVarint(out, pos, size);
    if (settlement.requestId !== 0) {
      out[pos++] = 8;
      pos = writeVarint(out, pos, settlement.requestId);
    }
    out[pos++] = 18;
    pos = writeVarint(out, pos, ackSize);
    pos = writeAck(out, pos, ack);
  }
  if (credit !== 0) {
    out[pos++] = 16;
    pos = writeVarint(out, pos, credit);
  }
  if (pos !== total) throw new Error(`encodeWorkRequest wrote ${pos} bytes of ${total}`);
  return out;
}

interface AckFields {
  jobId: string;
  attempt: number;
  result?: JobResult | undefined;
}

/** Every settlement an ack this encoder writes exactly as the generated one would. */
function allAcks(settlements: readonly WorkRequest_Settlement[]): boolean {
  for (const s of settlements) {
    if (s.kind?.$case !== 'ack' || !safeUint(s.requestId)) return false;
    const { attempt } = s.kind.value;
    // A negative attempt is a ten-byte varint: the generated encoder writes it.
    if (!Number.isInteger(attempt) || attempt < 0 || attempt > 0x7fffffff) return false;
  }
  return true;
}

function safeUint(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** A settlement's size; its ack's is kept in `ackSizes[i]`. */
function settlementSize(settlement: WorkRequest_Settlement, ackSizes: number[], i: number): number {
  const ack = (settlement.kind as { value: AckFields }).value;
  let ackSize = 0;
  if (ack.jobId !== '') {
    const n = Buffer.byteLength(ack.jobId, 'utf8');
    ackSize += 1 + varintSize(n) + n;
  }
  if (ack.attempt !== 0) ackSize += 1 + varintSize(ack.attempt);
  if (ack.result !== undefined) {
    const r = resultSize(ack.result);
    ackSize += 1 + varintSize(r) + r;
  }
  ackSizes[i] = ackSize;
  return settlementOuterSize(settlement.requestId, ackSize);
}

function settlementOuterSize(requestId: number, ackSize: number): number {
  return (requestId === 0 ? 0 : 1 + varintSize(requestId)) + 1 + varintSize(ackSize) + ackSize;
}

function resultSize(result: JobResult): number {
  let size = 0;
  if (result.data.length !== 0) size += 1 + varintSize(result.data.length) + result.data.length;
  if (result.contentType !== '') {
    const n = Buffer.byteLength(result.contentType, 'utf8');
    size += 1 + varintSize(n) + n;
  }
  return size;
}

function writeAck(out: Buffer, pos: number, ack: AckFields): number {
  if (ack.jobId !== '') {
    out[pos++] = 10;
    pos = writeText(out, pos, ack.jobId);
  }
  if (ack.attempt !== 0) {
    out[pos++] = 16;
    pos = writeVarint(out, pos, ack.attempt);
  }
  if (ack.result !== undefined) {
    out[pos++] = 26;
    pos = writeVarint(out, pos, resultSize(ack.result));
    const { data, contentType } = ack.result;
    if (data.length !== 0) {
      out[pos++] = 10;
      pos = writeVarint(out, pos, data.length);
      out.set(data, pos);
      pos += data.length;
    }
    if (contentType !== '') {
      out[pos++] = 18;
      pos = writeText(out, pos, contentType);
    }
  }
  return pos;
}

/** A string's length and its UTF-8 bytes (lone surrogates as U+FFFD, as TextEncoder writes them). */
function writeText(out: Buffer, pos: number, text: string): number {
  const n = Buffer.byteLength(text, 'utf8');
  pos = writeVarint(out, pos, n);
  return pos + out.write(text, pos, n, 'utf8');
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

function writeVarint(out: Buffer, pos: number, value: number): number {
  while (value >= 128) {
    out[pos++] = (value % 128) | 128;
    value = Math.floor(value / 128);
  }
  out[pos++] = value;
  return pos;
}
