/**
 * Secrets the config reads from a file or an environment variable (a push
 * target's signing secret, the PostgreSQL password): read when the config is
 * loaded, so that a missing or unreadable secret is a problem of the file (a
 * start or a reload refuses it) rather than a failure later. The value lives
 * only inside a ConfigSecret, which every rendering of the config (JSON,
 * `util.inspect`, the admin configuration page) shows as redacted; messages
 * give its length, never its bytes.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import type { ConfigReader } from './reader.ts';
import { redacted } from './redact.ts';
import type { ConfigSecret } from './types.ts';

/** Where secrets come from; absent when the caller cannot read them (`sepp config check` of a lone file). */
export interface SecretIo {
  readonly readFile: (path: string) => Buffer;
  readonly env: Readonly<Record<string, string | undefined>>;
}

class Secret implements ConfigSecret {
  readonly #value: Buffer;
  readonly sha256: string;

  constructor(value: Buffer) {
    this.#value = value;
    this.sha256 = createHash('sha256').update(value).digest('hex');
  }

  reveal(): Buffer {
    return this.#value;
  }

  toJSON(): string {
    return redacted;
  }

  [inspect.custom](): string {
    return redacted;
  }

  toString(): string {
    return redacted;
  }
}

/** A secret the loader could not read (no file system given): the server never runs with it. */
export const unreadSecret: ConfigSecret = new Secret(Buffer.alloc(0));

/** Where one secret is to be read from: exactly one of `file` and `env`, and the keys that name them. */
export interface SecretSource {
  readonly file: string | null;
  readonly env: string | null;
  readonly fileKey: string;
  readonly envKey: string;
  /** What the secret is, for messages: `the push signing secret`. */
  readonly what: string;
  readonly minBytes: number;
  readonly maxBytes: number;
  /** How to make a good one, for the message about its length. */
  readonly hint: string;
}

/** Reads the secret of `source`; undefined (with a problem reported) when it cannot. */
export function readSecret(
  reader: ConfigReader,
  source: SecretSource,
  io: SecretIo | undefined,
): ConfigSecret | undefined {
  if (io === undefined) return unreadSecret;
  let text: Buffer;
  let key: string;
  if (source.file !== null) {
    key = source.fileKey;
    try {
      text = io.readFile(source.file);
    } catch (error) {
      const reason = error instanceof Error && 'code' in error ? String(error.code) : 'unreadable';
      reader.problem(key, `cannot read ${source.file} (${reason}); it must hold ${source.what}`);
      return undefined;
    }
  } else {
    key = source.envKey;
    const name = source.env ?? '';
    const value = io.env[name];
    if (value === undefined || value === '') {
      reader.problem(key, `the environment variable ${name} is not set; it must hold ${source.what}`);
      return undefined;
    }
    text = Buffer.from(value, 'utf8');
  }
  // A file written by `echo` ends with a newline that is not part of the secret.
  let end = text.length;
  while (end > 0 && (text[end - 1] === 0x0a || text[end - 1] === 0x0d)) end--;
  const value = text.subarray(0, end);
  if (value.length < source.minBytes || value.length > source.maxBytes) {
    // The secret is not repeated: only its length.
    reader.problem(
      key,
      `the secret is ${value.length} bytes; use ${source.minBytes} to ${source.maxBytes}${source.hint}`,
    );
    return undefined;
  }
  return new Secret(Buffer.from(value));
}
