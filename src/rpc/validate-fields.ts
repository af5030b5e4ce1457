/** Checks on request fields the engine does not see, with messages that name the field. */
import { SeppError } from '../engine/errors.ts';
import { isJobId } from '../engine/job-id.ts';

export function requireJobId(value: string, field = 'job_id'): string {
  if (value === '') throw new SeppError('invalid_argument', `${field}: required`);
  if (!isJobId(value))
    throw new SeppError(
      'invalid_argument',
      `${field}: ${JSON.stringify(value.slice(0, 64))} is not a job id`,
    );
  return value;
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
