/**
 * Upper bounds of the answers of the gRPC writes that list items (an enqueue batch, an atomic
 * enqueue, a flow, acks, a batch's jobs), computed from their decoded request before their handler has it
 * (unsent-answers.ts keeps that room for them, as the HTTP API does: http/answer-bounds.ts). Their
 * answer is one item per item of the request, each at most: a 36-character id, an enum, a bool,
 * an index, protobuf tags and lengths (`answerItemFramingBytes` in all), and one message cut to
 * `messageBytesMax` bytes of UTF-8 (status.ts's wireMessage) or a flow job's name (checked to
 * limits.max_name_length letters, digits and `._:-`). Items are counted up to the engine's limit:
 * a request with more is refused whole before anything is stored, with a status and no answer.
 * Other writes answer a fixed shape, and keep the guess of their answer (unsent-answers.ts).
 */
import { messageBytesMax } from '../config/index.ts';
import type { EngineLimits } from '../engine/settings.ts';

/** An item's protobuf beside its message or name: tags, lengths, an id, an enum, an index, bools. */
export const answerItemFramingBytes = 64;

/** The envelope of a list answer: its own fields (committed) and tags. */
const envelopeBytes = 64;

/** The largest item of a result, rejection or ack outcome. */
const itemBytesMax = answerItemFramingBytes + messageBytesMax;

/**
 * The most a Batch takes: ids (5 of 36 characters), counts and times (8 varints), a state, bools,
 * its owner (a key's name, at most 64 characters) in `batchFramingBytes`, and its completionError
 * (cut as every message is).
 */
const batchFramingBytes = 512;
const batchBytesMax = batchFramingBytes + messageBytesMax;

/** The items of `field` of a decoded request, up to `max`. */
function itemsOf(request: unknown, field: string, max: number): number {
  if (typeof request !== 'object' || request === null) return 0;
  const items = (request as Record<string, unknown>)[field];
  return Array.isArray(items) ? Math.min(items.length, max) : 0;
}

/**
 * The most bytes the answer of a call of `method` (its path) with the decoded `request` can be,
 * or undefined for a method whose answer does not list the request's items.
 */
export function answerBytesMaxOf(method: string, request: unknown, limits: EngineLimits): number | undefined {
  const name = method.slice(method.lastIndexOf('/') + 1);
  switch (name) {
    case 'EnqueueBatch':
    case 'EnqueueAtomic':
      return envelopeBytes + itemsOf(request, 'jobs', limits.maxBatchJobs) * itemBytesMax;
    case 'EnqueueFlow':
      return (
        envelopeBytes +
        itemsOf(request, 'jobs', limits.maxFlowJobs) *
          Math.max(itemBytesMax, answerItemFramingBytes + limits.maxNameLength)
      );
    case 'CreateBatch':
    case 'AddToBatch':
      return envelopeBytes + batchBytesMax + itemsOf(request, 'jobs', limits.maxBatchJobs) * itemBytesMax;
    case 'AckBatch':
      return envelopeBytes + itemsOf(request, 'acks', limits.maxReserveJobs) * itemBytesMax;
    default:
      return undefined;
  }
}
