import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerProcess, SpawnSpec } from '../systems/types.ts';

/**
 * Every process the harness starts (servers, strace) is recorded here by PID so that it
 * can be stopped on any way out: normal end, error, Ctrl-C. Nothing is ever stopped by
 * name, only the PIDs we started.
 */
const live = new Map<number, ChildProcess>();

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  const gone = exited(child);
  if (child.pid === undefined) return;
  try {
    process.kill(child.pid, 'SIGTERM');
  } catch {
    // Already gone.
  }
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      resolve();
    }, graceMs);
  });
  await Promise.race([gone, killed]);
  clearTimeout(timer);
  await gone;
  live.delete(child.pid);
}

/** What a server under benchmark inherits: enough to run, nothing that could change its settings. */
const inheritedVariables = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ'];

/**
 * The environment of a server the harness starts: the few variables above
 * and the spec's own. Not the harness's environment: a SEPP_DURABILITY,
 * GRPC_TRACE, NODE_OPTIONS or REDIS_* variable in the shell that runs the
 * benchmark would otherwise change what is measured without a trace in the results.
 */
export function serverEnvironment(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of inheritedVariables) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Starts `spec` with its output in `logDir/<name>.log` and records its PID. */
export async function spawnTracked(spec: SpawnSpec, logDir: string): Promise<ServerProcess> {
  const logFile = join(logDir, `${spec.name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(spec.command, [...spec.args], {
    cwd: spec.cwd,
    env: serverEnvironment(spec.env),
    stdio: ['ignore', fd, fd],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (err) => reject(new Error(`cannot start ${spec.command}: ${err.message}`)));
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${spec.command} started without a PID`);
  live.set(pid, child);
  return { pid, logFile, stop: (graceMs = 5000) => stopChild(child, graceMs) };
}

/** Starts a helper (strace) whose stderr the caller reads; also tracked by PID. */
export function spawnHelper(command: string, args: readonly string[]): ChildProcess {
  const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid !== undefined) {
    const pid = child.pid;
    live.set(pid, child);
    child.once('exit', () => live.delete(pid));
  }
  return child;
}

/** Stops every process still tracked, in parallel; used on the way out. */
export async function stopAll(graceMs = 3000): Promise<void> {
  await Promise.all([...live.values()].map((c) => stopChild(c, graceMs)));
}

/** Last resort on `exit`: synchronous SIGKILL to every tracked PID. */
function killAllNow(): void {
  for (const pid of live.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * Installs handlers so Ctrl-C, SIGTERM and crashes stop what we started before exiting.
 * `onAbort` runs first (e.g. to remove temp dirs).
 */
export function installCleanupHandlers(onAbort: () => Promise<void>): void {
  process.once('exit', killAllNow);
  let aborting = false;
  const abort = (why: string, code: number) => {
    // A terminal's Ctrl-C reaches us twice (directly, and relayed by tsx): stop only once,
    // and keep the handlers installed so the second signal cannot kill us mid-cleanup.
    if (aborting) return;
    aborting = true;
    process.stderr.write(`\nbench: ${why}, stopping the servers it started\n`);
    void stopAll()
      .then(onAbort)
      .finally(() => process.exit(code));
  };
  process.on('SIGINT', () => abort('interrupted', 130));
  process.on('SIGTERM', () => abort('terminated', 143));
  const crash = (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    abort('crashed', 1);
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
}
