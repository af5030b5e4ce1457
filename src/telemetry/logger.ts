/**
 * Structured logs: one line per event, text for people or JSON for machines.
 * Every line carries `time` (ISO 8601, UTC), `level` and `event` (a dotted
 * name such as `rpc.call`), then the event's fields.
 *
 * Callers never pass secrets, and the logger makes sure of it anyway: a field
 * whose name says it holds a secret is replaced by `<redacted>`, and so are
 * bearer tokens and the credentials part of URLs inside any string value
 * (an exporter's error message may quote the collector URL it was given).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  /** Whether a line at `level` would be written: check it before building costly fields. */
  enabled(level: LogLevel): boolean;
}

export interface LoggerOptions {
  level: LogLevel;
  format: 'text' | 'json';
  /** Where lines go; default stderr. */
  write?: (line: string) => void;
  /** Wall clock for timestamps. */
  nowMs?: () => number;
}

export const redactedValue = '<redacted>';

/** Field names that hold secrets, whatever the event (snake_case; camelCase is split first). */
const secretField =
  /(^|_)(authorization|password|passwd|secret|token|api_?key|key_sha256|password_hash|cookie)$/i;

function isSecretField(name: string): boolean {
  return secretField.test(name.replace(/([a-z0-9])([A-Z])/g, '$1_$2'));
}
/** `Bearer <token>` anywhere in a value. */
const bearerToken = /\b(Bearer)\s+[\x21-\x7e]+/gi;
/** `scheme://user:password@host` — keep the scheme and host, hide the userinfo. */
const urlCredentials = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

/** Removes anything that looks like a credential from a value about to be logged. */
export function scrubSecrets(text: string): string {
  if (!text.includes('@') && !/bearer/i.test(text)) return text;
  return text.replace(bearerToken, `$1 ${redactedValue}`).replace(urlCredentials, `$1${redactedValue}@`);
}

function formatValue(value: string | number | boolean | null): string {
  if (typeof value !== 'string') return String(value);
  return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
}

function cleanFields(fields: LogFields): [string, string | number | boolean | null][] {
  const out: [string, string | number | boolean | null][] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    // Names that would overwrite the line's own keys are prefixed rather than dropped.
    const name = key === 'time' || key === 'level' || key === 'event' ? `field_${key}` : key;
    if (isSecretField(key)) out.push([name, redactedValue]);
    else out.push([name, typeof value === 'string' ? scrubSecrets(value) : value]);
  }
  return out;
}

/** A logger whose level can change while it runs (a config reload). */
export interface AdjustableLogger extends Logger {
  setLevel(level: LogLevel): void;
}

export function createLogger(options: LoggerOptions): AdjustableLogger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const nowMs = options.nowMs ?? Date.now;
  let threshold = levelRank[options.level];
  const log = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (levelRank[level] < threshold) return;
    const time = new Date(nowMs()).toISOString();
    const defined = cleanFields(fields);
    if (options.format === 'json') {
      write(JSON.stringify({ time, level, event, ...Object.fromEntries(defined) }));
    } else {
      const rest = defined.map(([k, v]) => `${k}=${formatValue(v)}`).join(' ');
      write(`${time} ${level.toUpperCase().padEnd(5)} ${event}${rest ? ` ${rest}` : ''}`);
    }
  };
  return {
    debug: (event, fields) => log('debug', event, fields),
    info: (event, fields) => log('info', event, fields),
    warn: (event, fields) => log('warn', event, fields),
    error: (event, fields) => log('error', event, fields),
    enabled: (level) => levelRank[level] >= threshold,
    setLevel: (level) => {
      threshold = levelRank[level];
    },
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger({ level: 'error', format: 'text', write: () => {} });
