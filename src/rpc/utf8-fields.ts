/**
 * Invalid UTF-8 in string fields, found in the request's bytes.
 *
 * The generated decoder replaces invalid UTF-8 with U+FFFD, so two different
 * byte strings (`order-\xff`, `order-\xfe`) would decode to the same
 * idempotency key and the second job would be dropped as a duplicate. proto3
 * says string fields hold UTF-8, so sepp refuses a request that does not:
 * INVALID_ARGUMENT naming the field. A string holding U+0000 is refused the
 * same way (engine/checks.ts, nulRefusal: PostgreSQL's text cannot hold it).
 *
 * A request that is all ASCII (one native pass) has nothing to check. Any
 * other is walked once in its wire format, guided by the published schema
 * (the embedded descriptor set): every field that cannot hold a string is
 * skipped without reading it (payloads cost a length read), and string bytes
 * that are not ASCII are validated natively (`isUtf8`). It runs after the
 * decoder accepted the bytes, so the structure is known to be well formed.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import {
  createFileRegistry,
  type DescField,
  type DescMessage,
  fromBinary,
  ScalarType,
} from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';

/** What a field can hold that needs checking; fields with no string anywhere below are absent. */
type FieldCheck =
  | { kind: 'string'; name: string; repeated: boolean }
  | { kind: 'message'; name: string; repeated: boolean; message: MessageCheck }
  /** A map: its entries are messages with the key as field 1 and the value as field 2. */
  | { kind: 'map'; name: string; message: MessageCheck };

/** A message's checks by field number (an array: field numbers are small). */
interface MessageCheck {
  readonly byNumber: (FieldCheck | undefined)[];
}

/** Finds the first string field holding invalid UTF-8 in encoded requests, by method path. */
export class Utf8Fields {
  private readonly byPath = new Map<string, MessageCheck>();

  /** `descriptorSet`: a FileDescriptorSet with imports; `service`: its fully qualified name. */
  constructor(descriptorSet: Uint8Array, service: string) {
    const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, descriptorSet));
    const desc = registry.getService(service);
    if (desc === undefined) throw new Error(`the descriptor set has no service ${service}`);
    const built = new Map<string, MessageCheck | null>();
    for (const method of desc.methods) {
      const check = checkOf(method.input, built);
      if (check !== null) this.byPath.set(`/${service}/${method.name}`, check);
    }
  }

  /**
   * The first string field that is not UTF-8 or holds U+0000 (`jobs[2].idempotency_key`,
   * and which), or null.
   */
  firstInvalid(methodPath: string, bytes: Uint8Array): { field: string; problem: 'utf8' | 'nul' } | null {
    const check = this.byPath.get(methodPath);
    // All ASCII without a zero byte (two native passes): no string in it can be invalid, no walk needed.
    if (check === undefined || (isAscii(bytes) && bytes.indexOf(0) < 0)) return null;
    const walk = new Walk(bytes);
    const field = walk.firstInvalid(check, bytes.length, '');
    return field === null ? null : { field, problem: walk.problem };
  }
}

/** The checks of a message type; null when nothing below it is a string. */
function checkOf(message: DescMessage, built: Map<string, MessageCheck | null>): MessageCheck | null {
  const known = built.get(message.typeName);
  if (known !== undefined) return known;
  // A recursive type refers to itself while being built: count it as checked (filled in below).
  const check: MessageCheck = { byNumber: [] };
  built.set(message.typeName, check);
  for (const field of message.fields) {
    const fieldCheck = fieldCheckOf(field, built);
    if (fieldCheck !== null) check.byNumber[field.number] = fieldCheck;
  }
  const result = check.byNumber.length === 0 ? null : check;
  built.set(message.typeName, result);
  return result;
}

function fieldCheckOf(field: DescField, built: Map<string, MessageCheck | null>): FieldCheck | null {
  const name = field.name;
  switch (field.fieldKind) {
    case 'scalar':
      return field.scalar === ScalarType.STRING ? { kind: 'string', name, repeated: false } : null;
    case 'message': {
      const message = checkOf(field.message, built);
      return message === null ? null : { kind: 'message', name, repeated: false, message };
    }
    case 'list': {
      if (field.listKind === 'scalar')
        return field.scalar === ScalarType.STRING ? { kind: 'string', name, repeated: true } : null;
      if (field.listKind !== 'message') return null;
      const message = checkOf(field.message, built);
      return message === null ? null : { kind: 'message', name, repeated: true, message };
    }
    case 'map': {
      const entry: MessageCheck = { byNumber: [] };
      if (field.mapKey === ScalarType.STRING)
        entry.byNumber[1] = { kind: 'string', name: 'key', repeated: false };
      if (field.mapKind === 'scalar' && field.scalar === ScalarType.STRING)
        entry.byNumber[2] = { kind: 'string', name: 'value', repeated: false };
      if (field.mapKind === 'message') {
        const message = checkOf(field.message, built);
        if (message !== null)
          entry.byNumber[2] = { kind: 'message', name: 'value', repeated: false, message };
      }
      return entry.byNumber.length === 0 ? null : { kind: 'map', name, message: entry };
    }
    default:
      return null;
  }
}

/**
 * One pass over one request's bytes. Hot: it runs for every request, so it
 * allocates nothing but what names a bad field, looks fields up in arrays,
 * and checks ASCII strings (nearly all of them) without leaving JavaScript.
 */
class Walk {
  private pos = 0;
  /** What was wrong with the field firstInvalid named. */
  problem: 'utf8' | 'nul' = 'utf8';

  constructor(private readonly bytes: Uint8Array) {}

  firstInvalid(check: MessageCheck, end: number, path: string): string | null {
    const { bytes } = this;
    // Occurrences so far of each repeated field, to name the element (`jobs[2]`).
    let seen: number[] | undefined;
    while (this.pos < end) {
      const tag = this.varint();
      // Field numbers are below 2^29, so a valid tag fits 32 bits.
      const fieldNumber = tag >>> 3;
      const wireType = tag & 7;
      const field = check.byNumber[fieldNumber];
      if (field === undefined || wireType !== 2) {
        if (!this.skip(end, wireType, fieldNumber)) return null;
        continue;
      }
      const length = this.varint();
      const start = this.pos;
      const stop = start + length;
      if (stop > end) return null;
      let index = -1;
      if (field.kind !== 'map' && field.repeated) {
        seen ??= [];
        index = seen[fieldNumber] ?? 0;
        seen[fieldNumber] = index + 1;
      }
      if (field.kind === 'string') {
        const problem = textProblem(bytes, start, stop);
        if (problem !== null) {
          this.problem = problem;
          return fieldPath(path, field.name, index);
        }
      } else {
        const inner = this.firstInvalid(
          field.message,
          stop,
          field.kind === 'map' ? '' : fieldPath(path, field.name, index),
        );
        // A map names the map itself: its key or one of its values.
        if (inner !== null)
          return field.kind === 'map' ? `${fieldPath(path, field.name, -1)} (a ${inner})` : inner;
      }
      this.pos = stop;
    }
    return null;
  }

  private varint(): number {
    const bytes = this.bytes;
    const first = bytes[this.pos++] ?? 0;
    if (first < 0x80) return first;
    let value = first & 0x7f;
    let scale = 128;
    for (let i = 1; i < 10; i++) {
      const byte = bytes[this.pos++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    return value;
  }

  /** Skips one field's value of `wireType`; false when the bytes end first or the type is unknown. */
  private skip(end: number, wireType: number, fieldNumber: number): boolean {
    switch (wireType) {
      case 0:
        this.varint();
        break;
      case 1:
        this.pos += 8;
        break;
      case 2: {
        // Read the length first: `this.pos += this.varint()` would add it to the position before the read.
        const length = this.varint();
        this.pos += length;
        break;
      }
      case 3:
        // A group: fields until the matching end-group tag.
        while (this.pos < end) {
          const tag = this.varint();
          if (tag % 8 === 4 && Math.floor(tag / 8) === fieldNumber) return true;
          if (!this.skip(end, tag % 8, Math.floor(tag / 8))) return false;
        }
        return false;
      case 5:
        this.pos += 4;
        break;
      default:
        return false;
    }
    return this.pos <= end;
  }
}

function fieldPath(path: string, name: string, index: number): string {
  const named = path === '' ? name : `${path}.${name}`;
  return index < 0 ? named : `${named}[${index}]`;
}

/** A zero byte (U+0000) or bytes that are not UTF-8: ASCII in JavaScript, anything else by the native check. */
function textProblem(bytes: Uint8Array, start: number, stop: number): 'utf8' | 'nul' | null {
  for (let i = start; i < stop; i++) {
    const byte = bytes[i] ?? 0;
    if (byte === 0) return 'nul';
    if (byte >= 0x80) {
      const text = bytes.subarray(start, stop);
      // In UTF-8 a zero byte is U+0000 and nothing else.
      if (!isUtf8(text)) return 'utf8';
      return text.indexOf(0) < 0 ? null : 'nul';
    }
  }
  return null;
}
