/**
 * The server child of the SDK benchmarks (bench/sdk-quick.ts, bench/cpu-per-job.ts):
 * sepp as `sepp serve` runs it (the composition root with its telemetry — per-call
 * metrics cost CPU too), in its own process so that its CPU time is its own.
 *
 *   tsx bench/lib/server-child.ts DATA_DIR full|relaxed [SRC_DIR]
 *
 * SRC_DIR (default: this checkout's src/) lets a benchmark run another checkout's server
 * with this checkout's client, interleaved, for a baseline measured in the same run.
 * It talks to its parent over the fork IPC channel (`ServerMessage`, bench/lib/server-process.ts).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Profiler } from './profiler.ts';
import { sumSeries } from './prometheus-text.ts';
import type { ServerMessage } from './server-process.ts';

interface StartedServer {
  grpcPort: number;
  httpPort?: number | null;
  telemetry: { metricsText(): Promise<string> };
  shutdown(): Promise<void>;
}

const [dataDir, durability, srcDir = new URL('../../src', import.meta.url).pathname] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: server-child.ts DATA_DIR full|relaxed [SRC_DIR]');
const from = (path: string) => pathToFileURL(resolve(srcDir, path)).href;
// Another checkout's modules are loaded by path: their types are that checkout's business.
const { startServer } = (await import(from('app.ts'))) as {
  startServer: (config: unknown, deps: unknown) => Promise<StartedServer>;
};
const { loadConfig } = (await import(from('config/index.ts'))) as {
  loadConfig: (input: unknown) => unknown;
};
const { silentLogger } = (await import(from('telemetry/index.ts'))) as { silentLogger: unknown };

// bench/http-api.ts adds a config file (the HTTP API on, a push queue) and its push secret.
const benchConfig = process.env.SEPP_BENCH_CONFIG;
const config = loadConfig({
  flags: {
    dataDir,
    durability: durability === 'relaxed' ? 'relaxed' : 'full',
    grpcListen: '127.0.0.1:0',
    adminListen: '127.0.0.1:0',
    ...(benchConfig === undefined ? {} : { config: benchConfig, httpListen: '127.0.0.1:0' }),
  },
  env: benchConfig === undefined ? {} : { SEPP_BENCH_PUSH_SECRET: process.env.SEPP_BENCH_PUSH_SECRET },
  cwd: dataDir,
});
const server = await startServer(config, {
  logger: silentLogger,
  build: { version: 'bench', commit: '' },
  uiAssets: null,
});
const send = (message: ServerMessage) => process.send?.(message);
const profiler = new Profiler();
process.on('message', async (message: string) => {
  if (message === 'profile-start') {
    await profiler.start();
    send({ kind: 'ok' });
  } else if (message.startsWith('profile-stop ')) {
    await profiler.stop(message.slice('profile-stop '.length));
    send({ kind: 'ok' });
  } else if (message === 'stats') {
    const text = await server.telemetry.metricsText();
    const cpu = process.cpuUsage();
    send({
      kind: 'stats',
      commits: sumSeries(text, 'sepp_commit_batch_size_count'),
      operations: sumSeries(text, 'sepp_commit_batch_size_sum'),
      commitMs: sumSeries(text, 'sepp_commit_duration_sum'),
      cpuMs: (cpu.user + cpu.system) / 1000,
      systemCpuMs: cpu.system / 1000,
    });
  } else if (message === 'stop') {
    await server.shutdown();
    process.exit(0);
  }
});
send({ kind: 'listening', port: server.grpcPort, httpPort: server.httpPort ?? null });
