/**
 * Evidence for "no secret in any log": every server a test starts writes its
 * log lines into the run's log directory, and every secret a test configures
 * or sends is registered there too. scripts/run-tests.mjs sets
 * SEPP_TEST_LOG_DIR, and after the run it searches every captured line for
 * every registered secret (scripts/secret-grep.mjs).
 *
 * Layout of the directory:
 *   logs/<source>-<pid>-<n>.log   one file per server (or CLI run), one line per log line
 *   secrets/<pid>.jsonl           {"kind": "...", "value": "..."} per registered secret
 *
 * Without SEPP_TEST_LOG_DIR (a test file run on its own with node --test)
 * nothing is written and every function here does nothing.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { createLogger, type Logger, type LogLevel, silentLogger } from '../../src/telemetry/logger.ts';

const logDir = process.env.SEPP_TEST_LOG_DIR || undefined;

/** Shorter values would match ordinary text by chance; a secret a test uses is always longer. */
const minSecretLength = 8;

/** Lines waiting to be appended, by file: a synchronous write per line would slow busy servers down. */
const pending = new Map<string, string[]>();
let pendingChars = 0;
const flushAtChars = 256 * 1024;
let files = 0;
const registered = new Set<string>();

function flush(): void {
  for (const [file, lines] of pending) {
    if (lines.length > 0) appendFileSync(file, `${lines.join('\n')}\n`);
  }
  pending.clear();
  pendingChars = 0;
}

if (logDir !== undefined) {
  mkdirSync(join(logDir, 'logs'), { recursive: true });
  mkdirSync(join(logDir, 'secrets'), { recursive: true });
  // Whatever is still buffered when the test process ends reaches the file.
  process.on('exit', flush);
}

/** Registers a value that must never appear in a captured log line. */
export function registerSecret(kind: string, value: string): void {
  if (logDir === undefined || registered.has(value)) return;
  if (value.length < minSecretLength) {
    throw new Error(`a ${kind} of ${value.length} characters is too short to search logs for reliably`);
  }
  registered.add(value);
  appendFileSync(join(logDir, 'secrets', `${process.pid}.jsonl`), `${JSON.stringify({ kind, value })}\n`);
}

/** The lines of a PEM file's body: each is base64 of the key, a secret on its own. */
function registerPem(kind: string, path: string): void {
  if (!existsSync(path)) return;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const body = line.trim();
    if (body !== '' && !body.startsWith('-----') && body.length >= minSecretLength)
      registerSecret(kind, body);
  }
}

/**
 * Registers every secret a sepp.toml holds, found by name the way an operator
 * reads the file (not through the config code under test): API keys and their
 * digests, password hashes, TLS private keys, credentials in the collector URL.
 * A file that is not TOML (a test of a file cut short) registers nothing: the
 * test registers what it cut from, whole.
 */
export function registerConfigSecrets(toml: string): void {
  if (logDir === undefined) return;
  const visit = (value: unknown, key: string): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, key);
      return;
    }
    if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) visit(v, k);
      return;
    }
    if (typeof value !== 'string') return;
    if (['key', 'key_sha256', 'password_hash', 'metrics_token', 'metrics_token_sha256'].includes(key))
      registerSecret(key, value);
    else if (key === 'key_file') registerPem('tls private key', value);
    else if (key === 'otlp_endpoint') {
      const url = URL.canParse(value) ? new URL(value) : undefined;
      if (url !== undefined && url.password !== '') registerSecret('collector password', url.password);
    }
  };
  let document: unknown;
  try {
    document = parse(toml);
  } catch (error) {
    if (error instanceof TomlError) return;
    throw error;
  }
  visit(document, '');
}

/** A new capture file for one server or CLI run; undefined when capturing is off. */
function captureFile(source: string): string | undefined {
  if (logDir === undefined) return undefined;
  files++;
  return join(logDir, 'logs', `${source}-${process.pid}-${files}.log`);
}

/** Appends raw output (a child process's stderr, a CLI run's output) to a new capture file. */
export function captureOutput(source: string): (text: string) => void {
  const file = captureFile(source);
  if (file === undefined) return () => {};
  let partial = '';
  return (text: string) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    const complete = lines.filter((line) => line !== '');
    if (complete.length > 0) append(file, complete);
  };
}

function append(file: string, lines: string[]): void {
  let buffered = pending.get(file);
  if (buffered === undefined) {
    buffered = [];
    pending.set(file, buffered);
  }
  for (const line of lines) {
    buffered.push(line);
    pendingChars += line.length;
  }
  if (pendingChars >= flushAtChars) flush();
}

/** Writes everything captured so far to disk (a server that is being stopped). */
export function flushCaptured(): void {
  if (logDir !== undefined) flush();
}

/**
 * A logger for a server under test: every line, down to debug, goes to a
 * capture file; `also` (a test's own logger) gets each call as well.
 */
export function captureLogger(source: string, also?: Logger): Logger {
  const file = captureFile(source);
  if (file === undefined) return also ?? silentLogger;
  const captured = createLogger({ level: 'debug', format: 'json', write: (line) => append(file, [line]) });
  if (also === undefined) return captured;
  const tee =
    (level: LogLevel): Logger[LogLevel] =>
    (event, fields) => {
      captured[level](event, fields);
      also[level](event, fields);
    };
  return {
    debug: tee('debug'),
    info: tee('info'),
    warn: tee('warn'),
    error: tee('error'),
    enabled: () => true,
  };
}
