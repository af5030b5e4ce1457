/**
 * One run of the `sepp` command: its arguments and a CliIo in, its exit code
 * out. main.ts runs it with the real process's; tests run it in-process with
 * their own (tests/helpers/cli.ts).
 */
import { reportFailure } from './failure.ts';
import type { CliIo } from './io.ts';
import { buildCli, joinDashValues } from './parser.ts';

export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  // With a callback, yargs hands over what it prints (help, the version) instead of
  // writing to the console and exiting the process.
  let printed = '';
  try {
    await buildCli(args, io).parseAsync(
      joinDashValues(args),
      (_error: unknown, _argv: unknown, output: string) => {
        printed = output;
      },
    );
  } catch (error) {
    io.exitCode = reportFailure(io, error);
  }
  if (printed !== '') io.stdout.write(`${printed}\n`);
  return io.exitCode;
}
