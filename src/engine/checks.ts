/**
 * Checks of names and sizes that every part of the engine shares: a queue,
 * type or group name, a list of queues a call reads from, and bytes and
 * durations said in words. A problem is a rejection whose message names the limit and the setting.
 */
import { type JobRejection, SeppError } from './errors.ts';
import { type EngineLimits, namePattern } from './settings.ts';

/** A content type (of a payload, of a result): printable ASCII, 1–255 characters. */
export const contentTypePattern = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;

/**
 * U+0000 (NUL) in text sepp is given is refused at every door — gRPC string fields,
 * the HTTP API's and the admin API's JSON strings and their query and path
 * parameters — with INVALID_ARGUMENT naming the field: one rule for both stores,
 * since PostgreSQL's text cannot hold it (docs/protocol.md, "Text"). Job data
 * (payloads, results, progress details) is bytes or JSON and may hold any byte.
 */
export const nulRefusal = 'holds U+0000 (NUL), which no text field may hold; send binary data in the payload';

export function holdsNul(text: string): boolean {
  return text.includes('\u0000');
}

/** A size for messages: whole MiB or KiB as such, any other size with its exact count of bytes. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  // Rounded alone, a payload 2 bytes over a 1 MiB limit would read "1.0 MiB, the limit is 1 MiB".
  if (bytes >= 1024 * 1024) return `${bytes} bytes (${(bytes / (1024 * 1024)).toFixed(1)} MiB)`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * The shortest exact rendering of a duration, as a person writes it in the config:
 * 3600000 → "1h", 1500 → "1500ms". The config layer shows settings with it too (config/units.ts).
 */
export function formatDurationMs(ms: number): string {
  for (const [unit, factor] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= factor && ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

export function checkName(
  /** The field, for messages (`name`: a flow job's local name). */
  what: 'queue' | 'type' | 'group' | 'name' | 'schedule',
  name: unknown,
  limits: EngineLimits,
): JobRejection | null {
  if (typeof name !== 'string' || name.length === 0)
    return { reason: 'invalid_name', message: `${what} is empty` };
  if (name.length > limits.maxNameLength) {
    return {
      reason: 'invalid_name',
      message: `${what} is ${name.length} characters long, the limit is ${limits.maxNameLength} (limits.max_name_length)`,
    };
  }
  if (!namePattern.test(name)) {
    return {
      reason: 'invalid_name',
      message: `${what} ${JSON.stringify(name)} may use only letters, digits and . _ : -`,
    };
  }
  return null;
}

/** Checks a list of queue names a call reads from (reserve, events): each valid, at most max_reserve_queues. */
export function checkQueueList(queues: readonly string[], limits: EngineLimits): void {
  if (queues.length > limits.maxReserveQueues) {
    throw new SeppError(
      'invalid_argument',
      `queues: ${queues.length} queues named, the limit is ${limits.maxReserveQueues} (limits.max_reserve_queues)`,
    );
  }
  for (const queue of queues) {
    const problem = checkName('queue', queue, limits);
    if (problem) throw new SeppError('invalid_argument', `queues: ${problem.message}`);
  }
}

/**
 * Refuses more than limits.max_batch_jobs ids in one call: a bound on the call itself, so
 * SeppError.tooLarge (413 over the JSON APIs, `sepp-retry: never` over gRPC).
 */
export function checkIdsPerCall(field: string, ids: number, maxBatchJobs: number): void {
  if (ids > maxBatchJobs) {
    throw SeppError.tooLarge(
      `${field}: ${ids} ids, at most ${maxBatchJobs} per call (limits.max_batch_jobs); split them into several calls`,
    );
  }
}
