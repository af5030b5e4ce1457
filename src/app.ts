/**
 * The composition root: opens the store, builds telemetry and the engine,
 * puts them on the network (gRPC, and /metrics until the admin app plugs in
 * here), and owns the shutdown order.
 *
 * The admin server is built in app-admin.ts.
 *
 * Shutdown order: stop accepting calls (gRPC and HTTP) and end streams → answer waiting
 * long-polls with no jobs → let calls in flight finish (bounded) → stop
 * serving /metrics → flush telemetry (last OTLP export, pending spans;
 * bounded) while the engine can still be read → write what is queued,
 * checkpoint the WAL, close the database.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  type AdminApp,
  type AdminServer,
  type AssetSource,
  RateHistory,
  type Readiness,
} from './admin/index.ts';
import { startAdmin, type TlsPem } from './app-admin.ts';
import { listenProblem } from './app-listen-probe.ts';
import { apiKeysOf, createReloader, logReconciled, type ReloadRequest } from './app-reload.ts';
import { limitsRecorder, openConfiguredStore, StoreStartupError } from './app-store.ts';
import { StoreOutage } from './app-store-outage.ts';
import {
  boundAddress,
  configWarnings,
  describePostgresUrl,
  filePermissionWarnings,
  formatProblem,
  overrideConflicts,
  queueSettingsChecker,
  type SeppConfig,
  sqliteLeftBehindWarnings,
  type TlsFiles,
  tlsFilesProblems,
} from './config/index.ts';
import { type Clock, systemClock } from './engine/clock.ts';
import type { BetweenSlices } from './engine/control/index.ts';
import { Engine } from './engine/engine.ts';
import { SeppError } from './engine/errors.ts';
import type { ScheduleEvent } from './engine/schedules/types.ts';
import { createHttpApi, type HttpApi } from './http/index.ts';
import { PushService } from './push/index.ts';
import { type BytesInFlightStats, createRpcServer, type ReloadReport, type RpcServer } from './rpc/index.ts';
import type { Store } from './store/store.ts';
import { type Logger, type LogLevel, Telemetry } from './telemetry/index.ts';

export interface BuildInfo {
  version: string;
  commit: string;
}

export interface AppDeps {
  logger: Logger;
  build: BuildInfo;
  clock?: Clock;
  /** better-sqlite3 addon path inside the single executable. */
  nativeBinding?: string;
  /** The admin UI's built files (ui/dist, or the single executable's assets); null serves the API only. */
  uiAssets?: AssetSource | null;
  /**
   * Reads and validates the config file again, as at start (same file, flags
   * and environment); throws ConfigError. Without it the server cannot reload.
   */
  loadConfig?: () => SeppConfig;
  /** Changes the logger's level (a reload of server.log_level). */
  setLogLevel?: (level: LogLevel) => void;
  /** For tests: what bulk operations await between slices (EngineDeps.betweenBulkSlices); none by default. */
  betweenBulkSlices?: BetweenSlices;
}

export interface RunningServer {
  engine: Engine;
  telemetry: Telemetry;
  /** The bound gRPC port (useful with port 0). */
  grpcPort: number;
  /** The bound admin port: the UI, /api/v1 and /metrics (useful with port 0). */
  adminPort: number;
  /** The bound port of the HTTP/JSON API; null when it is off (server.http_listen not set). */
  httpPort: number | null;
  /** Whether the server can serve now (what `GET /readyz` answers): not once shutdown began. */
  readiness(): Promise<Readiness>;
  /** Request bytes in flight per API key and per connection, and how often a call waited for room. */
  bytesInFlight(): BytesInFlightStats;
  /** The configuration in force (a reload changes it). */
  config(): SeppConfig;
  /**
   * Reads the config file again and applies what can change without a restart
   * (SIGHUP and ReloadConfig come here); a file with problems changes nothing.
   */
  reload(request?: Partial<ReloadRequest>): Promise<ReloadReport>;
  /** Graceful shutdown; resolves when the database is closed. */
  shutdown(): Promise<void>;
}

/** How long shutdown waits for the last OTLP exports before giving up on them. */
const telemetryFlushMs = 1500;

export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Reads a [grpc.tls] or [admin.tls] pair and checks it can serve TLS, so a bad file is
 * reported as that setting (not as a failure to listen) before anything is opened.
 */
function readTls(section: 'grpc' | 'admin' | 'http', files: TlsFiles | null): TlsPem | undefined {
  if (files === null) return undefined;
  const problems = tlsFilesProblems(files, (path) => readFileSync(path, 'utf8'));
  if (problems.length > 0) {
    const path = (file: 'cert_file' | 'key_file') => (file === 'cert_file' ? files.certFile : files.keyFile);
    throw new StartupError(
      problems.map((p) => `${section}.tls.${p.file}: ${path(p.file)} ${p.message}`).join('; '),
    );
  }
  return { certPem: readFileSync(files.certFile), keyPem: readFileSync(files.keyFile) };
}

export async function startServer(config: SeppConfig, deps: AppDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const startedAtMs = clock.nowMs();
  // Which process this is (GetServerInfo, the dashboard, `sepp status`): servers sharing one
  // PostgreSQL behind a load balancer are told apart by it. The addresses are set once bound.
  const bound: { grpc: string; admin: string; http: string | null } = { grpc: '', admin: '', http: null };
  const instance = { hostName: hostname(), instanceId: randomUUID(), pid: process.pid };
  const identity = () => ({
    ...instance,
    grpcAddress: bound.grpc,
    adminAddress: bound.admin,
    httpAddress: bound.http,
  });
  const grpcTls = readTls('grpc', config.grpc.tls);
  const adminTls = readTls('admin', config.admin.tls);
  const httpTls = readTls('http', config.http.tls);
  // On PostgreSQL, a port already taken stops the start before the shared schema is migrated.
  // (A SQLite data directory is this server's alone: its lock, taken first, says more there.)
  if (config.store.kind === 'postgres') {
    const { grpcListen, httpListen, adminListen } = config.server;
    const taken = await listenProblem([
      { what: 'gRPC', setting: 'server.grpc_listen', listen: grpcListen },
      ...(httpListen === null ? [] : [{ what: 'HTTP', setting: 'server.http_listen', listen: httpListen }]),
      { what: 'HTTP', setting: 'server.admin_listen', listen: adminListen },
    ]);
    if (taken !== null) throw new StartupError(taken);
  }
  // The composition root picks the backend (app-store.ts): SQLite in the data directory, or PostgreSQL.
  // A store that will refuse everything from now on (a newer sepp migrated the PostgreSQL schema
  // past this server) ends what waits on it at once (`shutOut`, set once the parts exist).
  const shutOut = new ShutOut();
  let store: Store;
  try {
    store = await openConfiguredStore(config, {
      logger,
      clock,
      nativeBinding: deps.nativeBinding,
      onShutOut: (why) => shutOut.refuse(why),
    });
  } catch (error) {
    if (error instanceof StoreStartupError) throw new StartupError(error.message);
    throw error;
  }
  const telemetry = await Telemetry.open(config.telemetry, {
    logger,
    storeFiles: store.files,
    version: deps.build.version,
  });
  const rates = new RateHistory(clock);
  const storeOutage = new StoreOutage(logger, clock, () => store.describe?.().host ?? undefined);
  // Set once every part exists; a ReloadConfig that arrives before (gRPC listens before
  // the admin app is up) is told the server is still starting.
  let reloader: ReturnType<typeof createReloader> | undefined;
  /** The configuration in force: a reload replaces it. */
  const current = () => reloader?.current() ?? config;
  // Taken once: these run on every job event (a reload that rebuilds the metrics keeps them).
  const metricsHooks = telemetry.engineHooks;
  const engine = await Engine.open(store, config.engine, {
    clock,
    ...(deps.betweenBulkSlices === undefined ? {} : { betweenBulkSlices: deps.betweenBulkSlices }),
    ...metricsHooks,
    onEvent: (event) => {
      metricsHooks.onEvent(event);
      rates.record(event);
    },
    onScheduleEvent: (event) => {
      metricsHooks.onScheduleEvent(event);
      logScheduleEvent(logger, event);
    },
    onSchedulesReconciled: (report) => logReconciled(logger, report),
    // The first failure at once, then a line a minute while they go on, and one when a pass works again.
    onMaintenanceError: (error) => storeOutage.failed(error),
    onMaintenancePassed: () => storeOutage.passed(),
    onHookError: (error) => logger.error('engine.hook_failed', { error: error.message }),
    onDiskFull: (full, detail) =>
      full
        ? logger.error('storage.disk_full', { detail })
        : logger.info('storage.disk_space_back', { detail }),
    // Against the limits in force (a reload changes them) and the message size the server started with.
    checkQueueSettings: (queue, effective, changed) =>
      queueSettingsChecker(current())(queue, effective, changed),
  });
  telemetry.observe(engine);

  const apiKeys = apiKeysOf(config);
  // Checked per subscription, so a reload changes it for the next one (gRPC and HTTP alike).
  const eventSubscribersPerKey = () => current().grpc.maxEventSubscribersPerKey;
  const rpc: RpcServer = createRpcServer({
    engine,
    dataDir: config.server.dataDir,
    apiKeys,
    ...(deps.loadConfig === undefined
      ? {}
      : {
          reloadConfig: (request) => reloadWith(reloader, request, 'the server is still starting; try again'),
        }),
    facts: {
      version: deps.build.version,
      gitCommit: deps.build.commit,
      durability: config.server.durability,
      startedAtMs,
      maxMessageBytes: config.grpc.maxMessageBytes,
      grpcLimits: {
        ...config.grpc,
        get maxEventSubscribersPerKey() {
          return eventSubscribersPerKey();
        },
      },
      nowMs: () => clock.nowMs(),
      identity,
    },
    observer: telemetry.rpcObserver,
    log: logger,
    ...(grpcTls === undefined ? {} : { tls: grpcTls }),
  });

  telemetry.observeConnections(() => rpc.connectionStats());
  telemetry.observeStoreHealth(() => storeOutage.health().available);

  let grpcPort: number;
  try {
    grpcPort = await rpc.listen(config.server.grpcListen.host, config.server.grpcListen.port);
  } catch (error) {
    await telemetry.shutdown(0);
    await engine.close();
    const detail = error instanceof Error ? error.message : String(error);
    throw new StartupError(
      `cannot listen for gRPC on ${config.server.grpcListen.address}: ${detail} (server.grpc_listen)`,
    );
  }
  let http: HttpApi | undefined;
  let httpPort: number | null = null;
  const httpListen = config.server.httpListen;
  if (httpListen !== null) {
    http = createHttpApi({
      engine,
      clock,
      apiKeys: config.grpc.apiKeys,
      limits: config.http,
      maxEventSubscribersPerKey: eventSubscribersPerKey,
      writeTimeoutMs: () => current().http.writeTimeoutMs,
      version: deps.build.version,
      log: logger,
      ...(httpTls === undefined ? {} : { tls: httpTls }),
    });
    try {
      httpPort = await http.listen(httpListen.host, httpListen.port);
    } catch (error) {
      await rpc.shutdown(0);
      await telemetry.shutdown(0);
      await engine.close();
      const detail = error instanceof Error ? error.message : String(error);
      throw new StartupError(
        `cannot listen for HTTP on ${httpListen.address}: ${detail} (server.http_listen)`,
      );
    }
  }
  // Every waiting gRPC and HTTP long-poll, Work, Produce and Events stream ends with the store's why.
  shutOut.wire((refusal) => {
    engine.shutOut(refusal);
    rpc.shutOut(refusal);
  });
  // The server's own workers for queues with [queues.NAME.push]; they lease like any worker.
  const push = new PushService(config.push, {
    engine,
    version: deps.build.version,
    observer: telemetry.pushObserver,
    log: logger,
    // Signatures carry wall-clock time (the receiver compares it with its own), and latency is real time.
    nowMs: () => Date.now(),
  });
  let stopping: Promise<void> | undefined;
  const readiness = async (): Promise<Readiness> => {
    if (stopping !== undefined) return { ready: false, reason: 'shutting down' };
    try {
      await engine.checkReadable();
      return { ready: true };
    } catch (error) {
      return { ready: false, reason: error instanceof Error ? error.message : String(error) };
    }
  };
  let admin: AdminServer;
  let adminApp: AdminApp;
  try {
    ({ admin, adminApp } = await startAdmin(current, {
      ...deps,
      engine,
      clock,
      rates,
      telemetry,
      startedAtMs,
      identity,
      tls: adminTls,
      readiness,
      storeHealth: () => storeOutage.health(),
      pushStatus: (queue) => push.status(queue),
    }));
  } catch (error) {
    await push.stop(0);
    await rpc.shutdown(0);
    await http?.shutdown(0);
    await telemetry.shutdown(0);
    await engine.close();
    const detail = error instanceof Error ? error.message : String(error);
    throw new StartupError(
      `cannot listen for HTTP on ${config.server.adminListen.address}: ${detail} (server.admin_listen)`,
    );
  }
  const httpApi = http;
  telemetry.observeHttpDoors(() => ({
    writeTimeouts: {
      admin: admin.writeTimeouts(),
      ...(httpApi === undefined ? {} : { http: httpApi.writeTimeouts() }),
    },
    httpRefused: { ...(httpApi === undefined ? {} : { unread_answers: httpApi.unreadAnswersRefused() }) },
  }));
  telemetry.observeAnswers(() => ({
    beyondRoom: {
      grpc: rpc.bytesInFlightStats().answers.overdrawn,
      ...(httpApi === undefined ? {} : { http: httpApi.unreadAnswersOverdrawn() }),
    },
  }));
  const listening = {
    grpc: boundAddress(config.server.grpcListen, grpcPort),
    admin: boundAddress(config.server.adminListen, admin.address.port),
    http: httpListen === null || httpPort === null ? null : boundAddress(httpListen, httpPort),
  };
  bound.grpc = listening.grpc.address;
  bound.admin = listening.admin.address;
  bound.http = listening.http?.address ?? null;
  for (const warning of [
    ...configWarnings(config),
    ...filePermissionWarnings(config),
    ...sqliteLeftBehindWarnings(config),
  ])
    logger.warn('config.risky', { setting: warning.key, detail: warning.message });
  // The file may have changed, while the server was down, so that a run-time override no longer fits it.
  for (const conflict of overrideConflicts(config, config, engine.queueSettingOverrides()))
    logger.warn('config.override_conflict', { problem: formatProblem(conflict) });
  if (deps.loadConfig !== undefined) {
    reloader = createReloader(config, {
      load: deps.loadConfig,
      engine,
      rpc,
      http,
      push,
      admin: adminApp,
      telemetry,
      logger,
      setLogLevel: deps.setLogLevel,
      listening,
      recordLimits: limitsRecorder(store),
    });
  }
  logger.info('server.started', {
    version: deps.build.version,
    commit: deps.build.commit,
    grpc: `${config.server.grpcListen.host}:${grpcPort}`,
    admin: admin.url,
    http:
      httpListen === null
        ? 'off'
        : `${httpTls === undefined ? 'http' : 'https'}://${httpListen.address.replace(/:\d+$/, '')}:${httpPort}`,
    metrics: `${admin.url.replace(/^https?:\/\//, '')}/metrics`,
    // The collector's host only: its URL may carry credentials.
    otlp: config.telemetry.otlpEndpoint === null ? 'off' : new URL(config.telemetry.otlpEndpoint).host,
    store: config.store.kind,
    ...(config.store.kind === 'postgres'
      ? // user@host:port/database?parameters: the user and the URL's parameters are no secret, and
        // the password is never in the URL (config/redact.ts).
        { store_url: describePostgresUrl(config.store.url ?? ''), store_schema: config.store.schema }
      : { data_dir: config.server.dataDir, durability: config.server.durability }),
    // Each port's own authentication and TLS: one "auth" field said nothing of the admin port.
    grpc_auth: apiKeys.length > 0 ? 'api_keys' : 'none',
    grpc_tls: grpcTls !== undefined,
    http_tls: httpTls !== undefined,
    admin_auth: config.admin.users.length > 0 ? 'users' : 'none',
    admin_tls: adminTls !== undefined,
  });

  return {
    engine,
    telemetry,
    grpcPort,
    adminPort: admin.address.port,
    httpPort,
    readiness,
    bytesInFlight: () => rpc.bytesInFlightStats(),
    config: current,
    reload: (request = {}) =>
      reloadWith(
        reloader,
        { actor: 'anonymous', ...request },
        'this server was started without a way to read its config file again',
      ),
    shutdown() {
      stopping ??= (async () => {
        logger.info('server.stopping');
        const budgetMs = Math.max(1000, current().server.shutdownTimeoutMs - 2000);
        // The pushers stop leasing first (before long-polls are drained, which would answer their
        // reserves at once); then both transports stop taking calls, and their long-polls are answered.
        const pushStopped = push.stop(budgetMs);
        await Promise.all([pushStopped, rpc.shutdown(budgetMs), http?.shutdown(budgetMs)]);
        await admin.close();
        await telemetry.shutdown(telemetryFlushMs);
        await engine.close();
        logger.info('server.stopped');
      })();
      return stopping;
    },
  };
}

/**
 * The store's word that this server refuses every call from now on, passed on to the parts that
 * hold waiting calls once they exist (a word that comes earlier is kept until then). Clients hear
 * the same words as the log line: UNAVAILABLE (HTTP 503), `sepp-retry: operator`.
 */
class ShutOut {
  private why: string | undefined;
  private apply: ((refusal: SeppError) => void) | undefined;

  refuse(why: string): void {
    if (this.why !== undefined) return;
    this.why = why;
    this.apply?.(new SeppError('unavailable', why, { lasting: true }));
  }

  wire(apply: (refusal: SeppError) => void): void {
    this.apply = apply;
    if (this.why !== undefined) apply(new SeppError('unavailable', this.why, { lasting: true }));
  }
}

/** Ticks that enqueued nothing are worth a line; enqueued ones are counted in the metrics. */
function logScheduleEvent(logger: Logger, event: ScheduleEvent): void {
  if (event.kind !== 'tick_skipped') return;
  const fields = { schedule: event.schedule, reason: event.reason, ticks: event.count, detail: event.detail };
  if (event.reason === 'rejected') logger.warn('schedule.tick_rejected', fields);
  // Overlap skips are the policy doing its work, possibly every second: debug. Missed ticks (after downtime): info.
  else if (event.reason === 'overlap') logger.debug('schedule.ticks_skipped', fields);
  else logger.info('schedule.ticks_skipped', fields);
}

/** Reloads with `reloader`, or reports `why` a reload cannot happen (yet). */
function reloadWith(
  reloader: ReturnType<typeof createReloader> | undefined,
  request: ReloadRequest,
  why: string,
): Promise<ReloadReport> {
  if (reloader === undefined) {
    return Promise.resolve({
      applied: false,
      changed: [],
      restartRequired: [],
      changes: [],
      problems: [{ key: 'reload', message: why }],
      configFile: null,
      securityDowngrades: [],
    });
  }
  return reloader.reload(request);
}
