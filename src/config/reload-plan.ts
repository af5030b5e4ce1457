/**
 * What a config reload changes. The new file was loaded and validated as a
 * whole, exactly as at start (a file with any problem is refused before this
 * runs); this compares it with the running configuration and decides, setting
 * by setting, what takes effect now and what keeps its running value until a
 * restart (config-view.ts names those). The result is the configuration to run
 * with from now on: the new file's, except the settings that need a restart.
 */
import { restartOnlyLimits } from '../engine/live-limits.ts';
import type { EngineLimits } from '../engine/settings.ts';
import { type ConfigLeaf, configLeaves, formatValue, needsRestart } from './config-view.ts';
import { snakeCase } from './schema.ts';
import type { SeppConfig } from './types.ts';

export interface ReloadPlan {
  /** What to run with: `next`, with every setting that needs a restart at its running value. */
  readonly config: SeppConfig;
  /** What changes now, e.g. `server.log_level`, `grpc.api_keys (added deploy; removed ci)`. */
  readonly changed: readonly string[];
  /** Settings whose new value waits for a restart, e.g. `server.grpc_listen`. */
  readonly restartRequired: readonly string[];
  /** The `[limits]` that change now, with their running and new values (for the audit). */
  readonly limits: readonly LimitChange[];
  /**
   * `changed` and then `restartRequired`, in their order, each with its running and new value
   * (what ReloadConfig answers and the CLI prints).
   */
  readonly changes: readonly SettingChange[];
  /**
   * `changed` and `restartRequired` as the log shows them: each setting with its running and
   * new value (`server.log_level info -> debug`), a secret as `changed` and never its value
   * (config-view.ts's rules, as the Configuration page); the lists' summaries as they are.
   */
  readonly shown: { readonly changed: readonly string[]; readonly restartRequired: readonly string[] };
}

/**
 * One setting a reload changes, as people read it: its values as the Configuration page shows
 * them (config-view.ts's formatValue: plain units, URLs without credentials, never a secret),
 * or, where no value may or can be shown, a summary instead.
 */
export interface SettingChange {
  /** `server.log_level`; a list compared by name (`grpc.api_keys`); a queue (`queues.emails`). */
  readonly key: string;
  /** The running and the new value; absent when `summary` says what changed instead. */
  readonly values?: { readonly from: string; readonly to: string };
  /** `changed` for a secret, `added deploy; removed ci` for a list, `declared` for a queue. */
  readonly summary?: string;
  readonly restartRequired: boolean;
}

export interface LimitChange {
  /** The setting, e.g. `limits.max_waiters`. */
  readonly key: string;
  readonly from: number;
  readonly to: number;
}

export function planReload(running: SeppConfig, next: SeppConfig): ReloadPlan {
  // Turning login on or off changes how every request is checked: that takes a restart.
  const loginFlips = (running.admin.users.length === 0) !== (next.admin.users.length === 0);
  // Each change with its name as `changed` and `restartRequired` give it (a list's with its summary).
  const found: { name: string; change: SettingChange }[] = [];
  const before = byKey(configLeaves(running));
  const after = byKey(configLeaves(next));
  const lists = [
    { path: 'grpc.api_keys', restart: false },
    { path: 'admin.users', restart: loginFlips },
    // The engine reconciles [[schedules]] again (app-reload.ts), as it does when it opens.
    { path: 'schedules', restart: false },
  ];
  const declared = (leaves: ReadonlyMap<string, ConfigLeaf>) =>
    new Set([...leaves.values()].flatMap((leaf) => (leaf.queue === undefined ? [] : [leaf.queue.name])));
  const [declaredBefore, declaredAfter] = [declared(before), declared(after)];
  const reported = new Set<string>();
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    if (lists.some((list) => key.startsWith(`${list.path}[`))) continue;
    if (JSON.stringify(before.get(key)?.raw) === JSON.stringify(after.get(key)?.raw)) continue;
    // A queue declared or no longer declared is one change, not one per setting.
    const queue = (after.get(key) ?? before.get(key))?.queue?.name;
    if (queue !== undefined && declaredBefore.has(queue) !== declaredAfter.has(queue)) {
      if (reported.has(queue)) continue;
      reported.add(queue);
      const path = key.slice(0, key.lastIndexOf('.'));
      const summary = declaredAfter.has(queue) ? 'declared' : 'no longer declared';
      found.push({ name: `${path} (${summary})`, change: { key: path, summary, restartRequired: false } });
      continue;
    }
    found.push({ name: key, change: settingChange(key, before.get(key), after.get(key)) });
  }
  for (const list of lists) {
    const summary = listChanges(before, after, list.path);
    if (summary === undefined) continue;
    found.push({
      name: `${list.path} (${summary})`,
      change: { key: list.path, summary, restartRequired: list.restart },
    });
  }
  const now = found.filter((f) => !f.change.restartRequired);
  const later = found.filter((f) => f.change.restartRequired);
  const config = merge(running, next, loginFlips);
  const limits = (Object.keys(running.engine.limits) as (keyof EngineLimits)[])
    .filter((name) => config.engine.limits[name] !== running.engine.limits[name])
    .map((name) => ({
      key: `limits.${snakeCase(name)}`,
      from: running.engine.limits[name],
      to: config.engine.limits[name],
    }));
  return {
    config,
    changed: now.map((f) => f.name),
    restartRequired: later.map((f) => f.name),
    limits,
    changes: [...now, ...later].map((f) => f.change),
    shown: { changed: now.map(logText), restartRequired: later.map(logText) },
  };
}

/** What of a value a reload shows (its log line, its answer): a URL, a list are short, but bounded all the same. */
const shownValueMaxChars = 200;

/** A change as the log line shows it: `key old -> new`, `key changed` for a secret, a list as named. */
function logText({ name, change }: { name: string; change: SettingChange }): string {
  if (change.values !== undefined) return `${change.key} ${change.values.from} -> ${change.values.to}`;
  return name === change.key ? `${change.key} ${change.summary}` : name;
}

/** One setting's change: its running and new values, or `changed` for a secret (never its value). */
function settingChange(key: string, from: ConfigLeaf | undefined, to: ConfigLeaf | undefined): SettingChange {
  const restartRequired = needsRestart(key);
  if (from?.secret === true || to?.secret === true) return { key, summary: 'changed', restartRequired };
  const value = (leaf: ConfigLeaf | undefined) => {
    const text = leaf === undefined ? 'not set' : formatValue(leaf);
    return text.length > shownValueMaxChars ? `${text.slice(0, shownValueMaxChars)}…` : text;
  };
  return { key, values: { from: value(from), to: value(to) }, restartRequired };
}

function byKey(leaves: readonly ConfigLeaf[]): Map<string, ConfigLeaf> {
  return new Map(leaves.map((leaf) => [leaf.key, leaf]));
}

/** `added deploy; removed ci; changed billing` for `grpc.api_keys`, compared by name; undefined when equal. */
function listChanges(
  before: ReadonlyMap<string, ConfigLeaf>,
  after: ReadonlyMap<string, ConfigLeaf>,
  path: string,
): string | undefined {
  const entries = (leaves: ReadonlyMap<string, ConfigLeaf>) => {
    const found = new Map<string, string>();
    for (const [key, leaf] of leaves) {
      const match = /^(.+)\[(\d+)\]\.name$/.exec(key);
      if (match?.[1] !== path) continue;
      const prefix = `${path}[${match[2]}].`;
      const fields = [...leaves]
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, l]) => [k.slice(prefix.length), l.raw]);
      found.set(String(leaf.raw), JSON.stringify(fields));
    }
    return found;
  };
  const old = entries(before);
  const now = entries(after);
  const added = [...now.keys()].filter((name) => !old.has(name));
  const removed = [...old.keys()].filter((name) => !now.has(name));
  const altered = [...now.keys()].filter((name) => old.has(name) && old.get(name) !== now.get(name));
  const parts = [
    added.length > 0 ? `added ${added.join(', ')}` : '',
    removed.length > 0 ? `removed ${removed.join(', ')}` : '',
    altered.length > 0 ? `changed ${altered.join(', ')}` : '',
  ].filter((part) => part !== '');
  return parts.length === 0 ? undefined : parts.join('; ');
}

/**
 * `running`, with what a reload may change taken from `next` (the same list as
 * needsRestart's): a setting nobody wired for reload keeps its running value.
 */
function merge(running: SeppConfig, next: SeppConfig, loginFlips: boolean): SeppConfig {
  const keep = (key: string) => needsRestart(key) || (loginFlips && key.startsWith('admin.users['));
  const sources: Record<string, string> = {};
  for (const [key, source] of Object.entries(next.sources)) if (!keep(key)) sources[key] = source;
  for (const [key, source] of Object.entries(running.sources)) if (keep(key)) sources[key] = source;
  const { queueDefaults, queues, strictQueues, fileKeys, schedules } = next.engine;
  // The limits the engine reads per call come from the file; the rest keep their running values.
  const limits = { ...next.engine.limits };
  for (const name of restartOnlyLimits) limits[name] = running.engine.limits[name];
  return Object.freeze({
    ...running,
    configFile: next.configFile,
    plaintextSecrets: next.plaintextSecrets,
    sources: Object.freeze(sources),
    server: Object.freeze({
      ...running.server,
      logLevel: next.server.logLevel,
      shutdownTimeoutMs: next.server.shutdownTimeoutMs,
    }),
    grpc: Object.freeze({
      ...running.grpc,
      apiKeys: next.grpc.apiKeys,
      insecureAllowUnauthenticated: next.grpc.insecureAllowUnauthenticated,
      maxEventSubscribersPerKey: next.grpc.maxEventSubscribersPerKey,
    }),
    admin: Object.freeze({
      ...running.admin,
      users: loginFlips ? running.admin.users : next.admin.users,
      sessionTtlMs: next.admin.sessionTtlMs,
      maxSessionsPerUser: next.admin.maxSessionsPerUser,
      trustedProxies: next.admin.trustedProxies,
    }),
    // The HTTP API reads its write deadline per check; its socket and other limits need a restart.
    http: Object.freeze({ ...running.http, writeTimeoutMs: next.http.writeTimeoutMs }),
    telemetry: next.telemetry,
    // Push targets are applied by the pushers (app-reload.ts).
    push: next.push,
    engine: Object.freeze({
      ...running.engine,
      queueDefaults,
      queues,
      strictQueues,
      schedules,
      limits: Object.freeze(limits),
      ...(fileKeys === undefined ? {} : { fileKeys }),
    }),
  });
}
