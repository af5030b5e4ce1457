/**
 * The composition root's choice of store (`[store] kind`): the SQLite store of
 * the data directory (its lock, its migrations, the disk reserve, stale backup
 * copies removed), or the PostgreSQL store (connected, migrated under an
 * advisory lock, a counter shard taken) before anything else starts. A store
 * that cannot be opened is a StartupError naming the setting to look at; the
 * PostgreSQL password appears in no message (the URL never holds one).
 */
import { redactUrl, type SeppConfig } from './config/index.ts';
import type { Clock } from './engine/clock.ts';
import type { EngineLimits } from './engine/settings.ts';
import { RepeatThrottle } from './platform/repeat-throttle.ts';
import { removeStaleBackups } from './rpc/index.ts';
import { defaultConnectTimeoutMs } from './store/postgres/connect.ts';
import { type ConnectTarget, connectAdvice } from './store/postgres/connect-advice.ts';
import { PostgresStore } from './store/postgres/postgres-store.ts';
import { parsePostgresUrl } from './store/postgres-url.ts';
import { DataDirError } from './store/sqlite/data-dir.ts';
import { DataDirInUseError, SchemaTooNewError } from './store/sqlite/open.ts';
import { openSqliteStore } from './store/sqlite/sqlite-store.ts';
import type { Store } from './store/store.ts';
import type { Logger } from './telemetry/index.ts';

/** At most one `store.reads_refused` line a minute while reads are refused. */
const refusalsLoggedEveryMs = 60_000;

export class StoreStartupError extends Error {
  override name = 'StoreStartupError';
}

export interface StoreDeps {
  logger: Logger;
  /** For the pace of the `store.reads_refused` lines. */
  clock: Pick<Clock, 'nowMs'>;
  /** The SQLite addon's path (the single executable unpacks it). */
  nativeBinding?: string | undefined;
  /**
   * Told once when the store will refuse every read and write from now on (a newer sepp migrated
   * the PostgreSQL schema past this server), with why, after the log line that says it.
   */
  onShutOut?: (why: string) => void;
}

export async function openConfiguredStore(config: SeppConfig, deps: StoreDeps): Promise<Store> {
  const { logger } = deps;
  // An upgrade's schema changes, one line each (docs/upgrading.md).
  const onMigrated = (applied: readonly { version: number; name: string; durationMs: number }[]) => {
    for (const step of applied) logger.info('store.migrated', { ...step, store: config.store.kind });
  };
  if (config.store.kind === 'postgres') return openPostgres(config, onMigrated, deps);
  let store: ReturnType<typeof openSqliteStore>;
  try {
    store = openSqliteStore(config.server.dataDir, {
      durability: config.server.durability,
      walCheckpoints: config.server.walCheckpoints,
      diskReserveBytes: config.server.diskReserveBytes,
      onFilesLost: (event, detail) =>
        event === 'rescued'
          ? logger.warn('storage.files_rescued', { detail })
          : logger.error(event === 'lost' ? 'storage.files_lost' : 'storage.rescue_failed', { detail }),
      ...(deps.nativeBinding === undefined ? {} : { nativeBinding: deps.nativeBinding }),
      onMigrated,
    });
  } catch (error) {
    if (
      error instanceof DataDirInUseError ||
      error instanceof DataDirError ||
      error instanceof SchemaTooNewError
    )
      throw new StoreStartupError(`${error.message} (--data-dir, server.data_dir)`);
    throw error;
  }
  removeStaleBackups(config.server.dataDir);
  if (store.diskReserve !== undefined && !store.diskReserve.take()) {
    logger.warn('storage.reserve_unavailable', {
      detail: `no room for the ${config.server.diskReserveBytes} bytes of sepp.reserve: if the disk fills up, workers may not be able to drain the queues (server.disk_reserve_bytes)`,
    });
  }
  return store;
}

/** How a reload records the limits it applied for sepp.enqueue: on PostgreSQL only (store/postgres/server-limits.ts). */
export function limitsRecorder(
  store: Store,
): ((limits: Readonly<EngineLimits>) => Promise<void>) | undefined {
  return store instanceof PostgresStore ? (limits) => store.recordLimits(limits) : undefined;
}

/** What a failover to a standby of each replication mode keeps (docs/replication.md), for the log. */
const replicationMeaning = {
  synchronous: 'commits wait for a standby: a failover to it loses nothing acknowledged',
  asynchronous: 'commits do not wait for the standbys: a failover can lose what they had not received',
  none: 'no standby: the database is not replicated',
} as const;

async function openPostgres(
  config: SeppConfig,
  onMigrated: (applied: readonly { version: number; name: string; durationMs: number }[]) => void,
  { logger, clock, onShutOut }: StoreDeps,
): Promise<Store> {
  const { url, password, schema, poolSize, maxWaitingReads, maxWaitingReadsPerKey, statementTimeoutMs } =
    config.store;
  if (url === null) throw new StoreStartupError('store.kind = "postgres" needs store.url');
  const store = new PostgresStore({
    url,
    password: password === null ? null : password.reveal().toString('utf8'),
    schema,
    poolSize,
    maxWaitingReads,
    maxWaitingReadsPerKey,
    statementTimeoutMs,
    // sepp.enqueue follows them (store/postgres/server-limits.ts); a reload records its own.
    limits: config.engine.limits,
    onMigrated,
    onReadsRefused: readsRefusedLog(logger, clock, maxWaitingReads, poolSize),
    onStatisticsFailed: (error) =>
      logger.warn('store.statistics_failed', {
        detail: `the look at the growing tables' statistics failed: ${error instanceof Error ? error.message : String(error)}; until it works again, the plans rest on autovacuum's statistics (docs/postgres.md)`,
      }),
    // A rolling upgrade went ahead of this server: it refuses everything from now on, and lets
    // what waits on it go at once (app.ts), so that its clients move to a newer server.
    onSchemaMigrated: (why) => {
      logger.error('store.schema_newer', { detail: why });
      onShutOut?.(why);
    },
    // At the start, and again whenever the writer connects anew (after a failover).
    onConnected: ({ host, replication }) =>
      logger.info('store.connected', {
        host,
        replication: replication.mode,
        standbys: replication.standbys,
        synchronous_standby_names: replication.synchronousStandbyNames,
        synchronous_commit: replication.synchronousCommit,
        detail: replicationMeaning[replication.mode],
      }),
  });
  try {
    await store.start();
  } catch (error) {
    await store.close().catch(() => {});
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    const { problem, fix } = connectAdvice(cause, connectTarget(url, schema, statementTimeoutMs));
    throw new StoreStartupError(
      `cannot open the PostgreSQL store at ${redactUrl(url)} (schema ${schema}): ${problem}; ${fix}`,
    );
  }
  return store;
}

/**
 * The log of reads the store refused since every read connection was busy and its queue full
 * (store.max_waiting_reads): the first at once, then at most one line a minute, each with the
 * reads refused since the line before and in all, so a flood is one line a minute, not one a call.
 */
function readsRefusedLog(
  logger: Logger,
  clock: Pick<Clock, 'nowMs'>,
  maxWaitingReads: number,
  poolSize: number,
): (refusedTotal: number) => void {
  const lines = new RepeatThrottle(refusalsLoggedEveryMs);
  return (refusedTotal) => {
    const refused = lines.occurred(clock.nowMs());
    if (refused === 0) return;
    logger.warn('store.reads_refused', {
      refused,
      refused_total: refusedTotal,
      detail:
        `reads are refused (RESOURCE_EXHAUSTED, HTTP 429): all ${poolSize - 1} read connections are busy and ` +
        `${maxWaitingReads} reads wait for one (store.max_waiting_reads, store.pool_size; docs/postgres.md, "Sizing")`,
    });
  };
}

/** Where the store's first host is, for the advice on a failed start (no password: the URL holds none). */
function connectTarget(url: string, schema: string, statementTimeoutMs: number): ConnectTarget {
  const target = parsePostgresUrl(url);
  let first: URL | undefined;
  try {
    first = target instanceof Error ? undefined : new URL(target.hosts[0]?.url ?? '');
  } catch {
    // The config checked the URL; a host that URL cannot read is named by its advice as "?".
  }
  return {
    host: first === undefined ? '?' : `${first.hostname}:${first.port === '' ? '5432' : first.port}`,
    // libpq's and the driver's default user is the operating system's.
    user: decodeURIComponent(first?.username ?? '') || (process.env.PGUSER ?? process.env.USER ?? ''),
    database: decodeURIComponent(first?.pathname.slice(1) ?? ''),
    schema,
    statementTimeoutMs,
    connectTimeoutMs: defaultConnectTimeoutMs,
  };
}
