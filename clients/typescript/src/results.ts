/**
 * Job results and progress as the SDK sends and reads them. A result is
 * bytes with a content type, like a payload: a handler's return value (or
 * `ack`'s `result`) is encoded by its type, and a result read back (waitFor,
 * getJob, events) is decoded by its content type.
 */
import { status } from '@grpc/grpc-js';
import { SeppError } from './errors.ts';
import type { JobProgress as ProtoJobProgress, JobResult as ProtoJobResult } from './gen/sepp/v1/job.js';

const jsonType = 'application/json';
const jsonContentType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(contentType: string): boolean {
  return jsonContentType.test(contentType);
}
const textType = 'text/plain; charset=utf-8';

/** A result given as bytes with its own content type: return one from a handler to choose both. */
export class JobResult {
  /** The result's bytes. */
  readonly data: Buffer;

  /** `data` as it is, labelled `contentType` (default `application/octet-stream`). */
  constructor(
    data: Uint8Array | string,
    readonly contentType = 'application/octet-stream',
  ) {
    this.data =
      typeof data === 'string'
        ? Buffer.from(data, 'utf8')
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
}

/**
 * A handler's return value (or `ack`'s `result`) as the protocol's result:
 * `undefined` is no result; a JobResult as given; bytes as
 * `application/octet-stream`; a string as `text/plain; charset=utf-8`;
 * anything else as JSON. Throws when a value has no JSON form.
 */
export function encodeResult(value: unknown): ProtoJobResult | undefined {
  if (value === undefined) return undefined;
  if (value instanceof JobResult) return { data: value.data, contentType: value.contentType };
  if (value instanceof Uint8Array) {
    return { data: Buffer.from(value.buffer, value.byteOffset, value.byteLength), contentType: '' };
  }
  if (typeof value === 'string') return { data: Buffer.from(value, 'utf8'), contentType: textType };
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new SeppError(
      status.INVALID_ARGUMENT,
      `the result cannot be sent as JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (text === undefined) {
    throw new SeppError(status.INVALID_ARGUMENT, 'the result has no JSON form (a function or a symbol)');
  }
  return { data: Buffer.from(text, 'utf8'), contentType: jsonType };
}

/**
 * A stored result decoded by its content type: JSON → the parsed value (the
 * bytes when they do not parse), `text/*` → a string, anything else → a Buffer.
 */
export function decodeResult(data: Buffer, contentType: string): unknown {
  if (isJsonContentType(contentType)) {
    try {
      return JSON.parse(data.toString('utf8'));
    } catch {
      return data;
    }
  }
  if (/^text\//i.test(contentType)) return data.toString('utf8');
  return data;
}

/** How far along a job is, as its worker last reported. */
export interface JobProgress {
  /** 0 to 100, or null when the worker reported no percentage. */
  percent: number | null;
  /** The JSON document the worker reported (parsed), or null. */
  data: unknown;
  /** When it was last reported. */
  reportedAt: Date;
}

export function progressFromProto(progress: ProtoJobProgress | undefined): JobProgress | null {
  if (progress === undefined) return null;
  let data: unknown = null;
  if (progress.json !== '') {
    try {
      data = JSON.parse(progress.json);
    } catch {
      data = progress.json;
    }
  }
  return {
    percent: progress.hasPercent ? progress.percent : null,
    data,
    reportedAt: new Date(progress.reportedAtMs),
  };
}

/** A progress report's fields: `progress(50)`, `progress({ step })` or `progress(50, { step })`. Throws TypeError for a bad one. */
export function progressFields(
  percentOrData: unknown,
  data?: unknown,
): { percent: number; hasPercent: boolean; json: string } {
  let percent: number | undefined;
  let document: unknown;
  if (typeof percentOrData === 'number') {
    percent = percentOrData;
    document = data;
  } else {
    document = percentOrData;
  }
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new TypeError(`progress: the percentage must be a number from 0 to 100, not ${percent}`);
  }
  const json = document === undefined ? '' : JSON.stringify(document);
  if (json === undefined) throw new TypeError('progress: the document has no JSON form');
  if (percent === undefined && json === '') {
    throw new TypeError('progress: give a percentage (0 to 100), a JSON document, or both');
  }
  return { percent: percent ?? 0, hasPercent: percent !== undefined, json };
}
