/** Checks on request fields the engine does not see, with messages that name the field. */
import { SeppError } from '../engine/errors.ts';
import { normalizeJobId } from '../engine/jobs/index.ts';

/** The job id in `value` (upper-case hex accepted, lower-cased), or INVALID_ARGUMENT naming the field. */
export function requireJobId(value: string, field = 'job_id'): string {
  if (value === '') throw new SeppError('invalid_argument', `${field}: required`);
  const id = normalizeJobId(value);
  if (id === null)
    throw new SeppError(
      'invalid_argument',
      `${field}: ${JSON.stringify(value.slice(0, 64))} is not a job id (a UUID such as 01a2365f-985c-7000-b7f9-d57e51622832)`,
    );
  return id;
}

export function requireAttempt(value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new SeppError(
      'invalid_argument',
      'attempt: required, the attempt number the lease was given (1 or more)',
    );
  }
  return value;
}

export function requireString(value: string, field: string): string {
  if (value === '') throw new SeppError('invalid_argument', `${field}: required`);
  return value;
}

/**
 * A name no longer than `maxLength` (limits.max_name_length): nothing longer
 * can exist, so a longer one is INVALID_ARGUMENT here, before a lookup
 * would quote all of it in a NOT_FOUND message.
 */
export function requireName(value: string, field: string, maxLength: number): string {
  requireString(value, field);
  if (value.length > maxLength) {
    throw new SeppError(
      'invalid_argument',
      `${field}: is ${value.length} characters long, the limit is ${maxLength} (limits.max_name_length)`,
    );
  }
  return value;
}
