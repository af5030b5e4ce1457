/**
 * `sepp serve`: run the server until SIGTERM or SIGINT;
 * SIGHUP reads the config file again (app-reload.ts).
 *
 * The server itself (app.ts and everything under it) is loaded only when this
 * command runs: some of its dependencies touch the disk as they load (the
 * single executable unpacks files into $TMPDIR), and `sepp --version` or an
 * operator command must work whatever state TMPDIR is in.
 */
import type { Argv } from 'yargs';
import { ConfigError, type ConfigFlags, loadConfig, type SeppConfig } from '../config/index.ts';
import { privateRunDir } from '../platform/private-dir.ts';
import { runningAsSea } from '../platform/sea-assets.ts';
import { printConfigProblems } from './config-commands.ts';
import { exitCodes, messageOf, printFailure } from './failure.ts';
import type { CliIo } from './io.ts';

export function registerServeCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'serve',
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
        .option('http-listen', {
          type: 'string',
          describe: 'HTTP/JSON API address (default: off; env SEPP_HTTP_LISTEN)',
        })
        .option('durability', { type: 'string', describe: 'full (fsync every commit, default) or relaxed' })
        .option('log-level', { type: 'string', describe: 'debug, info (default), warn or error' })
        .option('log-format', { type: 'string', describe: 'text (default) or json' })
        .epilogue(
          'Exit codes: 0 stopped on SIGTERM or SIGINT; 1 could not start (data directory, ports, TMPDIR) or ' +
            'did not stop cleanly; 2 invalid configuration or flags.',
        ),
    async (args) => {
      io.exitCode = await serve(io, {
        config: args.config,
        dataDir: args['data-dir'],
        grpcListen: args['grpc-listen'],
        adminListen: args['admin-listen'],
        httpListen: args['http-listen'],
        durability: args.durability,
        logLevel: args['log-level'],
        logFormat: args['log-format'],
      });
    },
  );
}

async function serve(io: CliIo, flags: ConfigFlags): Promise<number> {
  // A reload reads the same file with the same flags and environment as the start.
  const env = { ...io.env };
  const load = (): SeppConfig => loadConfig({ flags, env, cwd: io.cwd });
  let config: SeppConfig;
  try {
    config = load();
  } catch (error) {
    if (error instanceof ConfigError) {
      printConfigProblems(io, error.problems, error.configFile);
      return exitCodes.invalidInput;
    }
    throw error;
  }
  let runServer: typeof import('./run-server.ts').runServer;
  try {
    // The single executable unpacks files the server loads into a private directory
    // in TMPDIR: make it first, so a bad TMPDIR is named rather than a missing file.
    if (runningAsSea()) privateRunDir();
    ({ runServer } = await import('./run-server.ts'));
  } catch (error) {
    // Loading the server can fail only on the machine's state (TMPDIR), never on input.
    printFailure(io, `cannot start: ${messageOf(error)}`, error);
    return exitCodes.failed;
  }
  return runServer(io, config, load);
}
