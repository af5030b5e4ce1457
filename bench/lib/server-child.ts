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
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
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

/**
 * Each thread's time on a CPU so far, ns, by thread id (Linux's /proc/self/task/TID/schedstat;
 * empty elsewhere). The main thread's id is the pid: a CPU profile samples it alone, so the
 * others (V8's GC and compiler helpers, libuv's pool, the profiler's own) are told apart here.
 */
function threadsCpuNs(): Map<number, number> {
  const times = new Map<number, number>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const onCpuNs = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      times.set(Number(tid), onCpuNs);
    }
  } catch {
    // Not Linux, or the thread ended while read: no split.
  }
  return times;
}

/** The garbage collections of a profiled phase, by kind: how many, and their main-thread pause. */
const gcKinds: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let gcs: Record<string, { count: number; ms: number }> = {};
function countGcs(entries: readonly PerformanceEntry[]): void {
  for (const entry of entries) {
    const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
    const kind = gcKinds[detail?.kind ?? -1] ?? 'other';
    const seen = gcs[kind] ?? { count: 0, ms: 0 };
    gcs[kind] = { count: seen.count + 1, ms: seen.ms + entry.duration };
  }
}
const gcObserver = new PerformanceObserver((list) => countGcs(list.getEntries()));

let threadsAtStart = new Map<number, number>();
let heapAtStartBytes = 0;
let usageAtStart = process.resourceUsage();
process.on('message', async (message: string) => {
  if (message === 'profile-start' || message.startsWith('profile-start ')) {
    const interval = message.slice('profile-start '.length);
    await profiler.start(interval === '' ? undefined : Number(interval));
    threadsAtStart = threadsCpuNs();
    gcs = {};
    gcObserver.observe({ entryTypes: ['gc'] });
    heapAtStartBytes = process.memoryUsage().heapUsed;
    usageAtStart = process.resourceUsage();
    send({ kind: 'ok' });
  } else if (message.startsWith('profile-stop ')) {
    const path = message.slice('profile-stop '.length);
    const cpuMs = { main: 0, others: 0 };
    for (const [tid, ns] of threadsCpuNs()) {
      cpuMs[tid === process.pid ? 'main' : 'others'] += (ns - (threadsAtStart.get(tid) ?? 0)) / 1e6;
    }
    countGcs(gcObserver.takeRecords());
    gcObserver.disconnect();
    const heapUsedBytes = [heapAtStartBytes, process.memoryUsage().heapUsed];
    const usage = process.resourceUsage();
    // Page faults (a heap or code space that grows) and context switches: kernel work a profile does not show.
    const kernel = {
      minorPageFaults: usage.minorPageFault - usageAtStart.minorPageFault,
      majorPageFaults: usage.majorPageFault - usageAtStart.majorPageFault,
      voluntarySwitches: usage.voluntaryContextSwitches - usageAtStart.voluntaryContextSwitches,
      involuntarySwitches: usage.involuntaryContextSwitches - usageAtStart.involuntaryContextSwitches,
      systemCpuMs: (usage.systemCPUTime - usageAtStart.systemCPUTime) / 1000,
    };
    await profiler.stop(path);
    writeFileSync(
      path.replace(/\.cpuprofile$/, '.threads.json'),
      JSON.stringify({ cpuMs, gcs, heapUsedBytes, kernel }),
    );
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
