/** Runs the `sepp` command from source, as a process, the way an operator would. */
import { execFile } from 'node:child_process';
import { captureOutput } from './secret-log.ts';

const root = new URL('../..', import.meta.url).pathname;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `sepp ARGS...` with no config file from the environment; what it prints is checked for secrets too. */
export function runSepp(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: root, env: { ...process.env, SEPP_CONFIG: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        captureOutput('cli')(`${stderr}\n${stdout}\n`);
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1,
          stdout,
          stderr,
        });
      },
    );
  });
}
