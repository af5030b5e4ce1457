/** `sepp config example` and `sepp config check FILE`. */
import type { Argv } from 'yargs';
import { checkConfigFile, exampleConfig, filePermissionWarnings, formatProblem } from '../config/index.ts';

export function registerConfigCommands(parser: Argv): void {
  parser.command('config', 'Print an example config or check a config file', (y) =>
    y
      .command('example', 'Print a complete, commented sepp.toml', {}, () => {
        process.stdout.write(exampleConfig);
      })
      .command(
        'check <file>',
        'Validate a config file; lists every problem with the setting that causes it',
        (c) => c.positional('file', { type: 'string', demandOption: true }),
        (args) => {
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
      .demandCommand(1, 'name a config subcommand: example or check'),
  );
}
