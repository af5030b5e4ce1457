/**
 * `[queues.NAME.push]`: a queue whose jobs the server delivers to an HTTP
 * endpoint (src/push/). Targets come only from this file, never from an API
 * call: whoever can name a URL can make the server send requests to it.
 *
 * The signing secret is read here, from `secret_file` or the environment
 * variable `secret_env`, so that a missing or empty secret is a problem of
 * the file (a start or a reload refuses it) rather than a failure later. Its
 * value lives only inside a PushSecret, which every rendering of the config
 * (JSON, `util.inspect`, the admin configuration page) shows as redacted.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { asTable, type ConfigReader, tomlKey } from './reader.ts';
import { redacted } from './redact.ts';
import { type PushEntry, pushSpec } from './schema.ts';
import { complete } from './section-defaults.ts';
import type { PushSecret, PushTarget } from './types.ts';

/** Where secrets come from; absent when the caller cannot read them (`sepp config check` of a lone file). */
export interface SecretIo {
  readonly readFile: (path: string) => Buffer;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Fewest bytes a signing secret may have: as for API keys, long enough not to be guessed. */
export const pushSecretMinBytes = 16;
const pushSecretMaxBytes = 4096;

class Secret implements PushSecret {
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

/** A secret the loader could not read (no file system given): it signs nothing, and the server never runs with it. */
export const unreadSecret: PushSecret = new Secret(Buffer.alloc(0));

/** Reads every `[queues.NAME.push]`; `queues` is the raw `[queues]` table (already checked to be one). */
export function readPushTargets(
  reader: ConfigReader,
  queues: unknown,
  io: SecretIo | undefined,
): Record<string, PushTarget> {
  const targets: Record<string, PushTarget> = Object.create(null);
  const table = asTable(queues);
  if (table === undefined) return targets;
  for (const [name, settings] of Object.entries(table)) {
    const value = asTable(settings)?.push;
    if (value === undefined) continue;
    const path = `queues.${tomlKey(name)}.push`;
    const given = reader.section(path, pushSpec, value, { schemaPath: 'queues.<name>.push' });
    const written = asTable(value);
    if (written === undefined) continue;
    if (written.url === undefined) {
      reader.problem(`${path}.url`, 'is missing; write the http:// or https:// URL the jobs are POSTed to');
    }
    if (given.url === undefined) continue;
    const entry: PushEntry = complete(reader, pushSpec, given);
    const secret = readSecret(reader, path, written, entry, io);
    if (secret === undefined) continue;
    targets[name] = {
      url: entry.url,
      secretFile: entry.secretFile,
      secretEnv: entry.secretEnv,
      secret,
      timeoutMs: entry.timeoutMs,
      maxInFlight: entry.maxInFlight,
      allowPrivateTargets: entry.allowPrivateTargets,
    };
  }
  return targets;
}

function readSecret(
  reader: ConfigReader,
  path: string,
  written: Readonly<Record<string, unknown>>,
  entry: PushEntry,
  io: SecretIo | undefined,
): PushSecret | undefined {
  const hasFile = written.secret_file !== undefined;
  const hasEnv = written.secret_env !== undefined;
  if (hasFile === hasEnv) {
    reader.problem(
      `${path}.secret_file`,
      `${hasFile ? 'both secret_file and secret_env are set' : 'no signing secret'}; set exactly one: ` +
        'secret_file (a file holding the secret) or secret_env (an environment variable holding it); ' +
        'every push is signed with it (HMAC-SHA256)',
    );
    return undefined;
  }
  if (entry.secretFile === null && entry.secretEnv === null) return undefined; // its own problem is reported
  if (io === undefined) return unreadSecret;
  let text: Buffer;
  let key: string;
  if (entry.secretFile !== null) {
    key = `${path}.secret_file`;
    try {
      text = io.readFile(entry.secretFile);
    } catch (error) {
      const reason = error instanceof Error && 'code' in error ? String(error.code) : 'unreadable';
      reader.problem(
        key,
        `cannot read ${entry.secretFile} (${reason}); it must hold the push signing secret`,
      );
      return undefined;
    }
  } else {
    key = `${path}.secret_env`;
    const name = entry.secretEnv ?? '';
    const value = io.env[name];
    if (value === undefined || value === '') {
      reader.problem(
        key,
        `the environment variable ${name} is not set; it must hold the push signing secret`,
      );
      return undefined;
    }
    text = Buffer.from(value, 'utf8');
  }
  // A file written by `echo` ends with a newline that is not part of the secret.
  let end = text.length;
  while (end > 0 && (text[end - 1] === 0x0a || text[end - 1] === 0x0d)) end--;
  const value = text.subarray(0, end);
  if (value.length < pushSecretMinBytes || value.length > pushSecretMaxBytes) {
    // The secret is not repeated: only its length.
    reader.problem(
      key,
      `the secret is ${value.length} bytes; use ${pushSecretMinBytes} to ${pushSecretMaxBytes} ` +
        '(e.g. `openssl rand -hex 32`)',
    );
    return undefined;
  }
  return new Secret(Buffer.from(value));
}
