/**
 * The credentials in the file: [[grpc.api_keys]], [[admin.users]] and the
 * /metrics token of [telemetry]. Keys and the token are kept only as their
 * SHA-256; a setting that holds one in plain text is noted, so `sepp config
 * check` can warn about it. Names and keys must be unique.
 */
import { createHash } from 'node:crypto';
import { parsePasswordHash } from './password-hash.ts';
import { maxQueuePatterns } from './queue-scope.ts';
import { asTable, type ConfigReader, type Table } from './reader.ts';
import { adminUserSpec, apiKeySpec, telemetrySpec } from './schema.ts';
import { withDefaults } from './section-defaults.ts';
import type { AdminUser, ApiKey, TelemetryConfig } from './types.ts';

/** The SHA-256 of a secret in hex, the form the file's *_sha256 settings take. */
function sha256Hex(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** The entries of an array of tables such as [[grpc.api_keys]], or [] after reporting a problem. */
function entries(reader: ConfigReader, path: string, value: unknown): { path: string; value: Table }[] {
  if (value === undefined) return [];
  const fix = `write each entry as its own [[${path}]] table`;
  if (!Array.isArray(value)) {
    reader.problem(path, `must be a list of tables: ${fix}`);
    return [];
  }
  const found: { path: string; value: Table }[] = [];
  for (const [index, item] of value.entries()) {
    const table = asTable(item);
    if (table === undefined) reader.problem(`${path}[${index}]`, `must be a table: ${fix}`);
    else found.push({ path: `${path}[${index}]`, value: table });
  }
  return found;
}

/** Reports a second use of a name within a list of credentials. */
function checkUnique(reader: ConfigReader, list: { path: string; name: string }[]): void {
  const firstByName = new Map<string, string>();
  for (const { path, name } of list) {
    const first = firstByName.get(name);
    if (first === undefined) firstByName.set(name, path);
    else reader.problem(`${path}.name`, `"${name}" is already used by ${first}; names must be unique`);
  }
}

function requireKeys(
  reader: ConfigReader,
  path: string,
  table: Table,
  keys: readonly string[],
  fix: string,
): void {
  for (const key of keys) {
    if (table[key] === undefined) reader.problem(`${path}.${key}`, `is missing; ${fix}`);
  }
}

/** Reads the API keys; the settings that hold a key in plain text are added to `plaintext`. */
export function readApiKeys(reader: ConfigReader, value: unknown, plaintext: string[]): ApiKey[] {
  const keys: (ApiKey & { path: string })[] = [];
  const fix = 'each [[grpc.api_keys]] needs name, role and one of key or key_sha256';
  for (const entry of entries(reader, 'grpc.api_keys', value)) {
    const read = reader.section(entry.path, apiKeySpec, entry.value, { schemaPath: 'grpc.api_keys[]' });
    requireKeys(reader, entry.path, entry.value, ['name', 'role'], fix);
    const hasKey = entry.value.key !== undefined;
    const hasHash = entry.value.key_sha256 !== undefined;
    if (hasKey) plaintext.push(`${entry.path}.key`);
    if (hasKey === hasHash) {
      const what = hasKey ? 'both key and key_sha256 are set' : 'neither key nor key_sha256 is set';
      reader.problem(
        `${entry.path}.key`,
        `${what}; set exactly one: key_sha256 (the SHA-256 of the key, so the file holds no secret) or key (the key itself)`,
      );
    }
    const queues = readScope(reader, entry.path, read.queues);
    if (read.name === undefined || read.role === undefined) continue;
    let keySha256: string | undefined;
    if (read.keySha256 !== undefined) keySha256 = read.keySha256.toLowerCase();
    else if (read.key !== undefined) keySha256 = sha256Hex(read.key);
    if (keySha256 === undefined || hasKey === hasHash) continue;
    keys.push({ path: entry.path, name: read.name, role: read.role, queues, keySha256 });
  }
  checkUnique(reader, keys);
  const firstByHash = new Map<string, string>();
  for (const key of keys) {
    const first = firstByHash.get(key.keySha256);
    if (first === undefined) firstByHash.set(key.keySha256, key.path);
    else {
      reader.problem(`${key.path}.key`, `is the same key as ${first}; every API key must be different`);
    }
  }
  return keys.map(({ name, role, queues, keySha256 }) => ({ name, role, queues, keySha256 }));
}

/** A key's `queues`: null when absent (every queue); an empty or too long list is a problem. */
function readScope(reader: ConfigReader, path: string, queues: readonly string[] | undefined) {
  if (queues === undefined) return null;
  if (queues.length === 0) {
    reader.problem(
      `${path}.queues`,
      'is empty, which would allow no queue at all; list the queues (e.g. ["billing-*"]), or leave queues out to allow every queue',
    );
  } else if (queues.length > maxQueuePatterns) {
    reader.problem(`${path}.queues`, `lists ${queues.length} patterns; at most ${maxQueuePatterns}`);
  }
  return queues;
}

/** Reads the admin UI's users; each password hash is checked to be one `sepp admin hash-password` makes. */
export function readAdminUsers(reader: ConfigReader, value: unknown): AdminUser[] {
  const users: (AdminUser & { path: string })[] = [];
  const fix = 'each [[admin.users]] needs name, role and password_hash (from `sepp admin hash-password`)';
  for (const entry of entries(reader, 'admin.users', value)) {
    const read = reader.section(entry.path, adminUserSpec, entry.value, { schemaPath: 'admin.users[]' });
    requireKeys(reader, entry.path, entry.value, ['name', 'role', 'password_hash'], fix);
    if (read.passwordHash !== undefined) {
      const parsed = parsePasswordHash(read.passwordHash);
      if (!parsed.ok) reader.problem(`${entry.path}.password_hash`, parsed.message);
      else if (read.name !== undefined && read.role !== undefined) {
        users.push({ path: entry.path, name: read.name, role: read.role, passwordHash: read.passwordHash });
      }
    }
  }
  checkUnique(reader, users);
  return users.map(({ name, role, passwordHash }) => ({ name, role, passwordHash }));
}

/** [telemetry], with the /metrics token reduced to its SHA-256 like an API key. */
export function readTelemetry(reader: ConfigReader, value: unknown, plaintext: string[]): TelemetryConfig {
  const { metricsToken, metricsTokenSha256, ...rest } = withDefaults(
    reader,
    'telemetry',
    telemetrySpec,
    value,
  );
  if (metricsToken !== null && metricsTokenSha256 !== null) {
    reader.problem(
      'telemetry.metrics_token',
      'both metrics_token and metrics_token_sha256 are set; set one: metrics_token_sha256 (the SHA-256 of the token, so the file holds no secret) or metrics_token',
    );
  }
  if (metricsToken !== null) plaintext.push('telemetry.metrics_token');
  const endpoint = rest.otlpEndpoint;
  if (endpoint !== null && !reader.overridden('telemetry.otlp_endpoint') && /^[^?]*@|\?/.test(endpoint)) {
    plaintext.push('telemetry.otlp_endpoint');
  }
  const sha256 =
    metricsToken !== null ? sha256Hex(metricsToken) : (metricsTokenSha256?.toLowerCase() ?? null);
  return { ...rest, metricsTokenSha256: sha256 };
}
