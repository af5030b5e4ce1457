/**
 * Oversize requests for every method of QueueService, built from the published
 * schema (the embedded descriptor set), so a field added later is covered
 * without a change here: each string field (at any depth, in repeated
 * messages and oneofs) set to a long value, each repeated string field and
 * each map given many entries, the other fields filled with values that get
 * a request past the first checks (a queue that exists, a job id of the
 * right shape). The fuzzers send them and check that every answer's message
 * stays under the cap (issue 29, item 6).
 */
import assert from 'node:assert/strict';
import {
  create,
  createFileRegistry,
  type DescField,
  type DescMessage,
  fromBinary,
  type MessageShape,
  ScalarType,
  toBinary,
} from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { type Client, type ClientReadableStream, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { messageBytesMax } from '../../src/config/index.ts';
import { descriptorSetBase64 } from '../../src/rpc/gen/descriptor-set.ts';

export interface OversizeCase {
  /** `/sepp.v1.QueueService/Enqueue`. */
  path: string;
  /** The method's name. */
  method: string;
  /** Whether the client streams (the bytes are then one message of the stream). */
  requestStream: boolean;
  /** What is oversize: `job.queue (long)`, `settings (1000 entries)`. */
  what: string;
  bytes: Buffer;
}

export interface OversizeOptions {
  /** Length of a long string (characters, ASCII). */
  stringLength: number;
  /** Entries of a long list or map; 0 for none. */
  listItems: number;
  /** The queue that exists (so a request gets past "no such queue"). */
  queue: string;
  /**
   * The values to put in each string field (a list gets one of them, a map
   * one as a key and one as a value), instead of a long name and a long odd one.
   */
  strings?: readonly { label: string; value: string }[];
}

/**
 * The long string of the fuzzers' oversize cases (rpc-fuzz, stream-fuzz): 64 KiB, four times
 * the largest default bound on text (limits.max_metadata_bytes, 16 KiB), so every case is
 * refused or answered as a 256 KiB string was: each of the 844 unary and 142 stream cases got
 * the same status and message at both lengths (2026-12-06), for half the CPU, which grows
 * with every byte sent, walked and checked. SEPP_FUZZ_OVERSIZE_BYTES sets it; `npm run
 * test:long` sends 256 KiB.
 */
export const fuzzStringLength = Number(process.env.SEPP_FUZZ_OVERSIZE_BYTES ?? 64 * 1024);

const registry = createFileRegistry(
  fromBinary(FileDescriptorSetSchema, Buffer.from(descriptorSetBase64, 'base64')),
);

/** A valid-looking value for a string field, by name: what gets a request past its first checks. */
function plausible(field: DescField, queue: string): string {
  const name = field.name;
  if (name === 'job_id' || name === 'job_ids' || name === 'parent_id')
    return '0190a4c2-0000-7000-8000-00000000f022';
  if (name === 'queue' || name === 'queues') return queue;
  if (name === 'type' || name === 'types') return 't';
  if (name === 'name' || name === 'schedule') return 'fuzz-schedule';
  if (name === 'cron') return '0 * * * *';
  return '';
}

type Init = Record<string, unknown>;

/** The plausible fill of a message: its string fields set by name, nested messages left out. */
function baseOf(message: DescMessage, queue: string): Init {
  const init: Init = {};
  for (const field of message.fields) {
    if (field.oneof !== undefined) continue;
    if (field.fieldKind === 'scalar' && field.scalar === ScalarType.STRING) {
      const value = plausible(field, queue);
      if (value !== '') init[field.localName] = value;
    } else if (
      field.fieldKind === 'list' &&
      field.listKind === 'scalar' &&
      field.scalar === ScalarType.STRING
    ) {
      const value = plausible(field, queue);
      if (value !== '') init[field.localName] = [value];
    } else if (field.fieldKind === 'list' && field.listKind === 'message') {
      init[field.localName] = [baseOf(field.message, queue)];
    } else if (field.fieldKind === 'message' && !field.message.typeName.startsWith('google.')) {
      init[field.localName] = baseOf(field.message, queue);
    }
  }
  return init;
}

interface Variant {
  what: string;
  /** Sets the oversize value into `init` (a fresh copy of the base). */
  apply: (init: Init) => void;
}

/** Oversize variants of every string, list and map field of `message`, `depth` levels down. */
function variantsOf(
  message: DescMessage,
  options: OversizeOptions,
  depth: number,
  prefix: string,
): Variant[] {
  if (depth > 3) return [];
  const strings = options.strings ?? [
    { label: 'long', value: 'a'.repeat(options.stringLength) },
    {
      label: 'long, odd',
      value: 'not a name! '.repeat(Math.ceil(options.stringLength / 12)).slice(0, options.stringLength),
    },
  ];
  const many = (tag: string) =>
    Array.from({ length: options.listItems }, (_, i) => `${tag} ${i} ${'x'.repeat(48)}`);
  const lists = options.listItems > 0;
  const variants: Variant[] = [];
  for (const field of message.fields) {
    const path = `${prefix}${field.name}`;
    const set = (value: unknown) => (init: Init) => {
      if (field.oneof !== undefined) init[field.oneof.localName] = { case: field.localName, value };
      else init[field.localName] = value;
    };
    if (field.fieldKind === 'scalar' && field.scalar === ScalarType.STRING) {
      for (const { label, value } of strings)
        variants.push({ what: `${path} (${label})`, apply: set(value) });
    } else if (
      field.fieldKind === 'list' &&
      field.listKind === 'scalar' &&
      field.scalar === ScalarType.STRING
    ) {
      if (lists)
        variants.push({ what: `${path} (${options.listItems} entries)`, apply: set(many('not a name!')) });
      for (const { label, value } of strings)
        variants.push({ what: `${path} (one entry, ${label})`, apply: set([value]) });
    } else if (field.fieldKind === 'map') {
      if (field.mapKind === 'scalar' && field.scalar === ScalarType.STRING) {
        if (lists) {
          const entries = Object.fromEntries(many('key').map((k) => [k, 'not a value!']));
          variants.push({ what: `${path} (${options.listItems} entries)`, apply: set(entries) });
        }
        for (const { label, value } of strings) {
          variants.push(
            { what: `${path} (a value, ${label})`, apply: set({ k: value }) },
            { what: `${path} (a key, ${label})`, apply: set({ [value]: 'v' }) },
          );
        }
      }
    } else if (field.fieldKind === 'message' && !field.message.typeName.startsWith('google.')) {
      for (const inner of variantsOf(field.message, options, depth + 1, `${path}.`)) {
        variants.push({
          what: inner.what,
          apply: (init) => {
            const nested: Init =
              field.oneof !== undefined
                ? baseOf(field.message, options.queue)
                : ((init[field.localName] as Init | undefined) ?? baseOf(field.message, options.queue));
            inner.apply(nested);
            set(nested)(init);
          },
        });
      }
    } else if (field.fieldKind === 'list' && field.listKind === 'message') {
      for (const inner of variantsOf(field.message, options, depth + 1, `${path}[0].`)) {
        variants.push({
          what: inner.what,
          apply: (init) => {
            const element = baseOf(field.message, options.queue);
            inner.apply(element);
            init[field.localName] = [element];
          },
        });
      }
    }
  }
  return variants;
}

/** Every oversize case of every method of `service` (default: sepp.v1.QueueService). */
export function oversizeCases(options: OversizeOptions, service = 'sepp.v1.QueueService'): OversizeCase[] {
  const desc = registry.getService(service);
  if (desc === undefined) throw new Error(`no service ${service}`);
  const cases: OversizeCase[] = [];
  for (const method of desc.methods) {
    for (const variant of variantsOf(method.input, options, 0, '')) {
      const init = baseOf(method.input, options.queue);
      variant.apply(init);
      const message = create(method.input, init as MessageShape<DescMessage>);
      cases.push({
        path: `/${service}/${method.name}`,
        method: method.name,
        requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
        what: variant.what,
        bytes: Buffer.from(toBinary(method.input, message)),
      });
    }
  }
  return cases;
}

export interface OversizeAnswer {
  code: status;
  details: string;
  /** Every `message` string in the responses, at any depth (a job's rejection, a settlement's answer). */
  messages: string[];
}

/** The `message` strings anywhere in a decoded response. */
function messagesIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) messagesIn(item, found);
  else if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'message' && typeof inner === 'string') found.push(inner);
      else messagesIn(inner, found);
    }
  }
  return found;
}

/**
 * Sends one case and waits for its end: a unary call's status; a stream's
 * status after its one message (and, for Work, a credit, which makes the
 * server look at a subscription) and a half-close; an Events stream's
 * status, or OK once it has answered once (then it is cancelled).
 */
export function sendOversize(client: Client, c: OversizeCase, deadlineMs = 10_000): Promise<OversizeAnswer> {
  const desc = registry.getService(c.path.split('/')[1] ?? '');
  const method = desc?.methods.find((m) => m.name === c.method);
  if (method === undefined) throw new Error(`no method ${c.path}`);
  const decode = (bytes: Buffer) => fromBinary(method.output, bytes);
  const options = { deadline: Date.now() + deadlineMs };
  return new Promise((resolve) => {
    const messages: string[] = [];
    const done = (code: status, details: string) => resolve({ code, details, messages });
    const onData = (response: unknown) => messagesIn(response, messages);
    if (!c.requestStream && method.methodKind === 'unary') {
      client.makeUnaryRequest(
        c.path,
        (b: Buffer) => b,
        decode,
        c.bytes,
        new Metadata(),
        options,
        (error, response) => {
          if (response !== undefined) onData(response);
          if (error) done(error.code, error.details);
          else done(status.OK, '');
        },
      );
      return;
    }
    let finished = false;
    const listen = (stream: ClientReadableStream<unknown>) => {
      stream.on('data', (response: unknown) => {
        onData(response);
        // Events never ends by itself: once it answered, the request was taken.
        if (!c.requestStream && !finished) {
          finished = true;
          stream.cancel();
          done(status.OK, '');
        }
      });
      stream.on('error', (error: ServiceError) => {
        if (!finished) done(error.code, error.details);
        finished = true;
      });
      stream.on('status', (s: { code: status; details: string }) => {
        if (!finished) done(s.code, s.details);
        finished = true;
      });
    };
    if (!c.requestStream) {
      listen(
        client.makeServerStreamRequest(c.path, (b: Buffer) => b, decode, c.bytes, new Metadata(), options),
      );
      return;
    }
    const stream = client.makeBidiStreamRequest(c.path, (b: Buffer) => b, decode, new Metadata(), options);
    listen(stream);
    stream.write(c.bytes);
    if (c.method === 'Work') stream.write(workCredit);
    stream.end();
  });
}

const workCredit = (() => {
  const work = registry.getMessage('sepp.v1.WorkRequest');
  if (work === undefined) throw new Error('no sepp.v1.WorkRequest');
  return Buffer.from(
    toBinary(
      work,
      create(work, { kind: { case: 'credit', value: { jobs: 1 } } } as unknown as MessageShape<DescMessage>),
    ),
  );
})();

/**
 * Sends every case and checks each answer: it came (no deadline passed), it is
 * no bug (INTERNAL, UNKNOWN), and every message in it is at most
 * messageBytesMax bytes. Returns the longest message seen, for the log.
 */
export async function checkOversizeAnswers(
  client: Client,
  cases: readonly OversizeCase[],
): Promise<{ bytes: number; what: string }> {
  const longest = { bytes: 0, what: '' };
  for (const c of cases) {
    const answer = await sendOversize(client, c);
    const what = `${c.method} ${c.what}`;
    assert.ok(
      ![status.DEADLINE_EXCEEDED, status.CANCELLED, status.INTERNAL, status.UNKNOWN].includes(answer.code),
      `${what} answered ${status[answer.code]}: ${answer.details.slice(0, 200)}`,
    );
    for (const message of [answer.details, ...answer.messages]) {
      const bytes = Buffer.byteLength(message);
      assert.ok(bytes <= messageBytesMax, `${what}: a message of ${bytes} bytes: ${message.slice(0, 200)}…`);
      if (bytes > longest.bytes) Object.assign(longest, { bytes, what });
    }
  }
  return longest;
}
