/**
 * Turns a parsed TOML document (plus overrides) into a SeppConfig: reads each
 * section, fills in defaults, then checks the rules that span settings —
 * lease and backoff ordering, message size against payload size, unique
 * credentials, and the fail-closed rules of SPEC §6.
 */
import { createHash } from 'node:crypto';
import {
  type EngineLimits,
  namePattern,
  type QueueSettingKey,
  type QueueSettings,
} from '../engine/settings.ts';
import { describeRaw } from './fields.ts';
import { parsePasswordHash } from './password-hash.ts';
import { checkQueue } from './queue-checks.ts';
import { asTable, type ConfigReader, type Table, tomlKey } from './reader.ts';
import { readSchedules } from './schedules.ts';
import {
  adminSpec,
  adminUserSpec,
  apiKeySpec,
  engineSpec,
  grpcEnvelopeAllowanceBytes,
  grpcSpec,
  limitsSpec,
  nestQueueSettings,
  type QueueSettingsFlat,
  queueSpec,
  rootKeys,
  type SectionSpec,
  serverSpec,
  telemetrySpec,
  tlsSpec,
} from './schema.ts';
import { tlsFilesProblems } from './tls-files.ts';
import type {
  AdminConfig,
  AdminUser,
  ApiKey,
  EngineConfig,
  GrpcConfig,
  SeppConfig,
  ServerConfig,
  TelemetryConfig,
  TlsFiles,
} from './types.ts';
import { formatSizeBytes } from './units.ts';

export interface BuildIo {
  /** When given, TLS files are checked to exist. */
  readonly fileExists?: ((path: string) => boolean) | undefined;
  /** When given, TLS files are read and checked to hold a usable certificate and key (tls-files.ts). */
  readonly readPem?: ((path: string) => string) | undefined;
}

/** Fills in the defaults of a section whose every setting has one. */
function complete<T>(reader: ConfigReader, spec: SectionSpec<T>, given: Partial<T>): T {
  const merged: Partial<T> = { ...reader.defaults(spec), ...given };
  for (const key of Object.keys(spec)) {
    if (!(key in merged)) throw new Error(`bug: setting ${key} has no default`);
  }
  return merged as T;
}

function withDefaults<T>(
  reader: ConfigReader,
  path: string,
  spec: SectionSpec<T>,
  value: unknown,
  nested?: string[],
): T {
  return complete(reader, spec, reader.section(path, spec, value, { nested: nested ?? [] }));
}

function readTls(reader: ConfigReader, path: string, value: unknown, io: BuildIo): TlsFiles | null {
  if (value === undefined) return null;
  const files = reader.section(path, tlsSpec, value);
  const table = asTable(value);
  if (table === undefined) return null;
  const fix = `[${path}] needs both cert_file and key_file (PEM files); remove [${path}] to serve without TLS`;
  for (const key of ['cert_file', 'key_file'] as const) {
    if (table[key] === undefined) reader.problem(`${path}.${key}`, `is missing: ${fix}`);
  }
  if (files.certFile === undefined || files.keyFile === undefined) return null;
  const tls = { certFile: files.certFile, keyFile: files.keyFile };
  let missing = false;
  for (const [key, file] of [
    ['cert_file', tls.certFile],
    ['key_file', tls.keyFile],
  ] as const) {
    if (io.fileExists !== undefined && !io.fileExists(file)) {
      missing = true;
      reader.problem(
        `${path}.${key}`,
        `${file} does not exist (a relative path is relative to the config file's directory)`,
      );
    }
  }
  if (!missing && io.readPem !== undefined) {
    for (const problem of tlsFilesProblems(tls, io.readPem)) {
      const file = problem.file === 'cert_file' ? tls.certFile : tls.keyFile;
      reader.problem(`${path}.${problem.file}`, `${file} ${problem.message}`);
    }
  }
  return tls;
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
function readApiKeys(reader: ConfigReader, value: unknown, plaintext: string[]): ApiKey[] {
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
    if (read.name === undefined || read.role === undefined) continue;
    let keySha256: string | undefined;
    if (read.keySha256 !== undefined) keySha256 = read.keySha256.toLowerCase();
    else if (read.key !== undefined) keySha256 = createHash('sha256').update(read.key, 'utf8').digest('hex');
    if (keySha256 === undefined || hasKey === hasHash) continue;
    keys.push({ path: entry.path, name: read.name, role: read.role, keySha256 });
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
  return keys.map(({ name, role, keySha256 }) => ({ name, role, keySha256 }));
}

function readAdminUsers(reader: ConfigReader, value: unknown): AdminUser[] {
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
function readTelemetry(reader: ConfigReader, value: unknown, plaintext: string[]): TelemetryConfig {
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
    metricsToken !== null
      ? createHash('sha256').update(metricsToken, 'utf8').digest('hex')
      : (metricsTokenSha256?.toLowerCase() ?? null);
  return { ...rest, metricsTokenSha256: sha256 };
}

interface DeclaredQueues {
  readonly queues: Record<string, QueueSettings>;
  /** The keys each [queues.NAME] wrote. */
  readonly given: Record<string, QueueSettingKey[]>;
}

function readQueues(
  reader: ConfigReader,
  value: unknown,
  defaults: QueueSettingsFlat,
  limits: EngineLimits,
): DeclaredQueues {
  // No prototype: a queue named "constructor" must not find Object's.
  const queues: Record<string, QueueSettings> = Object.create(null);
  const givenKeys: Record<string, QueueSettingKey[]> = Object.create(null);
  const declared = { queues, given: givenKeys };
  if (value === undefined) return declared;
  const table = asTable(value);
  if (table === undefined) {
    reader.problem('queues', 'must be a table of queues: write each as [queues.NAME]');
    return declared;
  }
  for (const [name, settings] of Object.entries(table)) {
    const path = `queues.${tomlKey(name)}`;
    if (!namePattern.test(name)) {
      reader.problem(path, `"${name}" is not a valid queue name; use letters, digits and . _ : - only`);
      continue;
    }
    if (name.length > limits.maxNameLength) {
      reader.problem(
        path,
        `the name is longer than limits.max_name_length (${limits.maxNameLength} characters)`,
      );
      continue;
    }
    if (asTable(settings) === undefined) {
      reader.problem(
        path,
        `is ${describeRaw(settings)}, but must be a table: write its settings under [${path}]`,
      );
      continue;
    }
    const given = reader.section(path, queueSpec, settings, { schemaPath: 'queues.<name>' });
    const flat = { ...defaults, ...given };
    checkQueue(reader, path, flat, given, limits);
    queues[name] = nestQueueSettings(flat);
    givenKeys[name] = Object.keys(given) as QueueSettingKey[];
  }
  return declared;
}

/**
 * The message size must fit one job with the largest payload any queue
 * accepts, its metadata and the envelope; when not set, it grows to fit.
 */
function resolveMaxMessageBytes(
  reader: ConfigReader,
  configured: number | undefined,
  fallback: number,
  payloads: { key: string; bytes: number }[],
  limits: EngineLimits,
): number {
  const largest = payloads.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const neededBytes = largest.bytes + limits.maxMetadataBytes + grpcEnvelopeAllowanceBytes;
  if (configured === undefined) return Math.max(fallback, neededBytes);
  if (configured < neededBytes && !reader.failed.has('grpc.max_message_bytes')) {
    reader.problem(
      'grpc.max_message_bytes',
      `${configured} is too small for the largest payload (${largest.key} = ${largest.bytes}) plus ` +
        `limits.max_metadata_bytes (${limits.maxMetadataBytes}) and ${formatSizeBytes(grpcEnvelopeAllowanceBytes)} ` +
        `of framing; set it to at least ${neededBytes} or lower that payload limit`,
    );
  }
  return configured;
}

/** SPEC §6: a non-loopback address with no credentials refuses to start unless explicitly insecure. */
function checkFailClosed(
  reader: ConfigReader,
  server: ServerConfig,
  grpc: GrpcConfig,
  admin: AdminConfig,
  written: { grpcTable: Table | undefined; adminTable: Table | undefined },
): void {
  const { grpcTable, adminTable } = written;
  const rules = [
    {
      section: 'grpc',
      listen: server.grpcListen,
      listenKey: 'server.grpc_listen',
      // Entries written but invalid count too: their own problems say what to fix.
      credentials: Array.isArray(grpcTable?.api_keys) ? grpcTable.api_keys.length : grpc.apiKeys.length,
      credentialsKey: 'grpc.api_keys',
      what: 'API keys',
      add: 'add a key as a [[grpc.api_keys]] table',
      insecure: grpc.insecureAllowUnauthenticated,
    },
    {
      section: 'admin',
      listen: server.adminListen,
      listenKey: 'server.admin_listen',
      credentials: Array.isArray(adminTable?.users) ? adminTable.users.length : admin.users.length,
      credentialsKey: 'admin.users',
      what: 'admin users',
      add: 'add a user as an [[admin.users]] table (hash from `sepp admin hash-password`)',
      insecure: admin.insecureAllowUnauthenticated,
    },
  ];
  for (const rule of rules) {
    const insecureKey = `${rule.section}.insecure_allow_unauthenticated`;
    if (rule.credentials > 0 && rule.insecure) {
      reader.problem(
        insecureKey,
        `is true but ${rule.credentialsKey} is set, and with ${rule.what} every request must authenticate; ` +
          `remove ${rule.section}.insecure_allow_unauthenticated or the ${rule.what}`,
      );
    }
    if (!rule.listen.loopback && rule.credentials === 0 && !rule.insecure) {
      reader.problem(
        rule.credentialsKey,
        `none configured, and ${rule.listenKey} (${rule.listen.address}) is reachable from other machines, ` +
          `so anyone could connect without authentication; ${rule.add}, listen on a loopback address ` +
          `such as 127.0.0.1, or set ${insecureKey} = true to serve without authentication`,
      );
    }
  }
}

/** Builds the configuration; problems go to the reader, and the result is only meaningful when there are none. */
export function buildConfig(
  reader: ConfigReader,
  document: unknown,
  configFile: string | null,
  io: BuildIo,
): SeppConfig {
  const root = asTable(document) ?? {};
  for (const key of Object.keys(root)) {
    if (!rootKeys.includes(key)) reader.unknownKey('', '', key, rootKeys);
  }
  // Sections are read in the order the example file has them, so problems
  // are listed roughly in file order; checks across sections come last.
  const server = withDefaults(reader, 'server', serverSpec, root.server);

  const grpcTable = asTable(root.grpc);
  const grpcGiven = reader.section('grpc', grpcSpec, root.grpc, { nested: ['tls', 'api_keys'] });
  const grpcScalars = complete(reader, grpcSpec, grpcGiven);
  const grpcTls = readTls(reader, 'grpc.tls', grpcTable?.tls, io);
  const plaintextSecrets: string[] = [];
  const apiKeys = readApiKeys(reader, grpcTable?.api_keys, plaintextSecrets);

  const adminTable = asTable(root.admin);
  const adminScalars = withDefaults(reader, 'admin', adminSpec, root.admin, ['tls', 'users']);
  const admin: AdminConfig = {
    tls: readTls(reader, 'admin.tls', adminTable?.tls, io),
    users: readAdminUsers(reader, adminTable?.users),
    ...adminScalars,
  };

  const telemetry = readTelemetry(reader, root.telemetry, plaintextSecrets);
  const engineScalars = withDefaults(reader, 'engine', engineSpec, root.engine);
  const limits = withDefaults(reader, 'limits', limitsSpec, root.limits);
  const queueDefaultsGiven = reader.section('queue_defaults', queueSpec, root.queue_defaults);
  const queueDefaultsFlat = complete(reader, queueSpec, queueDefaultsGiven);
  checkQueue(reader, 'queue_defaults', queueDefaultsFlat, queueDefaultsGiven, limits);
  const declared = readQueues(reader, root.queues, queueDefaultsFlat, limits);
  const { queues } = declared;

  if (
    engineScalars.strictQueues &&
    Object.keys(queues).length === 0 &&
    !reader.failed.has('engine.strict_queues')
  ) {
    reader.problem(
      'engine.strict_queues',
      'is true but no queue is declared, so every enqueue would be refused; declare queues as [queues.NAME] tables or set strict_queues = false',
    );
  }

  const payloads = [
    { key: 'queue_defaults.max_payload_bytes', bytes: queueDefaultsFlat.maxPayloadBytes },
    ...Object.entries(queues).map(([name, q]) => ({
      key: `queues.${tomlKey(name)}.max_payload_bytes`,
      bytes: q.maxPayloadBytes,
    })),
    // An ack's result travels in one message too (and in the Events stream's).
    { key: 'limits.max_result_bytes', bytes: limits.maxResultBytes },
  ];
  const grpc: GrpcConfig = {
    tls: grpcTls,
    apiKeys,
    insecureAllowUnauthenticated: grpcScalars.insecureAllowUnauthenticated,
    maxMessageBytes: resolveMaxMessageBytes(
      reader,
      grpcGiven.maxMessageBytes,
      grpcScalars.maxMessageBytes,
      payloads,
      limits,
    ),
    maxConnections: grpcScalars.maxConnections,
    maxStreamsPerConnection: grpcScalars.maxStreamsPerConnection,
    handshakeTimeoutMs: grpcScalars.handshakeTimeoutMs,
    idleTimeoutMs: grpcScalars.idleTimeoutMs,
  };

  checkFailClosed(reader, server, grpc, admin, { grpcTable, adminTable });

  const engineOptions = {
    strictQueues: engineScalars.strictQueues,
    limits,
    queueDefaults: nestQueueSettings(queueDefaultsFlat),
    queues,
    fileKeys: {
      queueDefaults: Object.keys(queueDefaultsGiven) as QueueSettingKey[],
      queues: declared.given,
    },
  };
  const engine: EngineConfig = {
    ...engineOptions,
    schedules: readSchedules(reader, root.schedules, engineOptions, Date.now()),
  };
  return {
    configFile,
    plaintextSecrets,
    sources: Object.fromEntries(reader.sources),
    server,
    grpc,
    admin,
    telemetry,
    engine,
  };
}
