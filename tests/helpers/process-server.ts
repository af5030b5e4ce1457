/** Runs `sepp serve` from source as a child process (for tests that kill it or measure its memory). */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { captureOutput } from './secret-log.ts';

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  logs(): string;
  /** Resident set size of the server process, in bytes. */
  rssBytes(): number;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServerProcess(dataDir: string, extraArgs: string[] = []): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
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
    { env: { ...process.env, SEPP_CONFIG: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let logs = '';
  const capture = captureOutput('process');
  child.stderr?.on('data', (chunk: Buffer) => capture(chunk.toString()));
  child.on('exit', () => capture('\n'));
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      logs += chunk.toString();
      const started = logs.split('\n').find((l) => l.includes('"server.started"'));
      if (started) resolve(Number((JSON.parse(started) as { grpc: string }).grpc.split(':').pop()));
    });
    child.on('exit', (code) => reject(new Error(`server exited early with ${code}: ${logs}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
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
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
