/**
 * `sepp serve` (also plain `sepp`): run the server until SIGTERM or SIGINT;
 * SIGHUP reads the config file again (app-reload.ts).
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { type AssetSource, diskAssetSource } from '../admin/index.ts';
import { StartupError, startServer } from '../app.ts';
import { buildInfo } from '../build-info.ts';
import { ConfigError, type ConfigFlags, loadConfig } from '../config/index.ts';
import { nativeBindingPath } from '../store/native-binding.ts';
import { readSeaAsset, runningAsSea } from '../store/sea-assets.ts';
import { createLogger } from '../telemetry/logger.ts';

export function registerServeCommand(parser: Argv): void {
  parser.command(
    ['serve', '$0'],
    'Run the server (gRPC and admin UI) until SIGTERM or SIGINT',
    (y) =>
      y
        .option('config', {
          type: 'string',
          describe: 'Config file (default: ./sepp.toml if present; env SEPP_CONFIG)',
        })
        .option('data-dir', {
          type: 'string',
          describe: 'Data directory (default ./sepp-data; env SEPP_DATA_DIR)',
        })
        .option('grpc-listen', {
          type: 'string',
          describe: 'gRPC address (default 127.0.0.1:50051; env SEPP_GRPC_LISTEN)',
        })
        .option('admin-listen', {
          type: 'string',
          describe: 'Admin UI address (default 127.0.0.1:9465; env SEPP_ADMIN_LISTEN)',
        })
        .option('durability', { type: 'string', describe: 'full (fsync every commit, default) or relaxed' })
        .option('log-level', { type: 'string', describe: 'debug, info (default), warn or error' })
        .option('log-format', { type: 'string', describe: 'text (default) or json' }),
    async (args) => {
      process.exitCode = await serve({
        config: args.config,
        dataDir: args['data-dir'],
        grpcListen: args['grpc-listen'],
        adminListen: args['admin-listen'],
        durability: args.durability,
        logLevel: args['log-level'],
        logFormat: args['log-format'],
      });
    },
  );
}

/** A second SIGTERM or SIGINT forces the exit, unless it is the same signal within this long of the first. */
const duplicateSignalWindowMs = 500;

async function serve(flags: ConfigFlags): Promise<number> {
  // A reload reads the same file with the same flags and environment as the start.
  const env = { ...process.env };
  const load = () => loadConfig({ flags, env });
  let config: ReturnType<typeof loadConfig>;
  try {
    config = load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`sepp: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = createLogger({ level: config.server.logLevel, format: config.server.logFormat });
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => {
    resolveExit = resolve;
  });
  const shutdown = (running: NonNullable<typeof server>) => {
    running.shutdown().then(
      () => resolveExit(0),
      (error: unknown) => {
        logger.error('server.shutdown_failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        resolveExit(1);
      },
    );
  };
  // Listening from before the server starts: it announces itself (server.started) before
  // startServer returns, and a signal sent on seeing that must stop it, not kill it. A
  // signal during start-up stops the server as soon as it has started.
  let first: { signal: NodeJS.Signals; atMs: number } | undefined;
  const stop = (signal: NodeJS.Signals) => {
    if (first !== undefined) {
      // Under `npm start`, Ctrl-C reaches the server twice: from the terminal, and
      // forwarded by npm. The same signal again within a moment is that copy.
      if (signal === first.signal && performance.now() - first.atMs < duplicateSignalWindowMs) return;
      logger.warn('server.forced_exit', { signal });
      process.exit(1);
    }
    first = { signal, atMs: performance.now() };
    logger.info('server.signal', { signal });
    // The process exits within the configured shutdown time even if something hangs.
    const timeoutMs = server?.config().server.shutdownTimeoutMs ?? config.server.shutdownTimeoutMs;
    const hardStop = setTimeout(() => {
      logger.error('server.shutdown_timeout', { timeout_ms: timeoutMs });
      process.exit(1);
    }, timeoutMs);
    hardStop.unref();
    if (server !== undefined) shutdown(server);
  };
  // SIGHUP's default would end the process: it is ours from before the start.
  const hangUp = () => {
    if (server === undefined || first !== undefined) {
      logger.warn('config.reload_skipped', {
        detail: 'SIGHUP while starting or stopping; send it again once running',
      });
      return;
    }
    server.reload({ actor: 'signal:SIGHUP' }).catch((error: unknown) => {
      logger.error('config.reload_failed', { error: error instanceof Error ? error.message : String(error) });
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', hangUp);
  try {
    const nativeBinding = nativeBindingPath();
    server = await startServer(config, {
      logger,
      build: buildInfo,
      uiAssets: uiAssets(),
      loadConfig: load,
      setLogLevel: (level) => logger.setLevel(level),
      ...(nativeBinding === undefined ? {} : { nativeBinding }),
    });
  } catch (error) {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    process.off('SIGHUP', hangUp);
    if (error instanceof StartupError) {
      logger.error('server.start_failed', { error: error.message });
      return 1;
    }
    throw error;
  }
  if (first !== undefined) shutdown(server);
  return exited;
}

/**
 * Where the admin UI's files are: inside the single executable, its embedded
 * assets; run from source or from dist/sepp.cjs, the ui/dist folder beside it.
 */
function uiAssets(): AssetSource | null {
  if (runningAsSea()) {
    return {
      get: (path) => {
        const body = readSeaAsset(`ui/${path}`);
        return body === undefined ? undefined : { body };
      },
    };
  }
  // The real path: `npx sepp` runs bin/sepp.mjs through a link in npm's cache.
  const here = dirname(realpathSync(resolve(process.argv[1] ?? '.')));
  const dir = [resolve(here, '../../ui/dist'), resolve(here, '../ui/dist')].find((d) =>
    existsSync(join(d, 'index.html')),
  );
  return dir === undefined ? null : diskAssetSource(dir);
}
