/**
 * Runs the server for `sepp serve` until SIGTERM or SIGINT; SIGHUP reloads the
 * config file (app-reload.ts). Loaded by serve.ts
 * only when the server is to run (see there why).
 */
import { existsSync, lstatSync, realpathSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type AssetSource, diskAssetSource } from '../admin/index.ts';
import { StartupError, startServer } from '../app.ts';
import { buildInfo } from '../build-info.ts';
import type { SeppConfig } from '../config/index.ts';
import { nativeBindingPath } from '../platform/native-binding.ts';
import { PrivateDirError } from '../platform/private-dir.ts';
import { readSeaAsset, runningAsSea } from '../platform/sea-assets.ts';
import { createLogger } from '../telemetry/logger.ts';
import { exitCodes, messageOf, printFailure } from './failure.ts';
import { limitHeapGrowth } from './heap-growth.ts';
import type { CliIo } from './io.ts';
import { notifySystemd } from './systemd-notify.ts';

/** A second SIGTERM or SIGINT forces the exit, unless it is the same signal within this long of the first. */
const duplicateSignalWindowMs = 500;

export async function runServer(
  io: CliIo,
  config: SeppConfig,
  loadConfig: () => SeppConfig,
): Promise<number> {
  const logger = createLogger({ level: config.server.logLevel, format: config.server.logFormat });
  // Long-polls leave their objects as old-space garbage: a full collection comes sooner (heap-growth.ts).
  limitHeapGrowth();
  let nativeBinding: string | undefined;
  try {
    nativeBinding = nativeBindingPath();
  } catch (error) {
    // The single executable could not unpack or load its SQLite addon (TMPDIR missing, noexec).
    printFailure(io, `cannot start: ${messageOf(error)}`, error);
    return exitCodes.failed;
  }
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => {
    resolveExit = resolve;
  });
  const shutdown = (running: NonNullable<typeof server>) => {
    running.shutdown().then(
      () => stopped(exitCodes.ok),
      (error: unknown) => {
        logger.error('server.shutdown_failed', { error: messageOf(error) });
        stopped(exitCodes.failed);
      },
    );
  };
  /**
   * Once the server has stopped, the process ends. Everything the server owns is closed
   * by then; what can still hold the event loop is the OpenTelemetry exporters' retries
   * of an export the collector refused or never answered: the library keeps at them for
   * up to its export timeout (10 s), past the bound telemetry.shutdown() gives the last
   * export (app.ts). Waiting for them made a clean stop end in the hard stop below when
   * shutdown_timeout_ms was shorter (exit 1, server.shutdown_timeout), and kept the
   * process for 10 s otherwise. (Log lines are written synchronously to files and pipes.)
   */
  const stopped = (code: number) => {
    resolveExit(code);
    setImmediate(() => io.exit(code));
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
      io.exit(exitCodes.failed);
    }
    first = { signal, atMs: performance.now() };
    logger.info('server.signal', { signal });
    notifySystemd(['STOPPING=1'], logger, io.env);
    // The process exits within the configured shutdown time even if something hangs.
    const timeoutMs = server?.config().server.shutdownTimeoutMs ?? config.server.shutdownTimeoutMs;
    const hardStop = setTimeout(() => {
      logger.error('server.shutdown_timeout', { timeout_ms: timeoutMs });
      io.exit(exitCodes.failed);
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
      logger.error('config.reload_failed', { error: messageOf(error) });
    });
  };
  io.signals.on('SIGTERM', stop);
  io.signals.on('SIGINT', stop);
  io.signals.on('SIGHUP', hangUp);
  // A start that fails (a port in use, say) leaves no data directory it made behind.
  const madeByThisStart = firstMissing(resolve(config.server.dataDir));
  try {
    server = await startServer(config, {
      logger,
      build: buildInfo,
      uiAssets: uiAssets(),
      loadConfig,
      setLogLevel: (level) => logger.setLevel(level),
      ...(nativeBinding === undefined ? {} : { nativeBinding }),
    });
  } catch (error) {
    io.signals.off('SIGTERM', stop);
    io.signals.off('SIGINT', stop);
    io.signals.off('SIGHUP', hangUp);
    if (madeByThisStart !== undefined) rmSync(madeByThisStart, { recursive: true, force: true });
    if (error instanceof StartupError || error instanceof PrivateDirError) {
      printFailure(io, `cannot start: ${error.message}`);
      return exitCodes.failed;
    }
    throw error;
  }
  if (first !== undefined) shutdown(server);
  else {
    notifySystemd(
      ['READY=1', `STATUS=serving gRPC on ${config.server.grpcListen.host}:${server.grpcPort}`],
      logger,
      io.env,
    );
  }
  return exited;
}

/**
 * The outermost of `path` and its parents that does not exist yet (what a start
 * would create), or undefined when `path` exists. A dangling symbolic link exists.
 */
function firstMissing(path: string): string | undefined {
  let missing: string | undefined;
  for (let p = path; ; p = dirname(p)) {
    try {
      lstatSync(p);
      return missing;
    } catch (error) {
      // Only what is known not to be there: anything else (no permission to look) is left alone.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
      missing = p;
    }
    if (dirname(p) === p) return missing;
  }
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
