/** Flag values that name a time or a length of time, checked with a message that names the flag. */
import { parseDurationMs } from '../../config/index.ts';
import { UsageError } from '../failure.ts';

/** `--delay 30s`, `--ttl 5m`: milliseconds. */
export function durationFlag(flag: string, value: string): number {
  const duration = parseDurationMs(value);
  if (!duration.ok) throw new UsageError(`--${flag} ${duration.message}`);
  return duration.value;
}

/** `--run-at 2026-05-01T09:00:00Z`: milliseconds since the epoch. */
export function timeFlag(flag: string, value: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new UsageError(`--${flag} "${value}" is not a time; write ISO 8601, e.g. 2026-05-01T09:00:00Z`);
  }
  return ms;
}

/** At most one of these flags, given by name and value (undefined or false: absent). */
export function oneOf(flags: Readonly<Record<string, unknown>>): void {
  const present = Object.entries(flags).filter(([, value]) => value !== undefined && value !== false);
  if (present.length > 1) {
    const names = Object.keys(flags).map((f) => `--${f}`);
    const list = `${names.slice(0, -1).join(', ')} ${names.length === 2 ? 'or' : 'and'} ${names.at(-1)}`;
    throw new UsageError(names.length === 2 ? `give ${list}, not both` : `give one of ${list}`);
  }
}
