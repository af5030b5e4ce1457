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
import { asTable, type ConfigReader, tomlKey } from './reader.ts';
import { type PushEntry, pushSpec } from './schema.ts';
import { readSecret, type SecretIo } from './secret-source.ts';
import { complete } from './section-defaults.ts';
import type { PushSecret, PushTarget } from './types.ts';

/** Fewest bytes a signing secret may have: as for API keys, long enough not to be guessed. */
export const pushSecretMinBytes = 16;
const pushSecretMaxBytes = 4096;

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
    const secret = readPushSecret(reader, path, written, entry, io);
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

function readPushSecret(
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
  return readSecret(
    reader,
    {
      file: entry.secretFile,
      env: entry.secretEnv,
      fileKey: `${path}.secret_file`,
      envKey: `${path}.secret_env`,
      what: 'the push signing secret',
      minBytes: pushSecretMinBytes,
      maxBytes: pushSecretMaxBytes,
      hint: ' (e.g. `openssl rand -hex 32`)',
    },
    io,
  );
}
