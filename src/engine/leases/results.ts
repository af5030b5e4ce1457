/**
 * Job results: what an ack may carry. A result is bytes with a content type,
 * like a payload, at most limits.maxResultBytes. It is kept with the job while
 * the job's queue retains completed jobs (completed_retention_ms > 0) and is
 * sent in the job's `completed` event either way.
 */

import { contentTypePattern, formatBytes } from '../checks.ts';
import { SeppError } from '../errors.ts';
import type { EngineLimits } from '../settings.ts';
import type { Ack } from '../types.ts';

export const defaultResultContentType = 'application/octet-stream';

/** Refuses a result that is too large or has a malformed content type (invalid_argument); nothing is changed. */
export function checkAckResult(ack: Ack, limits: EngineLimits): void {
  if (ack.result === undefined) return;
  if (!(ack.result instanceof Uint8Array)) throw new SeppError('invalid_argument', 'result must be bytes');
  if (ack.result.byteLength > limits.maxResultBytes) {
    throw new SeppError(
      'invalid_argument',
      `result of job ${ack.jobId} is ${formatBytes(ack.result.byteLength)}, the limit is ` +
        `${formatBytes(limits.maxResultBytes)} (limits.max_result_bytes); store large output elsewhere and return a reference`,
    );
  }
  const contentType = ack.resultContentType;
  if (contentType !== undefined && contentType !== '' && !contentTypePattern.test(contentType)) {
    throw new SeppError(
      'invalid_argument',
      'result_content_type must be 1–255 printable ASCII characters, such as application/json',
    );
  }
}

/** The content type stored with a result; null when the ack carries none. */
export function resultContentTypeOf(ack: Ack): string | null {
  if (ack.result === undefined) return null;
  return ack.resultContentType === undefined || ack.resultContentType === ''
    ? defaultResultContentType
    : ack.resultContentType;
}
