/** `sepp config example`, `sepp config check FILE|--against-running` and `sepp config reload`. */
import type { Argv } from 'yargs';
import { checkConfigFile, exampleConfig, filePermissionWarnings, formatProblem } from '../config/index.ts';
import { withConnection } from './commands/connection.ts';
import { runReload } from './commands/reload.ts';

export function registerConfigCommands(parser: Argv): void {
  parser.command('config', 'Print an example config, check a config file, or reload the running one', (y) =>
    y
      .command('example', 'Print a complete, commented sepp.toml', {}, () => {
        process.stdout.write(exampleConfig);
      })
      .command(
        'check [file]',
        'Validate a config file; lists every problem with the setting that causes it',
        (c) =>
          withConnection(c.positional('file', { type: 'string', describe: 'The config file to check' }))
            .option('against-running', {
              type: 'boolean',
              describe:
                'Ask the running server (--server, admin key) to check its own config file as a reload would: problems, what would change at once, what needs a restart. Changes nothing',
            })
            .example('$0 config check /etc/sepp/sepp.toml', '')
            .example('$0 config check --against-running', ''),
        async (args) => {
          if (args['against-running'] === true) {
            if (args.file !== undefined) {
              process.stderr.write(
                'sepp: --against-running checks the file the server reads; give no FILE with it\n',
              );
              process.exitCode = 2;
              return;
            }
            await runReload(args, true);
            return;
          }
          if (args.file === undefined) {
            process.stderr.write('sepp: name the config file to check, or give --against-running\n');
            process.exitCode = 2;
            return;
          }
          const result = checkConfigFile(args.file);
          if (result.ok) {
            console.log(`${args.file}: OK`);
            // Allowed, but someone should look: files others can read.
            const warnings = filePermissionWarnings(result.config);
            if (warnings.length > 0) process.stderr.write(`${args.file}: ${warnings.length} warning(s)\n`);
            for (const warning of warnings) process.stderr.write(`  ${warning.key}: ${warning.message}\n`);
            return;
          }
          process.stderr.write(`${args.file}: ${result.problems.length} problem(s)\n`);
          for (const problem of result.problems) process.stderr.write(`  ${formatProblem(problem)}\n`);
          process.exitCode = 1;
        },
      )
      .command(
        'reload',
        'Make the running server read its config file again, as SIGHUP does (admin key)',
        (c) => withConnection(c),
        (args) => runReload(args, false),
      )
      .demandCommand(1, 'name a config subcommand: example, check or reload'),
  );
}
