/**
 * Changing a running server: a queue's settings (SetQueueSettings,
 * ResetQueueSettings) and its config file (ReloadConfig). Each needs an API
 * key with the admin role. Repeating any of them changes nothing more, so
 * they are retried after UNAVAILABLE like reads.
 */
import { type Connection, retrySafe } from './connection.ts';
import { queueInfoFromProto } from './convert.ts';
import type { QueueInfo as ProtoQueueInfo } from './gen/sepp/v1/queue.js';
import type { CallOptions, QueueInfo, ReloadReport } from './types.ts';

/** A setting's new value: text as in the config file (`"30s"`, `"4MiB"`, `'["send"]'`), or a number or list. */
export type SettingInput = string | number | readonly string[];

function queueOf(queue: ProtoQueueInfo | undefined): QueueInfo {
  if (queue === undefined) throw new Error('the server sent no queue');
  return queueInfoFromProto(queue);
}

export async function setQueueSettingsCall(
  conn: Connection,
  queue: string,
  settings: Readonly<Record<string, SettingInput>>,
  options: CallOptions,
): Promise<QueueInfo> {
  const text = Object.fromEntries(
    Object.entries(settings).map(([key, value]) => [
      key,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );
  const response = await conn.invoke(
    conn.rpc.setQueueSettings,
    { queue, settings: text },
    retrySafe(options),
  );
  return queueOf(response.queue);
}

export async function resetQueueSettingsCall(
  conn: Connection,
  queue: string,
  keys: readonly string[] | 'all',
  options: CallOptions,
): Promise<QueueInfo> {
  const request = keys === 'all' ? { queue, keys: [], all: true } : { queue, keys: [...keys], all: false };
  const response = await conn.invoke(conn.rpc.resetQueueSettings, request, retrySafe(options));
  return queueOf(response.queue);
}

export async function reloadConfigCall(
  conn: Connection,
  request: { dryRun: boolean; allowSecurityDowngrade: boolean },
  options: CallOptions,
): Promise<ReloadReport> {
  const response = await conn.invoke(conn.rpc.reloadConfig, request, retrySafe(options));
  return {
    applied: response.applied,
    changed: response.changed,
    restartRequired: response.restartRequired,
    changes: response.changes.map(({ key, oldValue, newValue, summary, restartRequired }) =>
      summary === ''
        ? { key, oldValue, newValue, summary: null, restartRequired }
        : { key, oldValue: null, newValue: null, summary, restartRequired },
    ),
    problems: response.problems.map(({ key, message }) => ({ key, message })),
    configFile: response.configFile === '' ? null : response.configFile,
    securityDowngrades: response.securityDowngrades,
  };
}
