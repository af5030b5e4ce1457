/**
 * Config reload (SIGHUP, `systemctl reload sepp`, the ReloadConfig RPC): read
 * the config file again, exactly as at start, and apply what can change while
 * the server runs: API keys (open streams of a revoked key end), admin users
 * (a removed user's sessions end) and session settings, queue settings from
 * the file, [[schedules]] (added, changed, removed), the log level, the
 * telemetry settings and the [limits] checked per call (engine/live-limits.ts;
 * the log line names each with its old and new value). A file with any problem
 * is refused as a whole, with the messages a start would give, and the
 * running configuration stays. What needs a restart (listen addresses, data
 * directory, TLS, durability, the message sizes and the two limits sized into
 * them) keeps its running value and is named in the log line and the report.
 * A file that would lower security (no keys, no users, no TLS, no /metrics
 * token, a key or user given more than it had) is refused unless the request allows it
 * explicitly, and never where the start-up rule refuses it for the address
 * the server listens on (config/reload-safety.ts); SIGHUP never allows it.
 * What it lowers is named in the answer (`securityDowngrades`), allowed or
 * refused, as in the WARN line and the audit entry.
 * Every result, applied, refused or a dry run, is in the audit log with the
 * names of what changed, never a secret. Reloads run one at a time.
 */
import type { AdminApp } from './admin/index.ts';
import {
  ConfigError,
  type ConfigProblem,
  checkReloadSafety,
  formatProblem,
  type ListenAddress,
  overrideConflicts,
  planReload,
  QueueScope,
  runningMessageSizeProblems,
  type SeppConfig,
  type SettingChange,
} from './config/index.ts';
import type { Engine } from './engine/engine.ts';
import type { ReconcileReport } from './engine/schedules/types.ts';
import type { EngineLimits } from './engine/settings.ts';
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
  /** The addresses the servers listen on, with the ports they bound: a new address waits for a restart. */
  listening: { grpc: ListenAddress; admin: ListenAddress; http: ListenAddress | null };
  /**
   * On PostgreSQL: records the limits a reload applied as this server's, for sepp.enqueue
   * (store/postgres/server-limits.ts); undefined on SQLite.
   */
  recordLimits?: ((limits: Readonly<EngineLimits>) => Promise<void>) | undefined;
}

export interface ReloadRequest {
  /** Only report what would change. */
  dryRun?: boolean;
  /** Who asked, for the audit log: `signal:SIGHUP`, `key:<key name>` (over gRPC or the CLI). */
  actor: string;
  /** The door it came through (`grpc`, `cli`), kept in the audit entry's details. */
  via?: string;
  /**
   * Let a change that lowers security through (no keys, users, TLS or /metrics
   * token, a key or user given more) where the start-up rule allows it. Only an explicit request sets
   * it (`sepp config reload --allow-security-downgrade`); SIGHUP never does.
   */
  allowSecurityDowngrade?: boolean;
}

export function apiKeysOf(config: SeppConfig): ApiKey[] {
  return config.grpc.apiKeys.map((k) => ({
    name: k.name,
    role: k.role,
    sha256: Buffer.from(k.keySha256, 'hex'),
    scope: k.queues === null ? null : new QueueScope(k.queues),
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

  /** Writes the reload's audit entry; a refusal or a dry run is reported even when the entry cannot be written. */
  const audit = async (request: ReloadRequest, file: string | null, details: Record<string, unknown>) => {
    const entry: Parameters<Engine['recordAudit']>[0] = {
      actor: request.actor,
      action: 'config.reload',
      target: `config:${file ?? '(none)'}`,
      details: {
        ...(request.via === undefined ? {} : { via: request.via }),
        ...(request.allowSecurityDowngrade === true ? { allowSecurityDowngrade: true } : {}),
        ...details,
      },
    };
    if (details.result === 'applied') {
      await parts.engine.recordAudit(entry);
      return;
    }
    try {
      await parts.engine.recordAudit(entry);
    } catch (error) {
      parts.logger.warn('config.reload_audit_failed', {
        result: String(details.result),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  const refuse = async (
    problems: readonly ConfigProblem[],
    request: ReloadRequest,
    downgrades: readonly string[] = [],
    wouldChange: readonly SettingChange[] = [],
  ): Promise<ReloadReport> => {
    const file = current.configFile ?? '(no config file)';
    if (request.dryRun !== true) {
      parts.logger.error('config.reload_refused', {
        file,
        by: request.actor,
        problems: problems.map(formatProblem).join('; '),
        ...(downgrades.length === 0 ? {} : { security_downgrade: downgrades.join(', ') }),
        detail:
          'the file has problems, so nothing changed: the server keeps running on its previous configuration',
      });
    }
    // Setting names only: a problem's message may quote the file, secrets included.
    await audit(request, current.configFile, {
      result: request.dryRun === true ? 'dry_run' : 'refused',
      problems: problems.map((p) => p.key),
      ...(downgrades.length === 0 ? {} : { securityDowngrades: downgrades }),
    });
    return {
      applied: false,
      changed: [],
      restartRequired: [],
      // What the file would change had it been taken (none when it did not load): the
      // operator sees the whole difference beside the problems, not only the first refusal.
      changes: [...wouldChange],
      problems: problems.map(({ key, message }) => ({ key, message })),
      configFile: current.configFile,
      securityDowngrades: [...downgrades],
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
    const safety = checkReloadSafety({
      running: current,
      next,
      listening: parts.listening,
      allowSecurityDowngrade: request.allowSecurityDowngrade === true,
    });
    const plan = planReload(current, next);
    if (safety.problems.length > 0) return refuse(safety.problems, request, safety.downgrades, plan.changes);
    // Checked against what will run: the file's limits, the running message sizes.
    const conflicts = [
      ...runningMessageSizeProblems(plan.config),
      ...overrideConflicts(next, plan.config, parts.engine.queueSettingOverrides()),
    ];
    if (conflicts.length > 0) return refuse(conflicts, request, [], plan.changes);
    const report: ReloadReport = {
      applied: request.dryRun !== true,
      changed: [...plan.changed],
      restartRequired: [...plan.restartRequired],
      changes: plan.changes,
      problems: [],
      configFile: next.configFile,
      securityDowngrades: [...safety.downgrades],
    };
    const outcome = {
      changed: report.changed,
      restartRequired: report.restartRequired,
      ...(plan.limits.length === 0 ? {} : { limits: plan.limits }),
      ...(safety.downgrades.length === 0 ? {} : { securityDowngrades: safety.downgrades }),
    };
    if (request.dryRun === true) {
      await audit(request, next.configFile, { result: 'dry_run', ...outcome });
      return report;
    }
    const config = plan.config;
    // The limits first: the file's queues and schedules were checked against them (names, counts).
    // They write nothing; if a step below fails, the running ones come back.
    const previousLimits = current.engine.limits;
    parts.engine.reconfigureLimits(config.engine.limits);
    try {
      // The steps that write the database go first: if the first fails, nothing else has changed.
      await parts.engine.reconfigureQueues(config.engine);
      // After the queues, so a schedule is checked against the file's queue settings of now.
      // Schedules created over the API that the file does not name stay (docs/schedules.md).
      logReconciled(parts.logger, await parts.engine.reconcileSchedules(config.engine.schedules));
    } catch (error) {
      parts.engine.reconfigureLimits(previousLimits);
      throw error;
    }
    // A failed write is tried again by the store's next look at its limits (within 10 s).
    await parts.recordLimits?.(config.engine.limits).catch((error: unknown) =>
      parts.logger.warn('store.limits_unrecorded', {
        detail: `the reloaded limits are not recorded for sepp.enqueue yet (${error instanceof Error ? error.message : String(error)}); the server tries again within 10 s (docs/postgres.md)`,
      }),
    );
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
    await parts.telemetry.reconfigure(config.telemetry);
    current = config;
    await audit(request, config.configFile, { result: 'applied', ...outcome, endedSessionsOf: endedUsers });
    parts.logger.info('config.reloaded', {
      file: config.configFile ?? '(no config file)',
      by: request.actor,
      // Each setting with its running and new value (a secret as `changed`): raising a bound is
      // no security downgrade (SECURITY.md), but it is a decision, and the line says what it was.
      changed: plan.shown.changed.length === 0 ? 'nothing' : plan.shown.changed.join('; '),
      ...(endedUsers.length === 0 ? {} : { sessions_ended_for: endedUsers.join(', ') }),
    });
    if (safety.downgrades.length > 0) {
      parts.logger.warn('config.security_downgraded', {
        settings: safety.downgrades.join(', '),
        by: request.actor,
        detail:
          'allowed by the request (allow_security_downgrade): security is lower than before this reload',
      });
    }
    if (report.restartRequired.length > 0) {
      parts.logger.warn('config.restart_required', {
        settings: plan.shown.restartRequired.join('; '),
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
