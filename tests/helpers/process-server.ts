/** Runs `sepp serve` as a child process (for tests that kill it or measure its memory). */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cliEntry } from './cli.ts';
import { captureOutput } from './secret-log.ts';
import { runBundle, startsProcess } from './test-run.ts';

const root = new URL('../..', import.meta.url).pathname;

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  logs(): string;
  /** Resident set size of the server process, in bytes. */
  rssBytes(): number;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A server process that may not be listening yet. */
export interface LaunchedServer {
  child: ChildProcess;
  /** Resolves once the server listens; rejects when it exits before. */
  ready: Promise<ServerProcess>;
  /** True once `ready` resolved. */
  isReady(): boolean;
  logs(): string;
  /** Sends a signal (unless it has exited) and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ServerProcessOptions {
  /** A bundle from `bundleServer()`, run with plain node; default: the run's bundle, else the sources under tsx. */
  bundle?: string;
  /** Added to the server's environment. */
  env?: Record<string, string>;
}

/** Starts a server on `dataDir`, ports 0, and resolves once it listens. */
export function startServerProcess(
  dataDir: string,
  extraArgs: string[] = [],
  options: ServerProcessOptions = {},
): Promise<ServerProcess> {
  return launchServerProcess(dataDir, extraArgs, options).ready;
}

/** Spawns a server on `dataDir`, ports 0, without waiting for it (a test may kill it while it starts). */
export function launchServerProcess(
  dataDir: string,
  extraArgs: string[] = [],
  options: ServerProcessOptions = {},
): LaunchedServer {
  startsProcess('a server process');
  const entry = cliEntry(options.bundle);
  const child = spawn(
    process.execPath,
    [
      ...entry,
      'serve',
      '--data-dir',
      dataDir,
      '--grpc-listen',
      '127.0.0.1:0',
      '--admin-listen',
      '127.0.0.1:0',
      '--log-format',
      'json',
      ...extraArgs,
    ],
    {
      cwd: root,
      env: { ...process.env, SEPP_CONFIG: '', ...options.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let logs = '';
  let ready = false;
  const capture = captureOutput('process');
  child.stderr?.on('data', (chunk: Buffer) => capture(chunk.toString()));
  child.on('exit', () => capture('\n'));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  const started = new Promise<number>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      logs += chunk.toString();
      const line = logs.split('\n').find((l) => l.includes('"server.started"'));
      if (line) resolve(Number((JSON.parse(line) as { grpc: string }).grpc.split(':').pop()));
    });
    child.on('exit', (code, signal) => reject(new Error(`server exited early (${signal ?? code}): ${logs}`)));
  });
  const server = started.then((port): ServerProcess => {
    ready = true;
    return {
      child,
      port,
      logs: () => logs,
      rssBytes() {
        const line = readFileSync(`/proc/${child.pid}/status`, 'utf8')
          .split('\n')
          .find((l) => l.startsWith('VmRSS:'));
        return Number(line?.replace(/\D+/g, '') ?? 0) * 1024;
      },
      stop,
    };
  });
  // A test that kills the server while it starts may never look at `ready`.
  server.catch(() => {});
  return { child, ready: server, isReady: () => ready, logs: () => logs, stop };
}

/**
 * The run's bundle (test-run.ts), or, for a file run on its own, a bundle of the
 * server (`node build.mjs --bundle-only`) in a fresh directory under the
 * repository's dist/ (inside the repository, the bundle finds better-sqlite3 in
 * node_modules; git and Biome ignore dist/). It starts several times faster than
 * the sources under tsx, which matters to tests that start a server many times.
 */
export function bundleServer(): { bundle: string; dispose(): void } {
  startsProcess('a bundle of the server');
  if (runBundle !== undefined) return { bundle: runBundle, dispose: () => {} };
  mkdirSync(join(root, 'dist'), { recursive: true });
  const outDir = mkdtempSync(join(root, 'dist', 'test-bundle-'));
  const build = spawnSync(process.execPath, [join(root, 'build.mjs'), '--bundle-only', '--out-dir', outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (build.status !== 0) {
    rmSync(outDir, { recursive: true, force: true });
    throw new Error(`bundling the server failed:\n${build.stdout}${build.stderr}`);
  }
  return {
    bundle: join(outDir, 'sepp.cjs'),
    dispose: () => rmSync(outDir, { recursive: true, force: true }),
  };
}
