/** `sepp config example`, `sepp config check FILE|--against-running` and `sepp config reload`. */
import type { Argv } from 'yargs';
import {
  type ConfigProblem,
  checkConfigFile,
  exampleConfig,
  filePermissionWarnings,
  formatProblem,
  sqliteLeftBehindWarnings,
} from '../config/index.ts';
import { print, withConnection } from './commands/connection.ts';
import { runReload } from './commands/reload.ts';
import { exitCodes, printFailure } from './failure.ts';
import { type CliIo, pathIn } from './io.ts';

/**
 * Prints configuration problems, each as one `sepp:` line. The file is named
 * only for what is written in it: a bad flag or variable names itself
 * (`server.durability (from --durability): …`). A TOML syntax error keeps its
 * line and column but not the excerpt of the file that follows them.
 */
export function printConfigProblems(
  io: CliIo,
  problems: readonly ConfigProblem[],
  file: string | null,
): void {
  for (const problem of problems) {
    const fromFile =
      problem.source === undefined &&
      file !== null &&
      !problem.key.startsWith(file) &&
      !problem.message.includes(file);
    const [first = ''] = formatProblem(problem).split('\n');
    printFailure(io, `${fromFile ? `${file}: ` : ''}${first}`);
  }
}

export function registerConfigCommands(parser: Argv, io: CliIo): void {
  parser.command('config', 'Print an example config, check a config file, or reload the running one', (y) =>
    y
      .command('example', 'Print a complete, commented sepp.toml', {}, () => {
        io.stdout.write(exampleConfig);
      })
      .command(
        'check [file]',
        'Validate a config file; lists every problem with the setting that causes it (exit 2 when any)',
        (c) =>
          withConnection(io, c.positional('file', { type: 'string', describe: 'The config file to check' }))
            .option('against-running', {
              type: 'boolean',
              describe:
                'Ask the running server (--server, admin key) to check its own config file as a reload would: problems, what would change at once, what needs a restart. Changes nothing',
            })
            .option('allow-security-downgrade', {
              type: 'boolean',
              describe: 'With --against-running: check as `config reload --allow-security-downgrade` would',
            })
            .example('$0 config check /etc/sepp/sepp.toml', '')
            .example('$0 config check --against-running', ''),
        async (args) => {
          if (args['against-running'] === true) {
            if (args.file !== undefined) {
              printFailure(io, '--against-running checks the file the server reads; give no FILE with it');
              io.exitCode = exitCodes.invalidInput;
              return;
            }
            await runReload(io, args, true);
            return;
          }
          if (args.file === undefined) {
            printFailure(io, 'name the config file to check, or give --against-running');
            io.exitCode = exitCodes.invalidInput;
            return;
          }
          const result = checkConfigFile(args.file, { cwd: io.cwd });
          if (result.ok) {
            print(io, `${args.file}: OK`);
            // Allowed, but someone should look: files others can read, a SQLite store a PostgreSQL
            // config leaves behind. One line each, as errors are.
            for (const warning of [
              ...filePermissionWarnings(result.config),
              ...sqliteLeftBehindWarnings(result.config),
            ]) {
              io.stderr.write(`sepp: warning: ${warning.key}: ${warning.message}\n`);
            }
            return;
          }
          // The same lines and exit code as `sepp serve` gives for the same file.
          printConfigProblems(io, result.problems, pathIn(io, args.file));
          io.exitCode = exitCodes.invalidInput;
        },
      )
      .command(
        'reload',
        'Make the running server read its config file again, as SIGHUP does (admin key)',
        (c) =>
          withConnection(io, c).option('allow-security-downgrade', {
            type: 'boolean',
            describe:
              'Apply a file that lowers security (removes every API key or admin user, TLS or the /metrics token, ' +
              "raises a key's or user's role or widens a key's queues); " +
              'never where the start-up rule would refuse it for the address the server listens on',
          }),
        (args) => runReload(io, args, false),
      )
      .demandCommand(1, 'name a config subcommand: example, check or reload'),
  );
}
