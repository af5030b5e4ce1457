/**
 * `sepp serve` from a checkout's sources (tsx) as a tracked child process, on
 * free loopback ports, for the benchmarks that measure the server process
 * from outside (its resident memory): bench/unauthenticated-flood.ts and
 * bench/keyed-flood.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerProcess } from '../systems/types.ts';
import { freePort, waitForPort } from './net.ts';
import { spawnTracked } from './processes.ts';

export interface SeppServe extends ServerProcess {
  readonly grpcPort: number;
  readonly adminPort: number;
}

/** Starts the server of checkout `srcDir` with `config`, its data in `dir`/data; resolves once gRPC listens. */
export async function startSeppServe(options: {
  srcDir: string;
  config: string;
  dir: string;
  env?: Readonly<Record<string, string>>;
  /** Modules the server's process imports before sepp's (`node --import`), after tsx. */
  preload?: readonly string[];
}): Promise<SeppServe> {
  const grpcPort = await freePort();
  const adminPort = await freePort();
  const server = await spawnTracked(
    {
      name: 'sepp',
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        ...(options.preload ?? []).flatMap((module) => ['--import', module]),
        join(options.srcDir, 'src/cli/main.ts'),
        'serve',
        '--config',
        options.config,
        '--data-dir',
        join(options.dir, 'data'),
        '--grpc-listen',
        `127.0.0.1:${grpcPort}`,
        '--admin-listen',
        `127.0.0.1:${adminPort}`,
      ],
      cwd: options.srcDir,
      ...(options.env === undefined ? {} : { env: options.env }),
    },
    options.dir,
  );
  await waitForPort(grpcPort, 30_000);
  return { ...server, grpcPort, adminPort };
}

/** A process's resident memory (VmRSS), in MiB. */
export function rssMib(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.replace(/\D+/g, '') ?? 0) / 1024;
}
