/** Runs the `sepp` command from source, as a process, the way an operator would. */
import assert from 'node:assert/strict';
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

/** An operator command (`sepp enqueue`, `sepp cancel`, …): only `env` says which server and key it uses. */
export function sepp(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runSepp(args, { SEPP_API_KEY: '', SEPP_SERVER: '', ...env });
}

/** The run's stdout as JSON, after checking it succeeded. */
export function cliJson<T = unknown>(run: CliRun): T {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as T;
}
