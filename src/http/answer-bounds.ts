/**
 * Upper bounds of the answers of the HTTP API's writes, computed from their parsed request before
 * they run. A write's answer cannot be refused after the write was carried out (its client would
 * do it again), so room for the most it can answer is reserved in the budgets of answers not yet
 * sent (unsent-answers.ts) before its handler runs, and the write is refused (429, before anything
 * was done) when that room is not there. Its answer then never exceeds its reservation, and a key
 * holds at most its budget of answers.
 *
 * Every write's answer is a fixed shape, or a list of items as long as the request's (results of
 * an enqueue, of acks, a flow's jobs) each of a bounded size: what an item holds is ids, numbers,
 * enum strings, names checked against limits.max_name_length (letters, digits and `._:-`: one byte
 * each) and at most one message, which is cut to `answerMessageBytesMax` here. A request with more
 * items than the engine takes is refused whole before it stores anything (limits.max_batch_jobs,
 * max_flow_jobs, max_reserve_jobs), with an error answer that holds no room: items are counted up
 * to that limit. tests/http/answer-bounds.test.ts checks the bounds against worst-case samples.
 */
import type { JsonInput } from './json-input.ts';

/**
 * The most bytes a message in a write's answer is sent as, JSON-encoded (its quotes and escapes
 * counted): a rejection's, an ack's outcome's, a batch's completionError. A longer one is cut,
 * ending with `…`. The engine's messages name a field, a limit and a setting (about 100 to 200
 * bytes; an unknown dependency's names its id).
 */
export const answerMessageBytesMax = 512;

/**
 * The most bytes an item of a write's answer takes besides its message and its name (commas,
 * field names, a 36-character id, numbers of at most 17 characters, a reason or code of at most 24).
 */
export const answerItemFramingBytes = 128;

/**
 * The most bytes a write's answer of a fixed shape takes (ack, nack, extend, cancel, a flow's
 * or a batch's cancel counts, an answer's envelope around its items): fields of ids, numbers and
 * states, none of them a message or an echo of the request.
 */
export const fixedAnswerBytesMax = 1024;

/** A result of an enqueue (accepted, or a rejection), a rejection by index, an ack's outcome. */
export const answerItemBytesMax = answerItemFramingBytes + answerMessageBytesMax;

/** `message`, cut so that it is at most answerMessageBytesMax bytes JSON-encoded. */
export function boundedMessage(message: string): string {
  if (message.length * 6 + 2 <= answerMessageBytesMax) return message;
  if (jsonBytes(message) <= answerMessageBytesMax) return message;
  const ellipsis = '…';
  // Room for the quotes and the ellipsis (3 bytes in UTF-8); whole code points only.
  let roomBytes = answerMessageBytesMax - 2 - Buffer.byteLength(ellipsis);
  let cut = '';
  for (const char of message) {
    const bytes = jsonBytes(char) - 2;
    if (bytes > roomBytes) break;
    roomBytes -= bytes;
    cut += char;
  }
  return cut + ellipsis;
}

/** How many bytes `value` is sent as (JSON, UTF-8). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/**
 * The items of `field` of a parsed body, counted up to `max` (the engine refuses more, whole,
 * before storing anything): 0 when it is absent or not an array (the handler answers that).
 */
export function itemsOf(input: JsonInput, field: string, max: number): number {
  const items = input.value[field];
  return Array.isArray(items) ? Math.min(items.length, max) : 0;
}

/** An answer of `items` items of at most `itemBytes` each, in a fixed-shape envelope. */
export function itemsAnswerBytes(items: number, itemBytes: number): number {
  return fixedAnswerBytesMax + items * itemBytes;
}
