/**
 * Commands run as a user runs them, outside the test runner's own environment: npm, node,
 * the sepp executable. For the tests of the docs' commands (quickstart, checkout).
 */
import { execFile } from 'node:child_process';

/**
 * The environment for npm and node run as a user would: without the npm_* variables of
 * the `npm test` this may run under (npm_config_local_prefix would point npm at the
 * repository), offline, with `extra` on top.
 */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD' && key !== 'NODE_OPTIONS') env[key] = value;
  }
  return {
    ...env,
    npm_config_offline: 'true',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...extra,
  };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` in `cwd` with `env`; resolves with its exit code and output (never rejects on the code). */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 180_000,
): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}
