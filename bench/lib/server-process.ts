/** The parent's side of bench/lib/server-child.ts: start it, ask for its figures, profile it, stop it. */
import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The server's cumulative figures: group commits and their operations and time (from /metrics), its CPU. */
export interface ServerStats {
  commits: number;
  operations: number;
  commitMs: number;
  cpuMs: number;
  /** The part of cpuMs spent in the kernel (writes, fsync, sockets). */
  systemCpuMs: number;
}

export type ServerMessage =
  | { kind: 'listening'; port: number; httpPort?: number | null }
  | ({ kind: 'stats' } & ServerStats)
  | { kind: 'ok' };

export class BenchServer {
  private readonly messages: ServerMessage[] = [];
  private wake: (() => void) | undefined;
  private constructor(
    private readonly child: ChildProcess,
    /** The server's gRPC port on 127.0.0.1. */
    public port = 0,
    /** Its HTTP API's port, when bench/http-api.ts turned it on. */
    public httpPort: number | null = null,
  ) {
    child.on('message', (m: ServerMessage) => {
      this.messages.push(m);
      this.wake?.();
    });
  }

  /** Forks a server on `dataDir`; `srcDir` runs another checkout's server (default: this one's). */
  static async start(dataDir: string, durability: 'full' | 'relaxed', srcDir?: string): Promise<BenchServer> {
    const script = new URL('./server-child.ts', import.meta.url).pathname;
    const child = fork(script, [dataDir, durability, ...(srcDir === undefined ? [] : [srcDir])], {
      execArgv: ['--import', 'tsx'],
    });
    const server = new BenchServer(child);
    const first = await server.next();
    if (first.kind !== 'listening') throw new Error('expected the server to listen');
    server.port = first.port;
    server.httpPort = first.httpPort ?? null;
    return server;
  }

  async stats(): Promise<ServerStats> {
    this.child.send('stats');
    const m = await this.next();
    if (m.kind !== 'stats') throw new Error('expected stats');
    return m;
  }

  /**
   * Starts a CPU profile (sampling every `intervalUs`, default V8's 1 ms). Its stop also writes
   * `NAME.threads.json` beside `NAME.cpuprofile`: each thread's CPU meanwhile (server-child.ts).
   */
  async profileStart(intervalUs?: number): Promise<void> {
    this.child.send(intervalUs === undefined ? 'profile-start' : `profile-start ${intervalUs}`);
    await this.next();
  }

  async profileStop(path: string): Promise<void> {
    this.child.send(`profile-stop ${path}`);
    await this.next();
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.child.on('exit', r));
    this.child.send('stop');
    await exited;
  }

  private async next(): Promise<ServerMessage> {
    while (this.messages.length === 0) await new Promise<void>((r) => (this.wake = r));
    return this.messages.shift()!;
  }
}

/** Median fdatasync latency of a 4 KiB write in `dir`: the floor under every group commit. */
export function probeFsyncMs(dir: string): number {
  const path = join(dir, 'fsync-probe');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const samples: number[] = [];
  for (let i = 0; i < 50; i++) {
    writeSync(fd, block, 0, block.length, 0);
    const t = performance.now();
    fdatasyncSync(fd);
    samples.push(performance.now() - t);
  }
  closeSync(fd);
  rmSync(path);
  samples.sort((x, y) => x - y);
  return samples[25] ?? 0;
}
