/**
 * Invalid UTF-8 in string fields, found in the request's bytes.
 *
 * The generated decoder replaces invalid UTF-8 with U+FFFD, so two different
 * byte strings (`order-\xff`, `order-\xfe`) would decode to the same
 * idempotency key and the second job would be dropped as a duplicate. proto3
 * says string fields hold UTF-8, so sepp refuses a request that does not:
 * INVALID_ARGUMENT naming the field.
 *
 * The check walks the wire format of each request once, guided by the
 * published schema (the embedded descriptor set): it skips every field that
 * cannot hold a string without reading it (payloads cost a length read) and
 * validates string bytes natively (`isUtf8`). It runs after the decoder
 * accepted the bytes, so the structure is known to be well formed.
 */
import { isUtf8 } from 'node:buffer';
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

type MessageCheck = Map<number, FieldCheck>;

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

  /** The path of the first field with invalid UTF-8 (`jobs[2].idempotency_key`), or null. */
  firstInvalid(methodPath: string, bytes: Uint8Array): string | null {
    const check = this.byPath.get(methodPath);
    if (check === undefined) return null;
    return findInvalid(bytes, { pos: 0 }, bytes.length, check, '');
  }
}

/** The checks of a message type; null when nothing below it is a string. */
function checkOf(message: DescMessage, built: Map<string, MessageCheck | null>): MessageCheck | null {
  const known = built.get(message.typeName);
  if (known !== undefined) return known;
  // A recursive type refers to itself while being built: count it as checked (filled in below).
  const check: MessageCheck = new Map();
  built.set(message.typeName, check);
  for (const field of message.fields) {
    const fieldCheck = fieldCheckOf(field, built);
    if (fieldCheck !== null) check.set(field.number, fieldCheck);
  }
  const result = check.size === 0 ? null : check;
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
      const entry: MessageCheck = new Map();
      if (field.mapKey === ScalarType.STRING) entry.set(1, { kind: 'string', name: 'key', repeated: false });
      if (field.mapKind === 'scalar' && field.scalar === ScalarType.STRING)
        entry.set(2, { kind: 'string', name: 'value', repeated: false });
      if (field.mapKind === 'message') {
        const message = checkOf(field.message, built);
        if (message !== null) entry.set(2, { kind: 'message', name: 'value', repeated: false, message });
      }
      return entry.size === 0 ? null : { kind: 'map', name, message: entry };
    }
    default:
      return null;
  }
}

interface Cursor {
  pos: number;
}

function readVarint(bytes: Uint8Array, at: Cursor): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const byte = bytes[at.pos++] ?? 0;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
  return value;
}

/** Skips one field's value of `wireType`; false when the bytes end first or the type is unknown. */
function skipValue(
  bytes: Uint8Array,
  at: Cursor,
  end: number,
  wireType: number,
  fieldNumber: number,
): boolean {
  switch (wireType) {
    case 0:
      readVarint(bytes, at);
      break;
    case 1:
      at.pos += 8;
      break;
    case 2: {
      // Read the length first: `at.pos += readVarint(…)` would add it to the position before the read.
      const length = readVarint(bytes, at);
      at.pos += length;
      break;
    }
    case 3:
      // A group: fields until the matching end-group tag.
      while (at.pos < end) {
        const tag = readVarint(bytes, at);
        if (tag % 8 === 4 && Math.floor(tag / 8) === fieldNumber) return true;
        if (!skipValue(bytes, at, end, tag % 8, Math.floor(tag / 8))) return false;
      }
      return false;
    case 5:
      at.pos += 4;
      break;
    default:
      return false;
  }
  return at.pos <= end;
}

function findInvalid(
  bytes: Uint8Array,
  at: Cursor,
  end: number,
  check: MessageCheck,
  path: string,
): string | null {
  // Occurrences so far of each repeated field, to name the element (`jobs[2]`).
  let seen: Map<number, number> | undefined;
  while (at.pos < end) {
    const tag = readVarint(bytes, at);
    const fieldNumber = Math.floor(tag / 8);
    const wireType = tag % 8;
    const field = check.get(fieldNumber);
    if (field === undefined || wireType !== 2) {
      if (!skipValue(bytes, at, end, wireType, fieldNumber)) return null;
      continue;
    }
    const length = readVarint(bytes, at);
    const start = at.pos;
    const stop = start + length;
    if (stop > end) return null;
    let name = path === '' ? field.name : `${path}.${field.name}`;
    if (field.kind !== 'map' && field.repeated) {
      seen ??= new Map();
      const index = seen.get(fieldNumber) ?? 0;
      seen.set(fieldNumber, index + 1);
      name = `${name}[${index}]`;
    }
    if (field.kind === 'string') {
      if (!isUtf8(bytes.subarray(start, stop))) return name;
    } else {
      const inner = findInvalid(bytes, { pos: start }, stop, field.message, field.kind === 'map' ? '' : name);
      // A map names the map itself: its key or one of its values.
      if (inner !== null) return field.kind === 'map' ? `${name} (a ${inner})` : inner;
    }
    at.pos = stop;
  }
  return null;
}
