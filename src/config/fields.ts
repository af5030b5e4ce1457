/**
 * Field kinds: how one setting's raw value (from TOML, or a string from an
 * environment variable or flag) becomes a typed value, or a message saying
 * what to write instead. Messages do not name the setting: the reader adds it.
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parsePostgresUrl } from '../store/postgres-url.ts';
import { type ListenAddress, parseListenAddress } from './listen-address.ts';
import { closestKey } from './suggest.ts';
import { formatDurationMs, formatSizeBytes, parseDurationMs, parseSizeBytes } from './units.ts';

export interface ValueAt {
  /** The value came from an environment variable or a flag, so it is text whatever its type. */
  readonly fromText: boolean;
  /** Relative paths resolve against this directory. */
  readonly baseDir: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** What kind of value a field takes; the docs and the example name it. */
export type FieldKind =
  | 'string'
  | 'choice'
  | 'boolean'
  | 'integer'
  | 'duration'
  | 'size'
  | 'ratio'
  | 'path'
  | 'url'
  | 'listen'
  | 'names'
  | 'addresses'
  | 'table'
  | 'time';

export interface Field<T> {
  readonly kind: FieldKind;
  parse(raw: unknown, at: ValueAt): Parsed<T>;
}

export interface Range {
  readonly min: number;
  readonly max: number;
}

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(message: string): Parsed<T> => ({ ok: false, message });

/** A raw value as a user would recognise it in a message. */
export function describeRaw(raw: unknown): string {
  if (typeof raw === 'string') return JSON.stringify(raw);
  if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
  if (Array.isArray(raw)) return 'a list';
  if (raw !== null && typeof raw === 'object' && raw.constructor === undefined) return 'a table';
  return `a ${typeof raw === 'object' ? 'date' : typeof raw}`;
}

/**
 * A value of the wrong type. "write it without quotes" is advice only for a
 * string that would be right unquoted (`"10"` for a number): `accepts` says
 * which; for any other text ("abc") it would send the user the wrong way.
 */
function typeMismatch<T>(raw: unknown, wanted: string, accepts?: (text: string) => boolean): Parsed<T> {
  if (typeof raw === 'string' && accepts?.(raw.trim()) === true) {
    return fail(`${describeRaw(raw)} is a string; write ${raw.trim()} without quotes`);
  }
  return fail(`${describeRaw(raw)} is not ${wanted}`);
}

export function stringField(options: {
  /** Why the pattern exists and what is allowed, for the message. */
  pattern?: { re: RegExp; help: string };
  maxLength?: number;
  /** The value is (or, mistyped, may be) a secret: messages describe it but never repeat it. */
  secret?: boolean;
}): Field<string> {
  const maxLength = options.maxLength ?? 4096;
  return {
    kind: 'string',
    parse(raw) {
      if (typeof raw !== 'string') return typeMismatch(raw, 'a string (write it in double quotes)');
      if (raw.length === 0) return fail('must not be empty');
      if (raw.length > maxLength) return fail(`is ${raw.length} characters long; the most is ${maxLength}`);
      if (options.pattern !== undefined && !options.pattern.re.test(raw)) {
        const shown = options.secret ? 'the value (not repeated here: it may be a secret)' : describeRaw(raw);
        return fail(`${shown} is not allowed: ${options.pattern.help}`);
      }
      return ok(raw);
    },
  };
}

export function choiceField<T extends string>(choices: readonly T[]): Field<T> {
  const isChoice = (text: string): text is T => (choices as readonly string[]).includes(text);
  return {
    kind: 'choice',
    parse(raw) {
      const list = choices.map((c) => `"${c}"`).join(', ');
      if (typeof raw !== 'string') return typeMismatch(raw, `one of ${list}`);
      if (isChoice(raw)) return ok(raw);
      const lower = raw.trim().toLowerCase();
      const near = isChoice(lower) ? lower : closestKey(lower, choices);
      const hint = near === undefined ? '' : ` (did you mean "${near}"?)`;
      return fail(`${describeRaw(raw)} is not one of ${list}${hint}`);
    },
  };
}

export function booleanField(): Field<boolean> {
  return {
    kind: 'boolean',
    parse(raw, at) {
      if (typeof raw === 'boolean') return ok(raw);
      if (at.fromText && (raw === 'true' || raw === 'false')) return ok(raw === 'true');
      if (at.fromText) return fail(`${describeRaw(raw)} is not true or false`);
      // Only a string can be unquoted; String() of a TOML table (no prototype) would throw.
      return typeMismatch(raw, 'true or false', (text) => text === 'true' || text === 'false');
    },
  };
}

function checkRange(value: number, raw: unknown, range: Range, advice: string): Parsed<number> {
  const shown =
    typeof raw === 'string' && raw.trim() !== String(value) ? `${describeRaw(raw)} (${value})` : value;
  if (value < range.min) return fail(`${shown} is below the minimum ${range.min}; ${advice}`);
  if (value > range.max) return fail(`${shown} is above the maximum ${range.max}; ${advice}`);
  return ok(value);
}

/**
 * A whole number, as TOML integer or (from env/flags) digits. One too large
 * to be exact (a float such as 1e300) is still whole: the range check names
 * the bound it breaks, which says more than "not a whole number".
 */
function wholeNumber(raw: unknown, at: ValueAt, unitWord: string): Parsed<number> | undefined {
  if (typeof raw === 'number') {
    if (Number.isInteger(raw)) return ok(raw);
    return fail(`${raw} is not a whole number${unitWord === '' ? '' : ` of ${unitWord}`}`);
  }
  if (at.fromText && typeof raw === 'string' && /^-?\d+$/.test(raw.trim())) {
    const value = Number(raw.trim());
    if (Number.isSafeInteger(value)) return ok(value);
  }
  return undefined;
}

export function integerField(range: Range): Field<number> {
  const advice = `set a number between ${range.min} and ${range.max}`;
  return {
    kind: 'integer',
    parse(raw, at) {
      const whole = wholeNumber(raw, at, '');
      if (whole === undefined) {
        return typeMismatch(raw, `a whole number; ${advice}`, (text) => /^-?\d+$/.test(text));
      }
      return whole.ok ? checkRange(whole.value, raw, range, advice) : whole;
    },
  };
}

export function durationField(range: Range): Field<number> {
  const advice =
    `set a duration between ${range.min} and ${range.max} ms ` +
    `(${formatDurationMs(range.min)} to ${formatDurationMs(range.max)})`;
  return {
    kind: 'duration',
    parse(raw, at) {
      const whole = wholeNumber(raw, at, 'milliseconds');
      if (whole !== undefined) return whole.ok ? checkRange(whole.value, raw, range, advice) : whole;
      if (typeof raw !== 'string') return typeMismatch(raw, `a duration; ${advice}`);
      const parsed = parseDurationMs(raw);
      return parsed.ok ? checkRange(parsed.value, raw, range, advice) : parsed;
    },
  };
}

export function sizeField(range: Range): Field<number> {
  const advice = `set a size between ${range.min} and ${range.max} bytes (${formatSizeBytes(range.max)})`;
  return {
    kind: 'size',
    parse(raw, at) {
      const whole = wholeNumber(raw, at, 'bytes');
      if (whole !== undefined) return whole.ok ? checkRange(whole.value, raw, range, advice) : whole;
      if (typeof raw !== 'string') return typeMismatch(raw, `a size; ${advice}`);
      const parsed = parseSizeBytes(raw);
      return parsed.ok ? checkRange(parsed.value, raw, range, advice) : parsed;
    },
  };
}

/** A fraction such as a sampling ratio or jitter; also used for plain factors. */
export function ratioField(range: Range): Field<number> {
  const advice = `set a number between ${range.min} and ${range.max}`;
  return {
    kind: 'ratio',
    parse(raw, at) {
      let value: number | undefined;
      if (typeof raw === 'number') value = raw;
      else if (at.fromText && typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw.trim()))
        value = Number(raw);
      if (value === undefined || !Number.isFinite(value)) {
        return typeMismatch(raw, `a number; ${advice}`, (text) => /^-?\d+(\.\d+)?$/.test(text));
      }
      return checkRange(value, raw, range, advice);
    },
  };
}

/** A file or directory; relative paths resolve against the file that names them (or the cwd). */
export function pathField(): Field<string> {
  return {
    kind: 'path',
    parse(raw, at) {
      if (typeof raw !== 'string') return typeMismatch(raw, 'a path (write it in double quotes)');
      if (raw.trim() === '') return fail('must not be empty');
      if (raw.includes('\0')) return fail('must not contain a NUL character');
      return ok(resolve(at.baseDir, raw));
    },
  };
}

/**
 * A URL as a message may show it: the userinfo (`user:password@`) and the
 * query (which may carry a token) are hidden, even when the text does not
 * parse as a URL.
 */
function describeUrl(raw: string): string {
  const at = raw.lastIndexOf('@');
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? '';
  const shown = at === -1 ? raw : `${scheme}<redacted>@${raw.slice(at + 1)}`;
  return JSON.stringify(shown.replace(/\?.*$/s, '?<redacted>'));
}

export function urlField(protocols: readonly string[]): Field<string> {
  const example = 'e.g. "http://localhost:4318"';
  return {
    kind: 'url',
    parse(raw) {
      if (typeof raw !== 'string') return typeMismatch(raw, `a URL, ${example}`);
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return fail(`${describeUrl(raw)} is not a URL; write a full URL, ${example}`);
      }
      if (!protocols.includes(url.protocol)) {
        return fail(
          `${describeUrl(raw)} must start with ${protocols.map((p) => `${p}//`).join(' or ')}, ${example}`,
        );
      }
      return ok(raw);
    },
  };
}

/**
 * A PostgreSQL URL: one host, or libpq's list of hosts (`host1:5432,host2:5432`) with
 * `target_session_attrs` (src/store/postgres-url.ts); each host's URL must be a URL.
 */
export function postgresUrlField(): Field<string> {
  const example = 'e.g. "postgres://sepp@db.example:5432/sepp"';
  return {
    kind: 'url',
    parse(raw) {
      if (typeof raw !== 'string') return typeMismatch(raw, `a URL, ${example}`);
      const target = parsePostgresUrl(raw);
      if (target instanceof Error) return fail(`${describeUrl(raw)} ${target.message}, ${example}`);
      for (const { url } of target.hosts) {
        try {
          new URL(url);
        } catch {
          return fail(`${describeUrl(raw)} is not a URL; write a full URL, ${example}`);
        }
      }
      return ok(raw);
    },
  };
}

export function listenField(): Field<ListenAddress> {
  return {
    kind: 'listen',
    parse(raw) {
      if (typeof raw !== 'string') return typeMismatch(raw, 'an address "host:port" (in double quotes)');
      return parseListenAddress(raw);
    },
  };
}

/** A list of distinct names (queue names, job types) matching `re`. */
export function namesField(re: RegExp, help: string): Field<readonly string[]> {
  return {
    kind: 'names',
    parse(raw) {
      if (!Array.isArray(raw)) return typeMismatch(raw, 'a list of strings, e.g. ["send", "resend"]');
      const seen = new Set<string>();
      for (const [index, item] of raw.entries()) {
        if (typeof item !== 'string') return fail(`item ${index + 1} is ${describeRaw(item)}, not a string`);
        if (!re.test(item)) return fail(`item ${index + 1} ${describeRaw(item)} is not allowed: ${help}`);
        if (seen.has(item)) return fail(`${describeRaw(item)} is listed twice`);
        seen.add(item);
      }
      return ok(Object.freeze([...seen]));
    },
  };
}

/**
 * A list of IP addresses and CIDR ranges (`"10.0.0.5"`, `"10.0.0.0/8"`,
 * `"fd00::/8"`), each kept in the form `address/prefix`.
 */
export function addressesField(): Field<readonly string[]> {
  const example = 'e.g. ["10.0.0.5", "10.1.0.0/16", "fd00::/8"]';
  return {
    kind: 'addresses',
    parse(raw) {
      if (!Array.isArray(raw)) return typeMismatch(raw, `a list of addresses, ${example}`);
      const found: string[] = [];
      for (const [index, item] of raw.entries()) {
        if (typeof item !== 'string') return fail(`item ${index + 1} is ${describeRaw(item)}, not a string`);
        const [address = '', prefix, ...rest] = item.trim().split('/');
        const family = isIP(address);
        const bits = family === 4 ? 32 : 128;
        const what = `item ${index + 1} ${describeRaw(item)}`;
        if (family === 0 || address.includes('%') || rest.length > 0) {
          return fail(
            `${what} is not an IP address or a CIDR range (no host names, no zone ids), ${example}`,
          );
        }
        if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)) {
          return fail(`${what}: the prefix length after / must be a number from 0 to ${bits}`);
        }
        found.push(`${address}/${prefix === undefined ? bits : Number(prefix)}`);
      }
      return ok(Object.freeze(found));
    },
  };
}

/** Any text, empty included (a payload). */
export function textField(): Field<string> {
  return {
    kind: 'string',
    parse: (raw) => (typeof raw === 'string' ? ok(raw) : fail(`${describeRaw(raw)} is not a string`)),
  };
}

/** A table of strings, e.g. { team = "ops" }. */
export function stringTableField(): Field<Readonly<Record<string, string>>> {
  return {
    kind: 'table',
    parse(raw) {
      const table =
        typeof raw === 'object' && raw !== null && !Array.isArray(raw) && !(raw instanceof Date)
          ? (raw as Readonly<Record<string, unknown>>)
          : undefined;
      if (table === undefined)
        return { ok: false, message: `${describeRaw(raw)} is not a table, e.g. { team = "ops" }` };
      const result: Record<string, string> = {};
      for (const [key, value] of Object.entries(table)) {
        if (typeof value !== 'string') {
          return {
            ok: false,
            message: `${JSON.stringify(key)} is ${describeRaw(value)}; values must be strings`,
          };
        }
        result[key] = value;
      }
      return { ok: true, value: Object.freeze(result) };
    },
  };
}

/** A moment: a TOML offset datetime (2026-04-01T00:00:00Z) or the same as a string, to ms since the epoch. */
export function timeField(): Field<number> {
  const help = 'write an RFC 3339 time with its offset, e.g. 2026-04-01T00:00:00Z';
  return {
    kind: 'time',
    parse(raw) {
      const text = raw instanceof Date ? raw.toISOString() : raw;
      if (typeof text !== 'string')
        return { ok: false, message: `${describeRaw(raw)} is not a time; ${help}` };
      if (!/(Z|[+-]\d\d:\d\d)$/i.test(text))
        return { ok: false, message: `"${text}" has no offset; ${help}` };
      const ms = Date.parse(text);
      if (!Number.isFinite(ms) || ms < 0) return { ok: false, message: `"${text}" is not a time; ${help}` };
      return { ok: true, value: ms };
    },
  };
}
