/**
 * Runs the `sepp` command as a user does: a child process, its stdout, stderr
 * and exit code, with a deadline as a guard against a hang (a run that hits it
 * is reported as `timedOut`, never waited for). Everything it prints is
 * captured for the run's secret check (secret-log.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { captureOutput } from './secret-log.ts';
import { runBundle, startsProcess } from './test-run.ts';

export const repoRoot = new URL('../..', import.meta.url).pathname;

/**
 * `node <entry…>`: the given bundle, else the run's bundle (test-run.ts), else the
 * sources under tsx (a file run on its own).
 */
export function cliEntry(bundle: string | undefined = runBundle): string[] {
  return bundle === undefined ? ['--import', 'tsx', 'src/cli/main.ts'] : [bundle];
}

export interface CliRun {
  /** Exit code; null when killed (by the deadline). */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface CliRunOptions {
  entry?: string[];
  /** Added to a copy of the environment without SEPP_SERVER, SEPP_API_KEY and SEPP_CONFIG. */
  env?: Record<string, string>;
  cwd?: string;
  /** Written to stdin, which is then closed; without it stdin is empty (/dev/null). */
  input?: string;
  /** Hang guard; generous, since the machine may be busy. Default 60 s. */
  timeoutMs?: number;
  /**
   * Captured for the secret check (default). Off only for commands whose job
   * is to print a credential (`sepp admin …`): their stdout is the secret.
   */
  capture?: boolean;
}

export function runCli(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  startsProcess('`sepp`');
  const { SEPP_API_KEY: _key, SEPP_SERVER: _server, SEPP_CONFIG: _config, ...inherited } = process.env;
  const child = spawn(process.execPath, [...(options.entry ?? cliEntry()), ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...inherited, ...options.env },
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? 60_000);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      if (options.capture !== false) captureOutput('cli')(`${stderr}\n${stdout}\n`);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

/** `sepp ARGS...` from source with no config file from the environment (what runCli does, with extra variables). */
export function runSepp(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, { env: { SEPP_CONFIG: '', ...env } });
}

/** An operator command (`sepp enqueue`, `sepp cancel`, …): only `env` says which server and key it uses. */
export function sepp(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runSepp(args, env);
}

/** The run's stdout as JSON, after checking it succeeded. */
export function cliJson<T = unknown>(run: CliRun): T {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as T;
}
