/** Rendering for people (aligned tables, short ages) and for scripts (jobs as plain JSON). */
import type { Job } from '../../../clients/typescript/src/index.ts';

/** Left-aligned columns separated by two spaces; the header row first. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** 950 → "950ms", 12_300 → "12s", 5_400_000 → "1.5h". */
export function age(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  for (const [unit, size] of units) {
    if (ms >= size) {
      const value = ms / size;
      return `${value >= 10 ? Math.round(value) : Math.round(value * 10) / 10}${unit}`;
    }
  }
  return `${ms}ms`;
}

export function time(date: Date | null): string {
  return date === null ? '-' : date.toISOString();
}

/** One line of text, shortened for a table cell. */
export function cell(text: string | null, max = 60): string {
  if (text === null || text === '') return '-';
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const textType = /^text\//i;

export interface Decoded {
  encoding: 'json' | 'text' | 'base64';
  value: unknown;
}

/**
 * Bytes decoded by their content type: JSON value, text, or base64. JSON nested too deep to
 * be written out again is its text: JSON.parse reads any depth, JSON.stringify recurses, and
 * a producer's payload (or a worker's result) of 100,000 nested arrays made `sepp job` and
 * `sepp events` end with "Maximum call stack size exceeded".
 */
export function decodeBytes(bytes: Buffer, contentType: string): Decoded {
  if (jsonType.test(contentType)) {
    const text = bytes.toString('utf8');
    try {
      const value: unknown = JSON.parse(text);
      JSON.stringify(value);
      return { encoding: 'json', value };
    } catch (error) {
      if (error instanceof RangeError) return { encoding: 'text', value: text };
      // Not valid JSON after all: show the bytes.
    }
  }
  if (textType.test(contentType)) return { encoding: 'text', value: bytes.toString('utf8') };
  return { encoding: 'base64', value: bytes.toString('base64') };
}

/** The payload decoded by its content type: JSON value, text, or base64 bytes. */
export function decodePayload(job: Job): Decoded {
  return decodeBytes(job.payload, job.contentType);
}

/** Decoded bytes for people: JSON pretty-printed, at most `maxChars` characters. */
export function showDecoded({ encoding, value }: Decoded, maxChars: number): string {
  const shown = encoding === 'json' ? JSON.stringify(value, null, 2) : String(value);
  return shown.length > maxChars ? `${shown.slice(0, maxChars)}… (--output json shows all)` : shown;
}

/** A job's result as plain JSON fields for scripts (decoded by content type), or none. */
export function resultJson(bytes: Buffer | null, contentType: string | null) {
  if (bytes === null || contentType === null) return { result: null };
  const { encoding, value } = decodeBytes(bytes, contentType);
  return { resultContentType: contentType, resultEncoding: encoding, result: value };
}

/**
 * A job as plain JSON for scripts: dates as ISO strings, the payload decoded by
 * content type. A listing (`withDetail` false) has neither the payload nor the
 * error history, because the server leaves them out of pages: the keys are
 * absent rather than empty, so no one reads "no errors" into them.
 */
export function jobJson(job: Job, withDetail: boolean) {
  const payload = withDetail ? decodePayload(job) : undefined;
  return {
    id: job.id,
    queue: job.queue,
    type: job.type,
    state: job.state,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    contentType: job.contentType,
    payloadBytes: job.payloadBytes,
    ...(payload === undefined ? {} : { payloadEncoding: payload.encoding, payload: payload.value }),
    idempotencyKey: job.idempotencyKey,
    group: job.group,
    metadata: job.metadata,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
    // A job deleted as it finished: only its outcome is known (outcomeOnly).
    enqueuedAt: job.outcomeOnly ? null : job.enqueuedAt,
    runAt: job.outcomeOnly ? null : job.runAt,
    leasedAt: job.leasedAt,
    leaseDeadline: job.leaseDeadline,
    workerId: job.workerId,
    lastError: job.lastError,
    ...(withDetail ? { errors: job.errors } : {}),
    deadReason: job.deadReason,
    failedAt: job.failedAt,
    completedAt: job.completedAt,
    expiresAt: job.expiresAt,
    timeoutMs: job.timeoutMs,
    timeoutAt: job.timeoutAt,
    debounceKey: job.debounceKey,
    debounceUntil: job.debounceUntil,
    cancelledAt: job.cancelledAt,
    cancelledBy: job.cancelledBy,
    ...resultJson(job.resultBytes, job.resultContentType),
    resultBytes: job.resultSize,
    progress: job.progress,
    outcomeOnly: job.outcomeOnly,
    // A job in a workflow (docs/workflows.md): what it waits on, what waits on it, its batch.
    ...(job.dependencies.length > 0 ? { dependencies: job.dependencies } : {}),
    ...(job.dependents.length > 0 ? { dependents: job.dependents } : {}),
    ...(job.batchId === null ? {} : { batchId: job.batchId }),
  };
}
