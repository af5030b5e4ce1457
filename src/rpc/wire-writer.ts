/**
 * Writing protobuf's wire format by hand, for the few messages sent per job
 * (work-response-codec.ts, produce-response-codec.ts): sizes first, then one
 * write into a buffer of that size, with no growing, shifting, BigInt or copy.
 * Numbers are JavaScript numbers (safe integers: the codecs check, and leave
 * anything else to the generated encoder); strings are written as
 * TextEncoder writes them (lone surrogates as U+FFFD).
 */

/** Below this many UTF-16 units a string is measured and written by a loop here, above by Node. */
const shortString = 64;

export function stringFieldSize(tagBytes: number, value: string): number {
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
export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  if (value < 2 ** 35) return 5;
  if (value < 2 ** 42) return 6;
  if (value < 2 ** 49) return 7;
  return 8; // Safe integers end below 2^53.
}

/** Bytes of an int32 or int64 (a safe integer) as a varint: a negative one is sign-extended to ten. */
export function signedSize(value: number): number {
  return value < 0 ? 10 : varintSize(value);
}

export function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;
}
export function isInt64(value: number): boolean {
  return Number.isSafeInteger(value);
}
export function isUint64(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/**
 * Writes one message into a buffer of the size computed with the functions above
 * (the codecs compute each nested message's size first, then write it once).
 */
export class WireWriter {
  private readonly buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  done(): Buffer {
    if (this.pos !== this.buf.length) {
      throw new Error(`wire-writer: wrote ${this.pos} bytes of ${this.buf.length}`);
    }
    return this.buf;
  }

  /** One byte (a one-byte tag, a bool, an empty message's zero length). */
  byte(value: number): void {
    this.buf[this.pos++] = value;
  }

  /** A tag and a length (of a nested message or bytes). */
  tagLength(tag: number, length: number): void {
    this.varint(tag);
    this.varint(length);
  }

  /** A bytes field. */
  bytesField(tag: number, bytes: Uint8Array): void {
    this.tagLength(tag, bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** An int32 or int64 field. */
  signedField(tag: number, value: number): void {
    this.varint(tag);
    this.signed(value);
  }

  /** An int32 or int64 (a safe integer): negative ones as ten bytes of two's complement. */
  signed(value: number): void {
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
  varint(value: number): void {
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
  string(tag: number, value: string): void {
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
