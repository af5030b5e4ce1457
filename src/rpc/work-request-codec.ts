/**
 * The Work stream's busiest requests decoded here, in one pass with no
 * reader object, BigInt or TextDecoder per field: a batch of acks with its
 * credit, and a credit alone. The result is the generated decoder's (work.ts),
 * field for field (tests/rpc/work-request-codec.test.ts compares them).
 *
 * Only the canonical form is taken: known fields with their wire types, each
 * once, numbers in their range, strings all ASCII without U+0000 (so the
 * UTF-8 check of utf8-fields.ts has nothing to find in them). Anything else —
 * another kind of message, an unknown or repeated field, a string with other
 * bytes, bytes that end early — returns undefined, and the request goes to
 * the generated decoder and the UTF-8 check as before, with the same answer.
 */
import type {
  AckRequest,
  WorkRequest,
  WorkRequest_Settlement,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';

/** Thrown inside the decoder to give up; caught at its door. */
const notCanonical = Symbol('not canonical');

/** The request, or undefined when it is not a canonical batch of acks or credit. */
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
      } else throw notCanonical;
    }
    return { requestId, kind };
  }

  private batch(end: number): { settlements: WorkRequest_Settlement[]; credit: number } {
    const settlements: WorkRequest_Settlement[] = [];
    let credit = 0;
    let creditSeen = false;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 10) {
        settlements.push(this.settlement(this.length(end)));
      } else if (tag === 16 && !creditSeen) {
        creditSeen = true;
        credit = this.uint32(end);
      } else throw notCanonical;
    }
    return { settlements, credit };
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
    let ack: AckRequest | undefined;
    let seen = 0;
    while (this.pos < end) {
      const tag = this.varint(end);
      if (tag === 8 && (seen & 1) === 0) {
        seen |= 1;
        requestId = this.varint(end);
      } else if (tag === 18 && (seen & 2) === 0) {
        seen |= 2;
        ack = this.ack(this.length(end));
      } else throw notCanonical;
    }
    return { requestId, kind: ack === undefined ? undefined : { $case: 'ack', value: ack } };
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
        attempt = this.uint32(end);
        if (attempt > 0x7fffffff) throw notCanonical; // Negative int32s are ten bytes.
      } else if (tag === 26 && (seen & 4) === 0) {
        seen |= 4;
        result = this.jobResult(this.length(end));
      } else throw notCanonical;
    }
    return { jobId, attempt, result };
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

  /** A string field's bytes, taken only when all ASCII without U+0000. */
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
}
