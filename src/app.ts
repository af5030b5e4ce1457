/**
 * The composition root: opens the store, builds the engine, puts it on the
 * network (gRPC now; the admin app and telemetry plug in here), and owns the
 * shutdown order.
 *
 * Shutdown order: stop accepting calls and end streams → answer waiting
 * long-polls with no jobs → let calls in flight finish (bounded) → write what
 * is queued, checkpoint the WAL, close the database.
 */
import { readFileSync } from 'node:fs';
import { configWarnings, type SeppConfig } from './config/index.ts';
import { type Clock, systemClock } from './engine/clock.ts';
import { Engine } from './engine/engine.ts';
import { type ApiKey, createRpcServer, type RpcServer, removeStaleBackups } from './rpc/index.ts';
import { DataDirInUseError, openDataDir } from './store/open.ts';
import type { Logger } from './telemetry/logger.ts';

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
}

export interface RunningServer {
  engine: Engine;
  /** The bound gRPC port (useful with port 0). */
  grpcPort: number;
  /** Graceful shutdown; resolves when the database is closed. */
  shutdown(): Promise<void>;
}

export class StartupError extends Error {
  override name = 'StartupError';
}

export async function startServer(config: SeppConfig, deps: AppDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const startedAtMs = clock.nowMs();
  let db: ReturnType<typeof openDataDir>;
  try {
    db = openDataDir(config.server.dataDir, {
      durability: config.server.durability,
      ...(deps.nativeBinding === undefined ? {} : { nativeBinding: deps.nativeBinding }),
    });
  } catch (error) {
    if (error instanceof DataDirInUseError) throw new StartupError(`${error.message} (server.data_dir)`);
    throw error;
  }
  removeStaleBackups(config.server.dataDir);
  const engine = new Engine(db, config.engine, {
    clock,
    onMaintenanceError: (error) => logger.warn('maintenance.failed', { error: error.message }),
  });

  const apiKeys: ApiKey[] = config.grpc.apiKeys.map((k) => ({
    name: k.name,
    role: k.role,
    sha256: Buffer.from(k.keySha256, 'hex'),
  }));
  const tls = config.grpc.tls;
  const rpc: RpcServer = createRpcServer({
    engine,
    dataDir: config.server.dataDir,
    apiKeys,
    facts: {
      version: deps.build.version,
      gitCommit: deps.build.commit,
      durability: config.server.durability,
      startedAtMs,
      maxMessageBytes: config.grpc.maxMessageBytes,
      nowMs: () => clock.nowMs(),
    },
    ...(tls === null
      ? {}
      : { tls: { certPem: readFileSync(tls.certFile), keyPem: readFileSync(tls.keyFile) } }),
  });

  let grpcPort: number;
  try {
    grpcPort = await rpc.listen(config.server.grpcListen.address);
  } catch (error) {
    engine.close();
    const detail = error instanceof Error ? error.message : String(error);
    throw new StartupError(
      `cannot listen for gRPC on ${config.server.grpcListen.address}: ${detail} (server.grpc_listen)`,
    );
  }
  for (const warning of configWarnings(config))
    logger.warn('config.risky', { setting: warning.key, detail: warning.message });
  logger.info('server.started', {
    version: deps.build.version,
    commit: deps.build.commit,
    grpc: `${config.server.grpcListen.host}:${grpcPort}`,
    data_dir: config.server.dataDir,
    durability: config.server.durability,
    auth: apiKeys.length > 0 ? 'api_keys' : 'none',
    tls: tls !== null,
  });

  let stopping: Promise<void> | undefined;
  return {
    engine,
    grpcPort,
    shutdown() {
      stopping ??= (async () => {
        logger.info('server.stopping');
        const budgetMs = Math.max(1000, config.server.shutdownTimeoutMs - 2000);
        await rpc.shutdown(budgetMs);
        engine.close();
        logger.info('server.stopped');
      })();
      return stopping;
    },
  };
}
