/**
 * Config reload (SIGHUP, `systemctl reload sepp`, the ReloadConfig RPC): read
 * the config file again, exactly as at start, and apply what can change while
 * the server runs: API keys (open streams of a revoked key end), admin users
 * (a removed user's sessions end) and session settings, queue settings from
 * the file, [[schedules]] (added, changed, removed), the log level and the
 * telemetry settings. A file with any problem
 * is refused as a whole, with the messages a start would give, and the
 * running configuration stays. What needs a restart (listen addresses, data
 * directory, TLS, durability, limits) keeps its running value and is named in
 * the log line and the report. Reloads run one at a time.
 */
import type { AdminApp } from './admin/index.ts';
import {
  ConfigError,
  type ConfigProblem,
  formatProblem,
  overrideConflicts,
  planReload,
  type SeppConfig,
} from './config/index.ts';
import type { Engine } from './engine/engine.ts';
import type { ReconcileReport } from './engine/schedules/types.ts';
import type { HttpApi } from './http/index.ts';
import type { PushService } from './push/index.ts';
import type { ApiKey, ReloadReport, RpcServer } from './rpc/index.ts';
import type { Logger, LogLevel, Telemetry } from './telemetry/index.ts';

export interface ReloadParts {
  /** Reads and validates the config file as at start; throws ConfigError. */
  load: () => SeppConfig;
  engine: Engine;
  rpc: RpcServer;
  /** The HTTP API, when it runs: it takes the same API keys. */
  http: Pick<HttpApi, 'replaceApiKeys'> | undefined;
  /** The pushers: a reload starts, stops and changes them as the push tables say. */
  push: Pick<PushService, 'reconfigure'>;
  admin: Pick<AdminApp, 'reconfigure'>;
  telemetry: Pick<Telemetry, 'reconfigure'>;
  logger: Logger;
  setLogLevel: ((level: LogLevel) => void) | undefined;
}

export interface ReloadRequest {
  /** Only report what would change. */
  dryRun?: boolean;
  /** Who asked, for the audit log: `signal:SIGHUP`, `key:<key name>` (over gRPC or the CLI). */
  actor: string;
  /** The door it came through (`grpc`, `cli`), kept in the audit entry's details. */
  via?: string;
}

export function apiKeysOf(config: SeppConfig): ApiKey[] {
  return config.grpc.apiKeys.map((k) => ({
    name: k.name,
    role: k.role,
    sha256: Buffer.from(k.keySha256, 'hex'),
  }));
}

/** One line per schedule the config added, changed, took over or removed, at start and on a reload. */
export function logReconciled(logger: Logger, report: ReconcileReport): void {
  for (const schedule of report.added) logger.info('schedule.added', { schedule, source: 'config' });
  for (const schedule of report.updated) logger.info('schedule.updated', { schedule, source: 'config' });
  for (const schedule of report.adopted) {
    logger.warn('schedule.adopted', {
      schedule,
      detail: 'a schedule created over the API is now declared in the config, which owns it from now on',
    });
  }
  for (const schedule of report.removed) logger.info('schedule.removed', { schedule, source: 'config' });
}

/** Makes the reload function; `current()` is the configuration in force (it starts as `initial`). */
export function createReloader(initial: SeppConfig, parts: ReloadParts) {
  let current = initial;
  let queue: Promise<unknown> = Promise.resolve();

  const refuse = (problems: readonly ConfigProblem[], request: ReloadRequest): ReloadReport => {
    const file = current.configFile ?? '(no config file)';
    if (request.dryRun !== true) {
      parts.logger.error('config.reload_refused', {
        file,
        by: request.actor,
        problems: problems.map(formatProblem).join('; '),
        detail:
          'the file has problems, so nothing changed: the server keeps running on its previous configuration',
      });
    }
    return {
      applied: false,
      changed: [],
      restartRequired: [],
      problems: problems.map(({ key, message }) => ({ key, message })),
      configFile: current.configFile,
    };
  };

  const reload = async (request: ReloadRequest): Promise<ReloadReport> => {
    let next: SeppConfig;
    try {
      next = parts.load();
    } catch (error) {
      if (error instanceof ConfigError) return refuse(error.problems, request);
      throw error;
    }
    const conflicts = overrideConflicts(next, current, parts.engine.queueSettingOverrides());
    if (conflicts.length > 0) return refuse(conflicts, request);
    const plan = planReload(current, next);
    const report: ReloadReport = {
      applied: request.dryRun !== true,
      changed: [...plan.changed],
      restartRequired: [...plan.restartRequired],
      problems: [],
      configFile: next.configFile,
    };
    if (request.dryRun === true) return report;
    const config = plan.config;
    // The steps that write the database go first: if the first fails, nothing has changed.
    await parts.engine.reconfigureQueues(config.engine);
    // After the queues, so a schedule is checked against the file's queue settings of now.
    // Schedules created over the API that the file does not name stay (docs/schedules.md).
    logReconciled(parts.logger, await parts.engine.reconcileSchedules(config.engine.schedules));
    parts.rpc.replaceApiKeys(apiKeysOf(config));
    parts.http?.replaceApiKeys(config.grpc.apiKeys);
    parts.push.reconfigure(config.push);
    const endedUsers = await parts.admin.reconfigure({
      users: config.admin.users,
      sessionTtlMs: config.admin.sessionTtlMs,
      maxSessionsPerUser: config.admin.maxSessionsPerUser,
      trustedProxies: config.admin.trustedProxies,
    });
    parts.setLogLevel?.(config.server.logLevel);
    parts.telemetry.reconfigure(config.telemetry);
    current = config;
    await parts.engine.recordAudit({
      actor: request.actor,
      action: 'config.reload',
      target: `config:${config.configFile ?? '(none)'}`,
      details: {
        ...(request.via === undefined ? {} : { via: request.via }),
        changed: report.changed,
        restartRequired: report.restartRequired,
        endedSessionsOf: endedUsers,
      },
    });
    parts.logger.info('config.reloaded', {
      file: config.configFile ?? '(no config file)',
      by: request.actor,
      changed: report.changed.length === 0 ? 'nothing' : report.changed.join('; '),
      ...(endedUsers.length === 0 ? {} : { sessions_ended_for: endedUsers.join(', ') }),
    });
    if (report.restartRequired.length > 0) {
      parts.logger.warn('config.restart_required', {
        settings: report.restartRequired.join('; '),
        detail: 'these settings changed in the file but keep their running values until sepp restarts',
      });
    }
    return report;
  };

  return {
    current: () => current,
    /** Reloads (or, dry run, reports), after any reload already running. */
    reload(request: ReloadRequest): Promise<ReloadReport> {
      const result = queue.then(() => reload(request));
      queue = result.catch(() => {});
      return result;
    },
  };
}
