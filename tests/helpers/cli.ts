/**
 * Runs the `sepp` command and returns its stdout, stderr and exit code, with a
 * deadline as a guard against a hang (a run that hits it is reported as
 * `timedOut`, never waited for). Everything it prints is captured for the
 * run's secret check (secret-log.ts).
 *
 * A run is in-process by default: the command line runs as a function of its
 * inputs (src/cli/run.ts) with its own stdout, stderr, stdin, environment,
 * working directory and signals (src/cli/io.ts), which is what a test of what a
 * command prints and returns needs, at a fraction of a process's cost. It is a
 * child process from the run's bundle, as a user runs it, where the process is
 * the point:
 * - `sepp serve` (signals, the exit once stopped, the server's own logs);
 * - a given `entry` (a particular build: the single executable, a bundle);
 * - `process: true`, for what only a process shows: Node's own warnings on
 *   stderr, what the executable does at start-up with the machine's state
 *   (TMPDIR), signals, stdin or stdout closing, exit while streams are open,
 *   the environment a child inherits;
 * - every run when SEPP_TEST_CLI=process, so a developer can check that both
 *   ways give the same answers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { getChannelzHandlers } from '@grpc/grpc-js';
import type { CliIo } from '../../src/cli/io.ts';
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
  /** Run this build as a child process (implies `process: true`). */
  entry?: string[];
  /** A child process even where an in-process run would do (see the top of this file for when). */
  process?: boolean;
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

/** SEPP_TEST_CLI=process: every run a child process, as before the in-process runs. */
const everyRunAProcess = process.env.SEPP_TEST_CLI === 'process';

export function runCli(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  const asProcess =
    everyRunAProcess || options.process === true || options.entry !== undefined || args[0] === 'serve';
  return asProcess ? runProcess(args, options) : runInProcess(args, options);
}

/** What the command sees of the environment: the test's, without the variables that would pick a server, a key or a config. */
function environment(options: CliRunOptions): Record<string, string | undefined> {
  const { SEPP_API_KEY: _key, SEPP_SERVER: _server, SEPP_CONFIG: _config, ...inherited } = process.env;
  return { ...inherited, ...options.env };
}

function finished(run: CliRun, options: CliRunOptions): CliRun {
  if (options.capture !== false) captureOutput('cli')(`${run.stderr}\n${run.stdout}\n`);
  return run;
}

function runProcess(args: readonly string[], options: CliRunOptions): Promise<CliRun> {
  startsProcess('`sepp`');
  const child = spawn(process.execPath, [...(options.entry ?? cliEntry()), ...args], {
    cwd: options.cwd ?? repoRoot,
    env: environment(options),
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
      resolve(finished({ code, stdout, stderr, timedOut }, options));
    });
  });
}

/** A stream that keeps what is written to it, as a pipe to the test would. */
class Collected extends Writable {
  text = '';
  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    done: (error?: Error | null) => void,
  ): void {
    this.text += chunk.toString();
    done();
  }
}

/** The ids of the gRPC channels open in this process (grpc-js' channelz registry). */
function openChannels(): Promise<Set<string>> {
  return new Promise((resolve, reject) => {
    const call = { request: { start_channel_id: '0', max_results: '100000' } };
    const handlers = getChannelzHandlers() as unknown as {
      GetTopChannels(
        call: unknown,
        done: (error: Error | null, reply?: { channel: { ref: { channel_id: string } }[] }) => void,
      ): void;
    };
    handlers.GetTopChannels(call, (error, reply) => {
      if (error !== null || reply === undefined) reject(error ?? new Error('no channelz reply'));
      else resolve(new Set(reply.channel.map((c) => String(c.ref.channel_id))));
    });
  });
}

/** The process-wide listeners a command could leave behind. */
const watchedEvents = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'warning',
  'uncaughtException',
  'unhandledRejection',
  'exit',
];
const listenerCounts = () => watchedEvents.map((event) => process.listenerCount(event)).join(',');

/**
 * The in-process runs under way. What one run leaves behind is told apart from
 * what another still holds only when it ran alone (a test may start two at once).
 */
const running = new Set<{ overlapped: boolean }>();

async function runInProcess(args: readonly string[], options: CliRunOptions): Promise<CliRun> {
  // Loaded on first use: a file whose runs are all processes does not compile the CLI.
  const { runCli: run } = await import('../../src/cli/run.ts');
  const stdout = new Collected();
  const stderr = new Collected();
  const signals = new EventEmitter();
  let exited!: (code: number) => void;
  const exit = new Promise<number>((resolve) => {
    exited = resolve;
  });
  const io: CliIo = {
    stdout,
    stderr,
    stdin: Readable.from(options.input === undefined ? [] : [Buffer.from(options.input)]),
    env: environment(options),
    cwd: options.cwd ?? repoRoot,
    signals,
    exitCode: 0,
    exit: (code) => exited(code),
  };
  const self = { overlapped: running.size > 0 };
  for (const other of running) other.overlapped = true;
  running.add(self);
  const listenersBefore = listenerCounts();
  const channelsBefore = await openChannels();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), options.timeoutMs ?? 60_000);
  });
  const code = await Promise.race([run(args, io), exit, deadline]).finally(() => {
    running.delete(self);
    clearTimeout(timer);
  });
  const result = finished(
    { code, stdout: stdout.text, stderr: stderr.text, timedOut: code === null },
    options,
  );
  if (code === null) return result;
  // Nothing of one run may outlive it: a listener, a signal handler, a gRPC channel.
  const where = `sepp ${args.join(' ')}`;
  assert.deepEqual(
    watchedEvents.filter((event) => signals.listenerCount(event) > 0),
    [],
    `${where}: left signal handlers`,
  );
  if (self.overlapped) return result;
  assert.equal(listenerCounts(), listenersBefore, `${where}: left process listeners behind`);
  const leaked = [...(await openChannels())].filter((id) => !channelsBefore.has(id));
  assert.deepEqual(leaked, [], `${where}: left gRPC channels open`);
  return result;
}

/** `sepp ARGS...` with no config file from the environment (what runCli does, with extra variables). */
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

/** An io for building the parser in a test (dry runs): empty stdin, output kept, the test's environment. */
export function testIo(): CliIo {
  return {
    stdout: new Collected(),
    stderr: new Collected(),
    stdin: Readable.from([]),
    env: { ...process.env },
    cwd: repoRoot,
    signals: new EventEmitter(),
    exitCode: 0,
    exit: () => {},
  };
}
