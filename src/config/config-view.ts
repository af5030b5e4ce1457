/**
 * The configuration as a list of settings, each under its TOML key: what the
 * admin UI's Configuration page shows (values in plain units, secrets
 * redacted, with the source of each value) and what a reload compares
 * (reload-plan.ts). Walks the loaded SeppConfig, so it shows what the server
 * runs with, not what a file says.
 */
import { restartOnlyLimits } from '../engine/live-limits.ts';
import type { ScheduleSpec } from '../engine/schedules/types.ts';
import {
  defaultEngineLimits,
  flattenPartialQueueSettings,
  flattenQueueSettings,
} from '../engine/settings.ts';
import type { ConfigEntry } from './config-entry.ts';
import { tomlKey } from './reader.ts';
import { isSecretField, redacted, redactUrl } from './redact.ts';
import { snakeCase } from './schema.ts';
import type { SeppConfig } from './types.ts';
import { formatDurationMs, formatSizeBytes } from './units.ts';

export type { ConfigEntry };

/** One setting with its raw value, for comparing configurations; never shown. */
export interface ConfigLeaf {
  readonly key: string;
  /** The value as loaded (a hash for secrets, which is what a comparison needs). */
  readonly raw: unknown;
  readonly secret: boolean;
  readonly source: string;
  readonly queue?: { readonly name: string; readonly setting: string };
}

/**
 * The `[limits]` a reload changes: every one the engine reads when it checks a
 * call (engine/live-limits.ts), not those the servers' message sizes were built around.
 */
const reloadableLimits: ReadonlySet<string> = new Set(
  Object.keys(defaultEngineLimits)
    .filter((name) => !(restartOnlyLimits as readonly string[]).includes(name))
    .map((name) => `limits.${snakeCase(name)}`),
);

/**
 * What a reload can change while the server runs: API keys, admin users and
 * session settings, queue settings, `[[schedules]]`, the log level, the
 * shutdown time, the telemetry settings, most `[limits]`,
 * `grpc.max_event_subscribers_per_key` and `http.write_timeout_ms`. Everything else —
 * the sockets and their TLS, the database and how it is written, the log
 * format, the message size the gRPC server was built with and the limits sized
 * into it, and any setting added later until its reload is wired
 * (app-reload.ts) — needs a restart.
 */
const reloadablePatterns: readonly RegExp[] = [
  /^server\.(log_level|shutdown_timeout_ms)$/,
  /^grpc\.(api_keys\b|insecure_allow_unauthenticated$|max_event_subscribers_per_key$)/,
  /^admin\.(users\b|session_ttl_ms$|max_sessions_per_user$|trusted_proxies$)/,
  /^http\.write_timeout_ms$/,
  /^telemetry\./,
  /^engine\.strict_queues$/,
  /^queue_defaults\./,
  /^queues\./,
  /^schedules\[/,
];

export function needsRestart(key: string): boolean {
  return !reloadableLimits.has(key) && !reloadablePatterns.some((pattern) => pattern.test(key));
}

/** Every setting of a loaded configuration, in file order. */
export function configLeaves(config: SeppConfig): ConfigLeaf[] {
  const leaves: ConfigLeaf[] = [];
  const sourceOf = (...keys: string[]) =>
    keys.map((key) => config.sources[key]).find((s) => s !== undefined) ?? 'default';
  const add = (
    key: string,
    raw: unknown,
    options: Partial<Pick<ConfigLeaf, 'secret' | 'source' | 'queue'>> = {},
  ) =>
    leaves.push({
      key,
      raw,
      secret: options.secret ?? false,
      source: options.source ?? sourceOf(key),
      ...(options.queue === undefined ? {} : { queue: options.queue }),
    });
  const section = (path: string, values: object, skip: readonly string[] = []) => {
    for (const [camel, value] of Object.entries(values)) {
      if (skip.includes(camel)) continue;
      const raw = isListen(value) ? value.address : value;
      add(`${path}.${snakeCase(camel)}`, raw, { secret: isSecretField(camel) });
    }
  };
  const tls = (path: string, files: { certFile: string; keyFile: string } | null) => {
    if (files === null) add(path, null);
    else section(path, files);
  };
  const { server, store, grpc, admin, http, telemetry, engine } = config;
  section('server', server);
  const { password, ...storeSettings } = store;
  section('store', storeSettings);
  // The password's digest, so that a reload sees a changed password; shown redacted.
  add('store.password_sha256', password?.sha256 ?? null, {
    secret: true,
    source: sourceOf('store.password_file', 'store.password_env'),
  });
  section('grpc', grpc, ['tls', 'apiKeys']);
  tls('grpc.tls', grpc.tls);
  grpc.apiKeys.forEach((key, i) => {
    const path = `grpc.api_keys[${i}]`;
    add(`${path}.name`, key.name);
    add(`${path}.role`, key.role);
    if (key.queues !== null) add(`${path}.queues`, key.queues);
    add(`${path}.key_sha256`, key.keySha256, {
      secret: true,
      source: sourceOf(`${path}.key`, `${path}.key_sha256`),
    });
  });
  section('admin', admin, ['tls', 'users']);
  tls('admin.tls', admin.tls);
  admin.users.forEach((user, i) => {
    section(`admin.users[${i}]`, user);
  });
  section('http', http, ['tls']);
  tls('http.tls', http.tls);
  section('telemetry', telemetry, ['metricsTokenSha256']);
  add('telemetry.metrics_token_sha256', telemetry.metricsTokenSha256, {
    secret: true,
    source: sourceOf('telemetry.metrics_token', 'telemetry.metrics_token_sha256'),
  });
  add('engine.strict_queues', engine.strictQueues);
  section('limits', engine.limits);
  section('queue_defaults', flattenQueueSettings(engine.queueDefaults));
  for (const name of Object.keys(engine.queues).sort()) {
    const path = `queues.${tomlKey(name)}`;
    const queue = engine.queues[name];
    if (queue === undefined) continue;
    for (const [camel, value] of Object.entries(flattenPartialQueueSettings(queue))) {
      const key = snakeCase(camel);
      const inherited = config.sources[`queue_defaults.${key}`] === undefined ? 'default' : 'queue_defaults';
      add(`${path}.${key}`, value, {
        source: config.sources[`${path}.${key}`] ?? inherited,
        queue: { name, setting: key },
      });
    }
  }
  for (const name of Object.keys(config.push).sort()) {
    const path = `queues.${tomlKey(name)}.push`;
    const target = config.push[name];
    if (target === undefined) continue;
    const { secret, ...settings } = target;
    section(path, settings);
    // The secret's digest, so that a reload sees a changed secret; shown redacted.
    add(`${path}.secret_sha256`, secret.sha256, {
      secret: true,
      source: sourceOf(`${path}.secret_file`, `${path}.secret_env`),
    });
  }
  engine.schedules.forEach((schedule, i) => {
    for (const [key, raw] of scheduleFields(schedule)) add(`schedules[${i}].${key}`, raw);
  });
  return leaves;
}

/**
 * A `[[schedules]]` table as its TOML keys, the ones it sets: the payload as
 * text (the config writes it so), start and end as RFC 3339.
 */
function scheduleFields(schedule: ScheduleSpec): [string, unknown][] {
  const { template, startAtMs, endAtMs, ...timing } = schedule;
  const fields: [string, unknown][] = Object.entries({
    ...timing,
    ...template,
    payload: new TextDecoder().decode(template.payload),
    ...(startAtMs === undefined ? {} : { startAt: new Date(startAtMs).toISOString() }),
    ...(endAtMs === undefined ? {} : { endAt: new Date(endAtMs).toISOString() }),
  })
    .filter(([, value]) => value !== undefined)
    .map(([camel, value]) => [snakeCase(camel), value]);
  // The name first: a reload compares the list by it (reload-plan.ts).
  return fields.sort(([a], [b]) => Number(b === 'name') - Number(a === 'name'));
}

/** The configuration for people: plain units, secrets redacted, sources named. */
export function describeConfig(config: SeppConfig): ConfigEntry[] {
  return configLeaves(config).map((leaf) => ({
    key: leaf.key,
    value: formatValue(leaf),
    source: leaf.source,
    restartRequired: needsRestart(leaf.key),
    ...(leaf.queue === undefined ? {} : { queue: leaf.queue }),
  }));
}

/** A setting's value as people read it: plain units, `<redacted>` for a secret, URLs without credentials. */
export function formatValue({ key, raw, secret }: ConfigLeaf): string {
  if (raw === null || raw === undefined) return 'not set';
  if (secret) return redacted;
  if (
    (key === 'telemetry.otlp_endpoint' || key === 'store.url' || /^queues\..+\.push\.url$/.test(key)) &&
    typeof raw === 'string'
  )
    return redactUrl(raw);
  if (typeof raw === 'number') {
    if (key.endsWith('_ms')) return formatDurationMs(raw);
    if (key.endsWith('_bytes')) return formatSizeBytes(raw);
    return String(raw);
  }
  if (Array.isArray(raw)) return raw.length === 0 ? '(none)' : raw.join(', ');
  if (typeof raw === 'object') return JSON.stringify(raw);
  return String(raw);
}

function isListen(value: unknown): value is { address: string } {
  return typeof value === 'object' && value !== null && 'loopback' in value && 'address' in value;
}
