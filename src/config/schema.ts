/**
 * Every setting sepp knows: its TOML section and key, its kind and range, its
 * default, and the environment variable or flag that may override it. The
 * loader, the unknown-key check, the docs test and the example test all read
 * this one table, so a setting cannot exist in one and be missing in another.
 *
 * Keys are written here in camelCase, as in SeppConfig; in TOML each is the
 * snake_case form (`shutdownTimeoutMs` ⇄ `shutdown_timeout_ms`).
 */
import {
  defaultEngineLimits,
  defaultQueueSettings,
  type EngineLimits,
  expiredActions,
  flattenQueueSettings,
  namePattern,
  nestQueueSettings,
  type QueueSettingsFlat,
  queueDurabilities,
  queueSettingRanges,
} from '../engine/settings.ts';
import {
  addressesField,
  booleanField,
  choiceField,
  durationField,
  type Field,
  integerField,
  listenField,
  namesField,
  pathField,
  postgresUrlField,
  ratioField,
  sizeField,
  stringField,
  urlField,
} from './fields.ts';
import { queuePatternHelp, queuePatternRe } from './queue-scope.ts';
import { scheduleSpec } from './schedule-spec.ts';
import {
  type AdminConfig,
  type AdminUser,
  type ApiKeyRole,
  adminRoles,
  apiKeyRoles,
  type ConfigFlags,
  durabilities,
  type GrpcConfig,
  type HttpConfig,
  logFormats,
  logLevels,
  type ServerConfig,
  type StoreConfig,
  storeKinds,
  type TelemetryConfig,
  type TlsFiles,
  walCheckpointModes,
} from './types.ts';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const KiB = 1024;
const MiB = 1024 * KiB;

/** A raw default, written as it would be in TOML; null means "not set". */
export type RawDefault = string | number | boolean | readonly string[] | null;

export interface FieldSpec<T> {
  readonly field: Field<Exclude<T, null>>;
  /** Parsed like any other value, so a default can never be invalid. Absent: required. */
  readonly default?: RawDefault;
  /** Environment variable that overrides the file. */
  readonly env?: string;
  /** CLI flag (a ConfigFlags key) that overrides the environment and the file. */
  readonly flag?: Exclude<keyof ConfigFlags, 'config'>;
  /**
   * The value is a secret or its digest, or names the file or variable one is read from: the
   * Configuration page, the log and a reload's answer name the setting, never the secret
   * (tests/config/reload-secrets.test.ts changes each one and looks for it in a reload's answer).
   */
  readonly secret?: true;
}

export type SectionSpec<T> = { readonly [K in keyof T]-?: FieldSpec<T[K]> };
/** Any section's spec, for code that walks all of them. */
export type AnySectionSpec = Readonly<Record<string, FieldSpec<unknown>>>;

/** `shutdownTimeoutMs` → `shutdown_timeout_ms`, `keySha256` → `key_sha256`. */
export function snakeCase(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** `dataDir` → `--data-dir`. */
export function flagName(camel: string): string {
  return `--${camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Room a single-job gRPC message needs beyond the payload and the metadata:
 * names, idempotency key, trace context and protobuf framing.
 */
export const grpcEnvelopeAllowanceBytes = 64 * KiB;
/** gRPC's customary 4 MiB, plus the envelope allowance. */
export const defaultMaxMessageBytes = 4 * MiB + grpcEnvelopeAllowanceBytes;

export const serverSpec: SectionSpec<ServerConfig> = {
  dataDir: { field: pathField(), default: './sepp-data', env: 'SEPP_DATA_DIR', flag: 'dataDir' },
  grpcListen: {
    field: listenField(),
    default: '127.0.0.1:50051',
    env: 'SEPP_GRPC_LISTEN',
    flag: 'grpcListen',
  },
  adminListen: {
    field: listenField(),
    default: '127.0.0.1:9465',
    env: 'SEPP_ADMIN_LISTEN',
    flag: 'adminListen',
  },
  httpListen: { field: listenField(), default: null, env: 'SEPP_HTTP_LISTEN', flag: 'httpListen' },
  durability: {
    field: choiceField(durabilities),
    default: 'full',
    env: 'SEPP_DURABILITY',
    flag: 'durability',
  },
  walCheckpoints: { field: choiceField(walCheckpointModes), default: 'auto', env: 'SEPP_WAL_CHECKPOINTS' },
  logLevel: { field: choiceField(logLevels), default: 'info', env: 'SEPP_LOG_LEVEL', flag: 'logLevel' },
  logFormat: { field: choiceField(logFormats), default: 'text', env: 'SEPP_LOG_FORMAT', flag: 'logFormat' },
  shutdownTimeoutMs: {
    field: durationField({ min: 1 * SECOND_MS, max: 10 * MINUTE_MS }),
    default: 10 * SECOND_MS,
    env: 'SEPP_SHUTDOWN_TIMEOUT_MS',
  },
  diskReserveBytes: {
    field: sizeField({ min: 0, max: 4096 * MiB }),
    default: 32 * MiB,
    env: 'SEPP_DISK_RESERVE_BYTES',
  },
};

/**
 * An environment variable's name, for settings that name one holding a secret: a value that is
 * not a name is not repeated in the problem (it may be the secret itself, written here by mistake).
 */
const envVarName = stringField({
  maxLength: 128,
  secret: true,
  pattern: {
    re: /^[A-Za-z_][A-Za-z0-9_]*$/,
    help: 'the name of an environment variable, e.g. "SEPP_PUSH_SECRET"',
  },
});

/** `[store]` as written: the password as at most one of `password_file` and `password_env`. */
export type StoreEntry = Omit<StoreConfig, 'password'>;
export const storeSpec: SectionSpec<StoreEntry> = {
  kind: { field: choiceField(storeKinds), default: 'sqlite', env: 'SEPP_STORE_KIND' },
  url: { field: postgresUrlField(), default: null, env: 'SEPP_STORE_URL' },
  passwordFile: { field: pathField(), default: null, secret: true },
  passwordEnv: { field: envVarName, default: null, secret: true },
  poolSize: { field: integerField({ min: 2, max: 100 }), default: 10 },
  maxWaitingReads: { field: integerField({ min: 1, max: 100_000 }), default: 1000 },
  maxWaitingReadsPerKey: { field: integerField({ min: 1, max: 100_000 }), default: 100 },
  statementTimeoutMs: { field: durationField({ min: 100, max: 1 * HOUR_MS }), default: 30 * SECOND_MS },
  schema: {
    field: stringField({
      maxLength: 63,
      pattern: {
        re: /^[a-z_][a-z0-9_]*$/,
        help: 'a PostgreSQL identifier: lower-case letters, digits and _, not starting with a digit',
      },
    }),
    default: 'sepp',
  },
};

export type GrpcScalars = Omit<GrpcConfig, 'tls' | 'apiKeys'>;
export const grpcSpec: SectionSpec<GrpcScalars> = {
  insecureAllowUnauthenticated: { field: booleanField(), default: false },
  maxMessageBytes: { field: sizeField({ min: 64 * KiB, max: 256 * MiB }), default: defaultMaxMessageBytes },
  maxConnections: { field: integerField({ min: 1, max: 1_000_000 }), default: 4096 },
  maxStreamsPerConnection: { field: integerField({ min: 1, max: 100_000 }), default: 1000 },
  handshakeTimeoutMs: {
    field: durationField({ min: 100, max: 10 * MINUTE_MS }),
    default: 10 * SECOND_MS,
  },
  idleTimeoutMs: { field: durationField({ min: 1 * SECOND_MS, max: 1 * DAY_MS }), default: 5 * MINUTE_MS },
  // The SDKs' own default interval; with the timeout, a vanished client is dropped within ~50 s.
  keepaliveMs: { field: durationField({ min: 1 * SECOND_MS, max: 1 * HOUR_MS }), default: 30 * SECOND_MS },
  keepaliveTimeoutMs: {
    field: durationField({ min: 1 * SECOND_MS, max: 10 * MINUTE_MS }),
    default: 20 * SECOND_MS,
  },
  firstMessageTimeoutMs: {
    field: durationField({ min: 100, max: 10 * MINUTE_MS }),
    default: 10 * SECOND_MS,
  },
  maxEventSubscribersPerKey: { field: integerField({ min: 1, max: 100_000 }), default: 250 },
  // At least grpc.max_message_bytes (build.ts): a default below it grows to it.
  maxBytesInFlightPerConnection: {
    field: sizeField({ min: 64 * KiB, max: 64 * 1024 * MiB }),
    default: 16 * MiB,
  },
  maxBytesInFlightPerKey: { field: sizeField({ min: 64 * KiB, max: 64 * 1024 * MiB }), default: 64 * MiB },
};

export const tlsSpec: SectionSpec<TlsFiles> = {
  certFile: { field: pathField() },
  keyFile: { field: pathField() },
};

/** An API key as written: exactly one of `key` and `keySha256`. */
export interface ApiKeyEntry {
  readonly name: string;
  readonly role: ApiKeyRole;
  readonly key: string;
  readonly keySha256: string;
  /** Queue name patterns the key is limited to (queue-scope.ts); absent: every queue. */
  readonly queues: readonly string[];
}

export const credentialName = {
  re: /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/,
  help: 'use 1 to 64 letters, digits and . _ @ -, starting with a letter or digit',
};

/** Bearer tokens travel in a header: visible ASCII only, and long enough not to be guessed. */
export const apiKeyMinLength = 16;
const apiKeyField: Field<string> = {
  kind: 'string',
  parse(raw) {
    // The key is a secret: messages describe it but never repeat it.
    const fix = 'make one with `sepp admin new-api-key`, which gives you key_sha256 for the config';
    if (typeof raw !== 'string') return { ok: false, message: `must be a string in double quotes; ${fix}` };
    if (!/^[\x21-\x7e]*$/.test(raw)) {
      return { ok: false, message: `may contain only visible ASCII characters (no spaces); ${fix}` };
    }
    if (raw.length < apiKeyMinLength) {
      return { ok: false, message: `is ${raw.length} characters; use at least ${apiKeyMinLength}; ${fix}` };
    }
    if (raw.length > 1024) return { ok: false, message: 'is longer than 1024 characters' };
    return { ok: true, value: raw };
  },
};

/** The SHA-256 of a bearer token, so that the file holds no secret. */
const tokenSha256Field = stringField({
  // A key pasted here by mistake must not be printed in the error.
  secret: true,
  pattern: {
    re: /^[0-9a-fA-F]{64}$/,
    help: 'write the 64 hex digits of SHA-256(key), e.g. from `printf %s "$KEY" | sha256sum`',
  },
});

export const apiKeySpec: SectionSpec<ApiKeyEntry> = {
  name: { field: stringField({ pattern: credentialName }) },
  role: { field: choiceField(apiKeyRoles) },
  key: { field: apiKeyField, secret: true },
  keySha256: { field: tokenSha256Field, secret: true },
  queues: { field: namesField(queuePatternRe, queuePatternHelp) },
};

/** [http] as written: the request size is derived from the largest payload when not set. */
export type HttpEntry = Omit<HttpConfig, 'tls' | 'maxRequestBytes'> & {
  readonly maxRequestBytes: number | null;
};
export const httpSpec: SectionSpec<HttpEntry> = {
  insecureAllowUnauthenticated: { field: booleanField(), default: false },
  maxRequestBytes: { field: sizeField({ min: 64 * KiB, max: 256 * MiB }), default: null },
  maxInFlightBytes: { field: sizeField({ min: 64 * KiB, max: 16 * 1024 * MiB }), default: 256 * MiB },
  maxInFlightBytesPerKey: { field: sizeField({ min: 64 * KiB, max: 16 * 1024 * MiB }), default: 64 * MiB },
  maxConnections: { field: integerField({ min: 1, max: 1_000_000 }), default: 4096 },
  headersTimeoutMs: { field: durationField({ min: 100, max: 10 * MINUTE_MS }), default: 10 * SECOND_MS },
  requestTimeoutMs: {
    field: durationField({ min: 1 * SECOND_MS, max: 1 * HOUR_MS }),
    default: 30 * SECOND_MS,
  },
  idleTimeoutMs: { field: durationField({ min: 1 * SECOND_MS, max: 1 * DAY_MS }), default: 1 * MINUTE_MS },
  writeTimeoutMs: { field: durationField({ min: 100, max: 1 * HOUR_MS }), default: 30 * SECOND_MS },
};

/** `[queues.NAME.push]` as written: the secret as exactly one of `secret_file` and `secret_env`. */
export interface PushEntry {
  readonly url: string;
  readonly secretFile: string | null;
  readonly secretEnv: string | null;
  readonly timeoutMs: number;
  readonly maxInFlight: number;
  readonly allowPrivateTargets: boolean;
}
export const pushSpec: SectionSpec<PushEntry> = {
  url: { field: urlField(['http:', 'https:']) },
  secretFile: { field: pathField(), default: null, secret: true },
  secretEnv: { field: envVarName, default: null, secret: true },
  timeoutMs: { field: durationField({ min: 100, max: 1 * HOUR_MS }), default: 30 * SECOND_MS },
  maxInFlight: { field: integerField({ min: 1, max: 10_000 }), default: 64 },
  allowPrivateTargets: { field: booleanField(), default: false },
};

export type AdminScalars = Omit<AdminConfig, 'tls' | 'users'>;
export const adminSpec: SectionSpec<AdminScalars> = {
  sessionTtlMs: { field: durationField({ min: 1 * MINUTE_MS, max: 30 * DAY_MS }), default: 12 * HOUR_MS },
  insecureAllowUnauthenticated: { field: booleanField(), default: false },
  trustedProxies: { field: addressesField(), default: [] },
  maxSessionsPerUser: { field: integerField({ min: 1, max: 1000 }), default: 10 },
};

export const adminUserSpec: SectionSpec<AdminUser> = {
  name: { field: stringField({ pattern: credentialName }) },
  role: { field: choiceField(adminRoles) },
  // The hash format is checked by the loader with parsePasswordHash.
  passwordHash: { field: stringField({ maxLength: 1024 }), secret: true },
};

/** [telemetry] as written: the /metrics token as exactly one of `metrics_token` and `metrics_token_sha256`. */
export type TelemetryEntry = Omit<TelemetryConfig, 'metricsTokenSha256'> & {
  readonly metricsToken: string | null;
  readonly metricsTokenSha256: string | null;
};

export const telemetrySpec: SectionSpec<TelemetryEntry> = {
  otlpEndpoint: { field: urlField(['http:', 'https:']), default: null, env: 'SEPP_OTLP_ENDPOINT' },
  serviceName: {
    field: stringField({ maxLength: 256, pattern: { re: /^\S+$/, help: 'no spaces' } }),
    default: 'sepp',
  },
  tracesSampleRatio: { field: ratioField({ min: 0, max: 1 }), default: 1, env: 'SEPP_TRACES_SAMPLE_RATIO' },
  metricsExportIntervalMs: {
    field: durationField({ min: 1 * SECOND_MS, max: 1 * HOUR_MS }),
    default: MINUTE_MS,
  },
  metricsToken: { field: apiKeyField, default: null, secret: true },
  metricsTokenSha256: { field: tokenSha256Field, default: null, secret: true },
};

export interface EngineScalars {
  readonly strictQueues: boolean;
}
export const engineSpec: SectionSpec<EngineScalars> = {
  strictQueues: { field: booleanField(), default: false },
};

/** Ranges for the server-wide limits (the engine states their defaults). */
export const engineLimitRanges: { readonly [K in keyof EngineLimits]: { min: number; max: number } } = {
  maxNameLength: { min: 1, max: 1024 },
  maxMetadataBytes: { min: 0, max: 1 * MiB },
  maxMetadataEntries: { min: 0, max: 1024 },
  maxIdempotencyKeyBytes: { min: 1, max: 4 * KiB },
  maxWorkerIdBytes: { min: 1, max: 4 * KiB },
  maxErrorBytes: { min: 64, max: 1 * MiB },
  maxErrorHistory: { min: 1, max: 1000 },
  maxBatchJobs: { min: 1, max: 100_000 },
  maxReserveJobs: { min: 1, max: 100_000 },
  maxReserveQueues: { min: 1, max: 1024 },
  maxScheduleAheadMs: { min: 1 * SECOND_MS, max: 3650 * DAY_MS },
  maxWaitMs: { min: 0, max: 1 * HOUR_MS },
  maxWaiters: { min: 1, max: 1_000_000 },
  maxPageSize: { min: 1, max: 100_000 },
  maxSchedules: { min: 0, max: 100_000 },
  maxQueues: { min: 1, max: 100_000 },
  maxResultBytes: { min: 0, max: 64 * MiB },
  maxProgressBytes: { min: 0, max: 1 * MiB },
  maxEventSubscribers: { min: 0, max: 100_000 },
  eventBacklogEvents: { min: 100, max: 10_000_000 },
  eventBacklogBytes: { min: 1 * MiB, max: 16 * 1024 * MiB },
  eventResumeWindowMs: { min: 0, max: 1 * DAY_MS },
  finishedOutcomeMs: { min: 0, max: 1 * DAY_MS },
  maxDependenciesPerJob: { min: 1, max: 10_000 },
  maxDependentsPerJob: { min: 1, max: 1_000_000 },
  maxFlowJobs: { min: 1, max: 100_000 },
  maxFlowDepth: { min: 1, max: 10_000 },
  maxDependencyResultsBytes: { min: 0, max: 16 * MiB },
  maxOpenBatchesPerKey: { min: 1, max: 1_000_000 },
  batchRetentionMs: { min: 0, max: 3650 * DAY_MS },
};

function limitField(name: keyof EngineLimits): FieldSpec<number> {
  const range = engineLimitRanges[name];
  const field = name.endsWith('Ms')
    ? durationField(range)
    : name.endsWith('Bytes')
      ? sizeField(range)
      : integerField(range);
  return { field, default: defaultEngineLimits[name] };
}

export const limitsSpec: SectionSpec<EngineLimits> = {
  maxNameLength: limitField('maxNameLength'),
  maxMetadataBytes: limitField('maxMetadataBytes'),
  maxMetadataEntries: limitField('maxMetadataEntries'),
  maxIdempotencyKeyBytes: limitField('maxIdempotencyKeyBytes'),
  maxWorkerIdBytes: limitField('maxWorkerIdBytes'),
  maxErrorBytes: limitField('maxErrorBytes'),
  maxErrorHistory: limitField('maxErrorHistory'),
  maxBatchJobs: limitField('maxBatchJobs'),
  maxDependenciesPerJob: limitField('maxDependenciesPerJob'),
  maxDependentsPerJob: limitField('maxDependentsPerJob'),
  maxFlowJobs: limitField('maxFlowJobs'),
  maxFlowDepth: limitField('maxFlowDepth'),
  maxDependencyResultsBytes: limitField('maxDependencyResultsBytes'),
  maxOpenBatchesPerKey: limitField('maxOpenBatchesPerKey'),
  batchRetentionMs: limitField('batchRetentionMs'),
  maxReserveJobs: limitField('maxReserveJobs'),
  maxReserveQueues: limitField('maxReserveQueues'),
  maxScheduleAheadMs: limitField('maxScheduleAheadMs'),
  maxWaitMs: limitField('maxWaitMs'),
  maxWaiters: limitField('maxWaiters'),
  maxPageSize: limitField('maxPageSize'),
  maxSchedules: limitField('maxSchedules'),
  maxQueues: limitField('maxQueues'),
  maxResultBytes: limitField('maxResultBytes'),
  maxProgressBytes: limitField('maxProgressBytes'),
  maxEventSubscribers: limitField('maxEventSubscribers'),
  eventBacklogEvents: limitField('eventBacklogEvents'),
  eventBacklogBytes: limitField('eventBacklogBytes'),
  eventResumeWindowMs: limitField('eventResumeWindowMs'),
  finishedOutcomeMs: limitField('finishedOutcomeMs'),
};

/** Queue settings as written in TOML: flat, so `[queues.NAME]` needs no sub-tables (engine/settings.ts). */
export { flattenQueueSettings, nestQueueSettings, type QueueSettingsFlat };

const r = queueSettingRanges;
const engineQueueDefaults = flattenQueueSettings(defaultQueueSettings);
const nameHelp = 'use letters, digits and . _ : - only';

/** `[queue_defaults]`; `[queues.NAME]` takes the same keys, defaulting to the effective queue_defaults. */
export const queueSpec: SectionSpec<QueueSettingsFlat> = {
  maxAttempts: { field: integerField(r.maxAttempts), default: engineQueueDefaults.maxAttempts },
  backoffBaseMs: { field: durationField(r.backoffBaseMs), default: engineQueueDefaults.backoffBaseMs },
  backoffFactor: { field: ratioField(r.backoffFactor), default: engineQueueDefaults.backoffFactor },
  backoffCapMs: { field: durationField(r.backoffCapMs), default: engineQueueDefaults.backoffCapMs },
  backoffJitter: { field: ratioField(r.backoffJitter), default: engineQueueDefaults.backoffJitter },
  defaultLeaseMs: { field: durationField(r.defaultLeaseMs), default: engineQueueDefaults.defaultLeaseMs },
  maxLeaseMs: { field: durationField(r.maxLeaseMs), default: engineQueueDefaults.maxLeaseMs },
  defaultTimeoutMs: {
    field: durationField(r.defaultTimeoutMs),
    default: engineQueueDefaults.defaultTimeoutMs,
  },
  priorityAgingMs: {
    field: durationField(r.priorityAgingMs),
    default: engineQueueDefaults.priorityAgingMs,
  },
  maxPayloadBytes: { field: sizeField(r.maxPayloadBytes), default: engineQueueDefaults.maxPayloadBytes },
  maxDepth: { field: integerField(r.maxDepth), default: engineQueueDefaults.maxDepth },
  dedupWindowMs: { field: durationField(r.dedupWindowMs), default: engineQueueDefaults.dedupWindowMs },
  deadRetentionMs: { field: durationField(r.deadRetentionMs), default: engineQueueDefaults.deadRetentionMs },
  completedRetentionMs: {
    field: durationField(r.completedRetentionMs),
    default: engineQueueDefaults.completedRetentionMs,
  },
  cancelledRetentionMs: {
    field: durationField(r.cancelledRetentionMs),
    default: engineQueueDefaults.cancelledRetentionMs,
  },
  expiredAction: { field: choiceField(expiredActions), default: engineQueueDefaults.expiredAction },
  allowedTypes: { field: namesField(namePattern, nameHelp), default: engineQueueDefaults.allowedTypes },
  durability: { field: choiceField(queueDurabilities), default: engineQueueDefaults.durability },
  maxLeased: { field: integerField(r.maxLeased), default: engineQueueDefaults.maxLeased },
  rateLimitLeases: { field: integerField(r.rateLimitLeases), default: engineQueueDefaults.rateLimitLeases },
  rateLimitPeriodMs: {
    field: durationField(r.rateLimitPeriodMs),
    default: engineQueueDefaults.rateLimitPeriodMs,
  },
  rateLimitBurst: { field: integerField(r.rateLimitBurst), default: engineQueueDefaults.rateLimitBurst },
  groupMaxLeased: { field: integerField(r.groupMaxLeased), default: engineQueueDefaults.groupMaxLeased },
  groupRateLimitLeases: {
    field: integerField(r.rateLimitLeases),
    default: engineQueueDefaults.groupRateLimitLeases,
  },
  groupRateLimitPeriodMs: {
    field: durationField(r.rateLimitPeriodMs),
    default: engineQueueDefaults.groupRateLimitPeriodMs,
  },
  groupRateLimitBurst: {
    field: integerField(r.rateLimitBurst),
    default: engineQueueDefaults.groupRateLimitBurst,
  },
};

/** Sections in TOML order; `[]` marks an array of tables, `<name>` a table per queue. */
export const sections: readonly { readonly path: string; readonly spec: AnySectionSpec }[] = [
  { path: 'server', spec: serverSpec },
  { path: 'store', spec: storeSpec },
  { path: 'grpc', spec: grpcSpec },
  { path: 'grpc.tls', spec: tlsSpec },
  { path: 'grpc.api_keys[]', spec: apiKeySpec },
  { path: 'admin', spec: adminSpec },
  { path: 'admin.tls', spec: tlsSpec },
  { path: 'admin.users[]', spec: adminUserSpec },
  { path: 'http', spec: httpSpec },
  { path: 'http.tls', spec: tlsSpec },
  { path: 'telemetry', spec: telemetrySpec },
  { path: 'engine', spec: engineSpec },
  { path: 'limits', spec: limitsSpec },
  { path: 'queue_defaults', spec: queueSpec },
  { path: 'queues.<name>', spec: queueSpec },
  { path: 'queues.<name>.push', spec: pushSpec },
  { path: 'schedules[]', spec: scheduleSpec },
];

/** Tables allowed at the top of the file. */
export const rootKeys: readonly string[] = [
  'server',
  'store',
  'grpc',
  'admin',
  'http',
  'telemetry',
  'engine',
  'limits',
  'queue_defaults',
  'queues',
  'schedules',
];

/** Every setting's full TOML key, e.g. `server.data_dir`, `grpc.api_keys[].name`, `queues.<name>.max_attempts`. */
export function configKeys(): readonly string[] {
  return sections.flatMap(({ path, spec }) => Object.keys(spec).map((key) => `${path}.${snakeCase(key)}`));
}

/** The settings an environment variable can override, in documentation order. */
export function environmentVariables(): readonly { readonly name: string; readonly key: string }[] {
  const found = [{ name: 'SEPP_CONFIG', key: '(path of the config file)' }];
  for (const { path, spec } of sections) {
    for (const [key, fieldSpec] of Object.entries(spec)) {
      if (fieldSpec.env !== undefined) found.push({ name: fieldSpec.env, key: `${path}.${snakeCase(key)}` });
    }
  }
  return found;
}
