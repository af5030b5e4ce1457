/**
 * Checks of the numbers a caller gives, before they reach the protocol's encoder: a value
 * the wire cannot carry (1.5 or NaN where an integer goes, a number past int32 or 2^53, a
 * string from JavaScript) is refused with INVALID_ARGUMENT naming the option. What the
 * wire can carry but the server does not accept (a priority of 12) is the server's to
 * refuse, with its own message. Connection.invoke translates any serialization failure
 * these checks miss the same way (serializationFailure).
 */
import { status } from '@grpc/grpc-js';
import { SeppError } from './errors.ts';

const int32Max = 2_147_483_647;

/** The longest deadline a call takes, in ms (a year): grpc-js throws, uncaught, on a deadline far enough out. */
export const deadlineMsMax = 365 * 24 * 3600 * 1000;

function shown(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function refused(name: string, value: unknown, what: string): SeppError {
  return new SeppError(status.INVALID_ARGUMENT, `${name}: ${shown(value)} is not ${what}`);
}

/** `value` when it is an integer a protocol int32 carries (`min` and up); else INVALID_ARGUMENT naming `name`. */
export function int32Argument(
  value: unknown,
  name: string,
  min = -int32Max - 1,
  what = 'an integer',
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > int32Max) {
    throw refused(name, value, what);
  }
  return value;
}

/** Like int32Argument, but `undefined` gives `fallback`. */
export function optionalInt32(
  value: unknown,
  name: string,
  fallback: number,
  min?: number,
  what?: string,
): number {
  return value === undefined ? fallback : int32Argument(value, name, min, what);
}

/** A page's `pageSize`: an int32 from 1 up (the server caps it at its max_page_size); 0 when not given. */
export function pageSizeArgument(value: unknown): number {
  return optionalInt32(value, 'pageSize', 0, 0, "an integer from 1 to the server's max_page_size");
}

/** True for a number the protocol carries as ms once rounded: finite, within ±2^53. */
export function isMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER;
}

/** A duration or time in ms, rounded to an integer; INVALID_ARGUMENT unless isMs. */
export function msArgument(value: unknown, name: string): number {
  if (!isMs(value)) throw refused(name, value, 'a number of ms');
  return Math.round(value);
}

/** Like msArgument, but `undefined` gives `fallback`. */
export function optionalMs(value: unknown, name: string, fallback: number): number {
  return value === undefined ? fallback : msArgument(value, name);
}

/** A call's `deadlineMs`: a number of ms up to deadlineMsMax (0 or less: the deadline has passed). */
export function deadlineArgument(value: unknown, name = 'deadlineMs'): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value > deadlineMsMax) {
    throw refused(name, value, `a number of ms up to ${deadlineMsMax} (a year)`);
  }
  return value;
}

/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
const timerMsMax = 2_147_483_647;

/** A wait the SDK times itself (`waitFor`'s `timeoutMs`): a number of ms from 0 to 2^31 - 1, or undefined for none. */
export function timerArgument(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || value > timerMsMax) {
    throw refused(name, value, `a number of ms from 0 to ${timerMsMax}`);
  }
  return value;
}

const serializationPrefix = 'Request message serialization failure: ';

/**
 * grpc-js's answer when a request could not be encoded (nothing was sent): INTERNAL with
 * "Request message serialization failure: invalid int32: 1.5". That is the caller's
 * argument, not the server's fault: INVALID_ARGUMENT naming the call, or undefined for
 * any other error.
 */
export function serializationFailure(call: string, details: string): SeppError | undefined {
  if (!details.startsWith(serializationPrefix)) return undefined;
  const why = details.slice(serializationPrefix.length);
  return new SeppError(
    status.INVALID_ARGUMENT,
    `${call}: the request holds a value the protocol cannot carry (${why}): ` +
      'counts, page sizes, limits and priorities are integers, durations and times finite numbers of ms',
  );
}
