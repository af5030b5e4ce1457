/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha), answered from the
 * FileDescriptorSet protoc wrote at build time (scripts/gen.mjs, `--include_imports`).
 *
 * Generic tools (grpcurl, buf curl, grpcui, Postman) ask for the file that defines a
 * symbol and for its dependencies, then build their own descriptor pool from the
 * answers. So each file is handed out exactly as protoc serialized it — its own name,
 * its own package, its real `dependency` list, fully qualified type names — never a
 * file rebuilt from a loaded package definition (what @grpc/reflection does, and why
 * `buf curl` found no service in its answers: grpc/grpc-node#3034).
 *
 * A file answer carries the file asked for and, after it, those of its transitive
 * dependencies this stream has not been sent yet, as the reference servers do.
 * Answers are written with backpressure: a client that stops reading stops being read.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import {
  type DescriptorProto,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
} from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** One file of the set: its name, its bytes as protoc wrote them, the files it imports. */
interface DescribedFile {
  name: string;
  bytes: Buffer;
  dependencies: string[];
}

/** A request as proto-loader decodes it (keepCase, oneofs). */
interface ReflectionRequest {
  host?: string;
  message_request?: string;
  file_by_filename?: string;
  file_containing_symbol?: string;
  file_containing_extension?: { containing_type?: string; extension_number?: number };
  all_extension_numbers_of_type?: string;
  list_services?: string;
}

type ReflectionResponse = Record<string, unknown>;

const notFound = grpc.status.NOT_FOUND;
const invalidArgument = grpc.status.INVALID_ARGUMENT;

/** The index of a FileDescriptorSet that reflection answers from. */
export class DescriptorIndex {
  private readonly files = new Map<string, DescribedFile>();
  /** Fully qualified name (no leading dot) of every service, method, message, enum, enum value, field and extension → its file. */
  private readonly symbols = new Map<string, string>();
  /** Message name → the numbers of extensions declared for it, per file. */
  private readonly extensions = new Map<string, Map<number, string>>();
  readonly services: string[] = [];

  constructor(descriptorSet: Uint8Array) {
    for (const bytes of fileDescriptorsOf(descriptorSet)) {
      const proto = fromBinary(FileDescriptorProtoSchema, bytes);
      this.files.set(proto.name, {
        name: proto.name,
        bytes: Buffer.from(bytes),
        dependencies: [...proto.dependency],
      });
      this.indexFile(proto);
    }
    this.services.sort();
  }

  /** The file named `name`, then those of its transitive dependencies not yet in `sent`. */
  fileWithDependencies(name: string, sent: Set<string>): Buffer[] | undefined {
    const file = this.files.get(name);
    if (file === undefined) return undefined;
    const answer: Buffer[] = [];
    const queue = [file];
    const seen = new Set<string>();
    while (queue.length > 0) {
      const next = queue.shift()!;
      if (seen.has(next.name)) continue;
      seen.add(next.name);
      // The file asked for is always sent; a dependency only once per stream.
      if (answer.length === 0 || !sent.has(next.name)) {
        sent.add(next.name);
        answer.push(next.bytes);
      }
      for (const dependency of next.dependencies) {
        const found = this.files.get(dependency);
        if (found !== undefined) queue.push(found);
      }
    }
    return answer;
  }

  fileOfSymbol(symbol: string): string | undefined {
    return this.symbols.get(symbol.startsWith('.') ? symbol.slice(1) : symbol);
  }

  extensionsOf(message: string): Map<number, string> | undefined {
    const name = message.startsWith('.') ? message.slice(1) : message;
    if (!this.symbols.has(name)) return undefined;
    return this.extensions.get(name) ?? new Map();
  }

  private indexFile(file: FileDescriptorProto): void {
    const prefix = file.package === '' ? '' : `${file.package}.`;
    const add = (name: string) => this.symbols.set(name, file.name);
    for (const service of file.service) {
      add(prefix + service.name);
      this.services.push(prefix + service.name);
      for (const method of service.method) add(`${prefix}${service.name}.${method.name}`);
    }
    for (const enumType of file.enumType) {
      add(prefix + enumType.name);
      // Enum values are scoped like their enum's siblings (protobuf's C++ scoping rule).
      for (const value of enumType.value) add(prefix + value.name);
    }
    for (const extension of file.extension) this.addExtension(file.name, prefix, extension);
    for (const message of file.messageType) this.indexMessage(file.name, prefix, message);
  }

  private indexMessage(fileName: string, prefix: string, message: DescriptorProto): void {
    const name = prefix + message.name;
    this.symbols.set(name, fileName);
    for (const field of message.field) this.symbols.set(`${name}.${field.name}`, fileName);
    for (const oneof of message.oneofDecl) this.symbols.set(`${name}.${oneof.name}`, fileName);
    for (const enumType of message.enumType) {
      this.symbols.set(`${name}.${enumType.name}`, fileName);
      for (const value of enumType.value) this.symbols.set(`${name}.${value.name}`, fileName);
    }
    for (const extension of message.extension) this.addExtension(fileName, `${name}.`, extension);
    for (const nested of message.nestedType) this.indexMessage(fileName, `${name}.`, nested);
  }

  private addExtension(
    fileName: string,
    prefix: string,
    extension: { name: string; number: number; extendee: string },
  ): void {
    this.symbols.set(prefix + extension.name, fileName);
    const extendee = extension.extendee.startsWith('.') ? extension.extendee.slice(1) : extension.extendee;
    const numbers = this.extensions.get(extendee) ?? new Map<number, string>();
    numbers.set(extension.number, fileName);
    this.extensions.set(extendee, numbers);
  }
}

/** The `file` entries (field 1) of a serialized FileDescriptorSet, byte for byte. */
function fileDescriptorsOf(descriptorSet: Uint8Array): Uint8Array[] {
  const reader = new BinaryReader(descriptorSet);
  const files: Uint8Array[] = [];
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1 && wireType === WireType.LengthDelimited) files.push(reader.bytes());
    else reader.skip(wireType);
  }
  return files;
}

/** Answers one request of a stream; `sent` is the stream's record of files already sent. */
export function answerReflection(
  index: DescriptorIndex,
  request: ReflectionRequest,
  sent: Set<string>,
): ReflectionResponse {
  const base = { valid_host: request.host ?? '', original_request: request };
  const error = (code: grpc.status, message: string) => ({
    ...base,
    error_response: { error_code: code, error_message: message },
  });
  const files = (name: string | undefined, what: string) => {
    const found = name === undefined ? undefined : index.fileWithDependencies(name, sent);
    return found === undefined
      ? error(notFound, `${what} not found`)
      : { ...base, file_descriptor_response: { file_descriptor_proto: found } };
  };
  switch (request.message_request) {
    case 'list_services':
      return { ...base, list_services_response: { service: index.services.map((name) => ({ name })) } };
    case 'file_by_filename':
      return files(request.file_by_filename, `file ${clip(request.file_by_filename ?? '')}`);
    case 'file_containing_symbol': {
      const symbol = request.file_containing_symbol ?? '';
      return files(index.fileOfSymbol(symbol), `symbol ${clip(symbol)}`);
    }
    case 'file_containing_extension': {
      const type = request.file_containing_extension?.containing_type ?? '';
      const number = request.file_containing_extension?.extension_number ?? 0;
      return files(index.extensionsOf(type)?.get(number), `extension ${number} of ${clip(type)}`);
    }
    case 'all_extension_numbers_of_type': {
      const type = request.all_extension_numbers_of_type ?? '';
      const numbers = index.extensionsOf(type);
      if (numbers === undefined) return error(notFound, `type ${clip(type)} not found`);
      return {
        ...base,
        all_extension_numbers_response: {
          base_type_name: type.startsWith('.') ? type.slice(1) : type,
          extension_number: [...numbers.keys()].sort((a, b) => a - b),
        },
      };
    }
    default:
      return error(invalidArgument, 'the request names no message_request');
  }
}

/** Names from a request go into error messages; a long one is cut. */
function clip(name: string): string {
  return name.length <= 200 ? name : `${name.slice(0, 200)}… (${name.length} characters)`;
}

/**
 * The index and loaded definition of the last descriptor set, kept for the next server of
 * the process: both are only read, and every server gets the same embedded set. Loading it
 * is ~45 ms of CPU, half of a test server's start (a test process starts many).
 */
let loaded: { bytes: Buffer; index: DescriptorIndex; definition: protoLoader.PackageDefinition } | undefined;

function load(descriptorSet: Uint8Array): NonNullable<typeof loaded> {
  const bytes = Buffer.from(descriptorSet);
  if (loaded === undefined || !loaded.bytes.equals(bytes)) {
    loaded = {
      bytes,
      index: new DescriptorIndex(bytes),
      definition: protoLoader.loadFileDescriptorSetFromBuffer(bytes, { keepCase: true, oneofs: true }),
    };
  }
  return loaded;
}

/** Adds grpc.reflection.v1 and v1alpha ServerReflection to `server`, answering from `descriptorSet`. */
export function addReflection(server: grpc.Server, descriptorSet: Uint8Array): void {
  const { index, definition } = load(descriptorSet);
  const handler = (call: grpc.ServerDuplexStream<ReflectionRequest, ReflectionResponse>) => {
    const sent = new Set<string>();
    call.on('data', (request: ReflectionRequest) => {
      if (!call.write(answerReflection(index, request, sent))) {
        call.pause();
        call.once('drain', () => call.resume());
      }
    });
    call.on('end', () => call.end());
    // A client that goes away ends the call; nothing else is held for it.
    call.on('error', () => {});
  };
  for (const version of ['v1', 'v1alpha']) {
    const service = definition[`grpc.reflection.${version}.ServerReflection`];
    if (service === undefined || !isServiceDefinition(service)) {
      throw new Error(`the embedded descriptor set has no grpc.reflection.${version}.ServerReflection`);
    }
    server.addService(service, { ServerReflectionInfo: handler });
  }
}

function isServiceDefinition(value: object): value is grpc.ServiceDefinition {
  return 'ServerReflectionInfo' in value;
}
