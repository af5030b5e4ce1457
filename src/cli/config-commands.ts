/** `sepp config example` and `sepp config check FILE`. */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import {
  type ConfigProblem,
  checkConfigFile,
  exampleConfig,
  filePermissionWarnings,
  formatProblem,
} from '../config/index.ts';
import { exitCodes, printFailure } from './failure.ts';

/**
 * Prints configuration problems, each as one `sepp:` line. The file is named
 * only for what is written in it: a bad flag or variable names itself
 * (`server.durability (from --durability): …`). A TOML syntax error keeps its
 * line and column but not the excerpt of the file that follows them.
 */
export function printConfigProblems(problems: readonly ConfigProblem[], file: string | null): void {
  for (const problem of problems) {
    const fromFile =
      problem.source === undefined &&
      file !== null &&
      !problem.key.startsWith(file) &&
      !problem.message.includes(file);
    const [first = ''] = formatProblem(problem).split('\n');
    printFailure(`${fromFile ? `${file}: ` : ''}${first}`);
  }
}

export function registerConfigCommands(parser: Argv): void {
  parser.command('config', 'Print an example config or check a config file', (y) =>
    y
      .command('example', 'Print a complete, commented sepp.toml', {}, () => {
        process.stdout.write(exampleConfig);
      })
      .command(
        'check <file>',
        'Validate a config file; lists every problem with the setting that causes it (exit 2 when any)',
        (c) => c.positional('file', { type: 'string', demandOption: true }),
        (args) => {
          const result = checkConfigFile(args.file);
          if (result.ok) {
            console.log(`${args.file}: OK`);
            // Allowed, but someone should look: files others can read. One line each, as errors are.
            for (const warning of filePermissionWarnings(result.config)) {
              process.stderr.write(`sepp: warning: ${warning.key}: ${warning.message}\n`);
            }
            return;
          }
          // The same lines and exit code as `sepp serve` gives for the same file.
          printConfigProblems(result.problems, resolve(args.file));
          process.exitCode = exitCodes.invalidInput;
        },
      )
      .demandCommand(1, 'name a config subcommand: example or check'),
  );
}
