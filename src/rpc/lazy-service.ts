/**
 * Service definitions whose codecs are built on the first call, not at start.
 *
 * proto-loader builds a definition by turning a descriptor set into protobufjs types and
 * compiling a codec for each: for health and reflection that cost a server start ~250 ms of
 * CPU (#32), for services most clients never call. A lazy definition names the methods and
 * their stream kinds (all grpc-js needs to route a call) and builds the real definition,
 * from the same descriptors and options as before, when a message is first read or written,
 * so what a client sees does not change.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import type * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';

/** What grpc-js must know of a method before its first call. */
export interface MethodShape {
  name: string;
  requestStream: boolean;
  responseStream: boolean;
}

/** Builds `load()` once, on first use. */
export function once<T>(load: () => T): () => T {
  let value: { built: T } | undefined;
  return () => {
    value ??= { built: load() };
    return value.built;
  };
}

/**
 * The definition of `service` (fully qualified) with `methods`, whose serializers are
 * those of `definitions()[service]`, built on the first message.
 */
export function lazyService(
  service: string,
  methods: MethodShape[],
  definitions: () => PackageDefinition,
): grpc.ServiceDefinition {
  const method = (name: string) => {
    const found = definitions()[service];
    const definition = found === undefined ? undefined : (found as grpc.ServiceDefinition)[name];
    if (definition === undefined) throw new Error(`the descriptor set has no method ${service}.${name}`);
    return definition;
  };
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const { name, requestStream, responseStream } of methods) {
    definition[name] = {
      path: `/${service}/${name}`,
      requestStream,
      responseStream,
      requestSerialize: (value: unknown) => method(name).requestSerialize(value),
      requestDeserialize: (bytes: Buffer) => method(name).requestDeserialize(bytes),
      responseSerialize: (value: unknown) => method(name).responseSerialize(value),
      responseDeserialize: (bytes: Buffer) => method(name).responseDeserialize(bytes),
      originalName: name.charAt(0).toLowerCase() + name.slice(1),
    };
  }
  return definition;
}

/**
 * A FileDescriptorSet of the files of `descriptorSet` named `names`, bytes unchanged;
 * throws when one is missing (a build defect, found at start rather than on a call).
 */
export function descriptorSubset(descriptorSet: Uint8Array, names: readonly string[]): Buffer {
  const reader = new BinaryReader(descriptorSet);
  const writer = new BinaryWriter();
  const found = new Set<string>();
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo !== 1 || wireType !== WireType.LengthDelimited) {
      reader.skip(wireType);
      continue;
    }
    const file = reader.bytes();
    const name = fileName(file);
    if (name !== undefined && names.includes(name)) {
      found.add(name);
      writer.tag(1, WireType.LengthDelimited).bytes(file);
    }
  }
  const missing = names.filter((name) => !found.has(name));
  if (missing.length > 0) throw new Error(`the embedded descriptor set has no ${missing.join(', ')}`);
  return Buffer.from(writer.finish());
}

/** The `name` (field 1) of a serialized FileDescriptorProto. */
function fileName(file: Uint8Array): string | undefined {
  const reader = new BinaryReader(file);
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1 && wireType === WireType.LengthDelimited) return reader.string();
    reader.skip(wireType);
  }
  return undefined;
}
