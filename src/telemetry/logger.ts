/**
 * Structured logs: one line per event, text for people or JSON for machines.
 * Fields are key=value pairs; callers never log secrets (API keys and
 * password hashes are never passed here — see config redaction).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
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

function formatValue(value: string | number | boolean | null): string {
  if (typeof value !== 'string') return String(value);
  return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
}

export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const nowMs = options.nowMs ?? Date.now;
  const threshold = levelRank[options.level];
  const log = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (levelRank[level] < threshold) return;
    const time = new Date(nowMs()).toISOString();
    const defined = Object.entries(fields).filter(
      (entry): entry is [string, string | number | boolean | null] => entry[1] !== undefined,
    );
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
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger({ level: 'error', format: 'text', write: () => {} });
