/**
 * The Work stream's requests after the first decoded here, in one pass with
 * no reader object, BigInt or TextDecoder per field: batches of settlements
 * (acks, nacks, extends, progress reports) with their credit, a credit alone,
 * and a settlement as a message of its own. The result is the generated
 * decoder's (work.ts), field for field (tests/rpc/work-request-codec.test.ts
 * compares them).
 *
 * Only the canonical form is taken: known fields with their wire types, each
 * once (a oneof's members: one), numbers in their range (no negative int32 or
 * int64: ten bytes), bools 0 or 1, strings valid UTF-8 without U+0000 (what the
 * UTF-8 check of utf8-fields.ts looks for), an ack's all ASCII. Anything else —
 * the subscribe message (at its first tag), an unknown or repeated field, a
 * string with other bytes, bytes that end early — returns undefined, and the
 * request goes to the generated decoder and the UTF-8 check as before, with the
 * same answer. Until 2026-12 only acks were taken here, so a batch holding a
 * nack was read up to it and then again from its start.
 */
import { isUtf8 } from 'node:buffer';
import type {
  AckRequest,
  ExtendRequest,
  NackRequest,
  ReportProgressRequest,
  WorkRequest,
  WorkRequest_Batch,
  WorkRequest_Settlement,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';

/** Thrown inside the decoder to give up; caught at its door. */
const notCanonical = Symbol('not canonical');

/** The request, or undefined when it is not one of the canonical kinds above. */
export function decodeWorkRequestDirect(bytes: Buffer): WorkRequest | undefined {
  try {
    return new Reader(bytes).workRequest();
  } catch (error) {
    if (error === notCanonical) return undefined;
    throw error;
  }
}

class Reader {
  private pos = 0;

  constructor(private readonly bytes: Buffer) {}

  workRequest(): WorkRequest {
    const end = this.bytes.length;
    let requestId = 0;
    let kind: WorkRequest['kind'];
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 8 && (seen & 1) === 0) {
        seen |= 1;
        requestId = this.varint(end);
      } else if (tag === 58 && (seen & 2) === 0) {
        seen |= 2;
        const stop = this.length(end);
        kind = { $case: 'batch', value: this.batch(stop) };
      } else if (tag === 26 && (seen & 2) === 0) {
        seen |= 2;
        const stop = this.length(end);
        kind = { $case: 'credit', value: { jobs: this.credit(stop) } };
      } else if (tag === 34 && (seen & 2) === 0) {
        seen |= 2;
        kind = { $case: 'ack', value: this.ack(this.length(end)) };
      } else if (tag === 42 && (seen & 2) === 0) {
        seen |= 2;
        kind = { $case: 'nack', value: this.nack(this.length(end)) };
      } else if (tag === 50 && (seen & 2) === 0) {
        seen |= 2;
        kind = { $case: 'extend', value: this.extend(this.length(end)) };
      } else if (tag === 66 && (seen & 2) === 0) {
        seen |= 2;
        kind = { $case: 'progress', value: this.progress(this.length(end)) };
      } else throw notCanonical;
    }
    return { requestId, kind };
  }

  private batch(end: number): WorkRequest_Batch {
    const settlements: WorkRequest_Settlement[] = [];
    let credit = 0;
    let creditSeen = false;
    let stopDelivery = false;
    let stopSeen = false;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10) {
        settlements.push(this.settlement(this.length(end)));
      } else if (tag === 16 && !creditSeen) {
        creditSeen = true;
        credit = this.uint32(end);
      } else if (tag === 24 && !stopSeen) {
        stopSeen = true;
        stopDelivery = this.bool(end);
      } else throw notCanonical;
    }
    return { settlements, credit, stopDelivery };
  }

  private credit(end: number): number {
    let jobs = 0;
    if (this.pos < end) {
      if (this.varint(end) !== 8) throw notCanonical;
      jobs = this.uint32(end);
    }
    if (this.pos !== end) throw notCanonical;
    return jobs;
  }

  private settlement(end: number): WorkRequest_Settlement {
    let requestId = 0;
    let kind: WorkRequest_Settlement['kind'];
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 8 && (seen & 1) === 0) {
        seen |= 1;
        requestId = this.varint(end);
      } else if (tag === 18 && (seen & 2) === 0) {
        seen |= 2;
        kind = { $case: 'ack', value: this.ack(this.length(end)) };
      } else if ((seen & 2) === 0) {
        seen |= 2;
        kind = this.otherSettlement(tag, end);
      } else throw notCanonical;
    }
    return { requestId, kind };
  }

  /** A settlement's kind but ack (kept out of `settlement`, which acks keep hot). */
  private otherSettlement(tag: number, end: number): WorkRequest_Settlement['kind'] {
    if (tag === 26) return { $case: 'nack', value: this.nack(this.length(end)) };
    if (tag === 34) return { $case: 'extend', value: this.extend(this.length(end)) };
    if (tag === 42) return { $case: 'progress', value: this.progress(this.length(end)) };
    throw notCanonical;
  }

  private ack(end: number): AckRequest {
    let jobId = '';
    let attempt = 0;
    let result: AckRequest['result'];
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10 && (seen & 1) === 0) {
        seen |= 1;
        jobId = this.ascii(this.length(end));
      } else if (tag === 16 && (seen & 2) === 0) {
        seen |= 2;
        attempt = this.int32(end);
      } else if (tag === 26 && (seen & 4) === 0) {
        seen |= 4;
        result = this.jobResult(this.length(end));
      } else throw notCanonical;
    }
    return { jobId, attempt, result };
  }

  private nack(end: number): NackRequest {
    let jobId = '';
    let attempt = 0;
    let errorMessage = '';
    let directive: NackRequest['directive'];
    let errorClass = '';
    let errorStack = '';
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10 && (seen & 1) === 0) {
        seen |= 1;
        jobId = this.text(this.length(end));
      } else if (tag === 16 && (seen & 2) === 0) {
        seen |= 2;
        attempt = this.int32(end);
      } else if (tag === 26 && (seen & 4) === 0) {
        seen |= 4;
        errorMessage = this.text(this.length(end));
      } else if (tag === 32 && (seen & 8) === 0) {
        seen |= 8;
        directive = { $case: 'backoff', value: this.bool(end) };
      } else if (tag === 40 && (seen & 8) === 0) {
        seen |= 8;
        directive = { $case: 'retryDelayMs', value: this.varint(end) };
      } else if (tag === 48 && (seen & 8) === 0) {
        seen |= 8;
        directive = { $case: 'deadLetter', value: this.bool(end) };
      } else if (tag === 56 && (seen & 8) === 0) {
        seen |= 8;
        directive = { $case: 'giveBack', value: this.bool(end) };
      } else if (tag === 882 && (seen & 16) === 0) {
        seen |= 16;
        errorClass = this.text(this.length(end));
      } else if (tag === 890 && (seen & 32) === 0) {
        seen |= 32;
        errorStack = this.text(this.length(end));
      } else throw notCanonical;
    }
    return { jobId, attempt, errorMessage, directive, errorClass, errorStack };
  }

  private extend(end: number): ExtendRequest {
    let jobId = '';
    let attempt = 0;
    let leaseDurationMs = 0;
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10 && (seen & 1) === 0) {
        seen |= 1;
        jobId = this.text(this.length(end));
      } else if (tag === 16 && (seen & 2) === 0) {
        seen |= 2;
        attempt = this.int32(end);
      } else if (tag === 24 && (seen & 4) === 0) {
        seen |= 4;
        leaseDurationMs = this.varint(end);
      } else throw notCanonical;
    }
    return { jobId, attempt, leaseDurationMs };
  }

  private progress(end: number): ReportProgressRequest {
    let jobId = '';
    let attempt = 0;
    let percent = 0;
    let hasPercent = false;
    let json = '';
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10 && (seen & 1) === 0) {
        seen |= 1;
        jobId = this.text(this.length(end));
      } else if (tag === 16 && (seen & 2) === 0) {
        seen |= 2;
        attempt = this.int32(end);
      } else if (tag === 25 && (seen & 4) === 0) {
        seen |= 4;
        if (this.pos + 8 > end) throw notCanonical;
        percent = this.bytes.readDoubleLE(this.pos);
        this.pos += 8;
      } else if (tag === 32 && (seen & 8) === 0) {
        seen |= 8;
        hasPercent = this.bool(end);
      } else if (tag === 42 && (seen & 16) === 0) {
        seen |= 16;
        json = this.text(this.length(end));
      } else throw notCanonical;
    }
    return { jobId, attempt, percent, hasPercent, json };
  }

  private jobResult(end: number): NonNullable<AckRequest['result']> {
    let data: Buffer | undefined;
    let contentType = '';
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10 && (seen & 1) === 0) {
        seen |= 1;
        const stop = this.length(end);
        data = Buffer.from(this.bytes.subarray(this.pos, stop));
        this.pos = stop;
      } else if (tag === 18 && (seen & 2) === 0) {
        seen |= 2;
        contentType = this.ascii(this.length(end));
      } else throw notCanonical;
    }
    return { data: data ?? Buffer.alloc(0), contentType };
  }

  /** A length prefix; returns where the field ends (within `end`). */
  private length(end: number): number {
    // Read the length first: `this.pos + this.varint()` would take the position before the read.
    const length = this.varint(end);
    const stop = this.pos + length;
    if (stop > end) throw notCanonical;
    return stop;
  }

  /** A varint of at most eight bytes that is a safe integer: uint64 request ids, tags, lengths. */
  private varint(end: number): number {
    const bytes = this.bytes;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.pos >= end) throw notCanonical;
      const byte = bytes[this.pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (value > Number.MAX_SAFE_INTEGER) throw notCanonical;
        return value;
      }
      scale *= 128;
    }
    throw notCanonical;
  }

  /** A uint32 written in at most five bytes. */
  private uint32(end: number): number {
    const value = this.varint(end);
    if (value > 0xffffffff) throw notCanonical;
    return value;
  }

  /** A non-negative int32 (a negative one is written in ten bytes). */
  private int32(end: number): number {
    const value = this.varint(end);
    if (value > 0x7fffffff) throw notCanonical;
    return value;
  }

  /** A bool written as 0 or 1. */
  private bool(end: number): boolean {
    const value = this.varint(end);
    if (value > 1) throw notCanonical;
    return value === 1;
  }

  /**
   * A string field's bytes, taken only when all ASCII without U+0000: the ack's (a job id, a
   * content type). Kept apart from `text`, which is not inlined as readily: acks with their
   * ids in `text` cost ~10 % more CPU in bench/work-codec.ts.
   */
  private ascii(stop: number): string {
    const bytes = this.bytes;
    const start = this.pos;
    for (let i = start; i < stop; i++) {
      const byte = bytes[i]!;
      if (byte === 0 || byte >= 0x80) throw notCanonical;
    }
    this.pos = stop;
    return bytes.toString('latin1', start, stop);
  }

  /**
   * A string field's bytes, taken only when UTF-8 without U+0000 (the other settlements': error
   * texts and progress documents may be other text): ASCII in JavaScript, the rest natively.
   */
  private text(stop: number): string {
    const bytes = this.bytes;
    const start = this.pos;
    for (let i = start; i < stop; i++) {
      const byte = bytes[i]!;
      if (byte === 0 || byte >= 0x80) return this.utf8(start, i, stop);
    }
    this.pos = stop;
    return bytes.toString('latin1', start, stop);
  }

  /** `text` past its ASCII start (`start` to `from`): the rest checked natively. */
  private utf8(start: number, from: number, stop: number): string {
    const rest = this.bytes.subarray(from, stop);
    // In UTF-8 a zero byte is U+0000 and nothing else.
    if (!isUtf8(rest) || rest.indexOf(0) >= 0) throw notCanonical;
    this.pos = stop;
    return this.bytes.toString('utf8', start, stop);
  }
}
