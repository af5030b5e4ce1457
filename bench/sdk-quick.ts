/**
 * A quick throughput check of the SDK's default path (not the published
 * benchmark; that is bench/run.ts). It starts a server in a child process
 * (durability full, a temporary data directory on disk), then:
 *
 *   enqueue: 50 producers, each awaiting one `enqueue` at a time, N jobs in all
 *            (with --batch B: each awaiting one `enqueueBatch` of B jobs, as W3 does)
 *   drain:   one Worker with concurrency 50 acking every job
 *
 * and prints jobs/s for both phases, the mean jobs per Produce message and per
 * group commit, and the CPU time each process used.
 *
 *   npx tsx bench/sdk-quick.ts [--jobs 20000] [--producers 50] [--batch 1] [--concurrency 50]
 *                              [--transport stream|unary] [--flush nextTick|setImmediate]
 *                              [--streams N] [--durability full|relaxed] [--profile DIR] [--events]
 *
 * With --events, a second client in this process subscribes to every job event
 * (Events, no filter) for both phases and counts what it receives: the cost of one
 * subscriber on all events (its own CPU counts as client CPU).
 */
import { fork } from 'node:child_process';
import {
  closeSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { Session } from 'node:inspector';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { startServer } from '../src/app.ts';
import { loadConfig } from '../src/config/index.ts';
import { silentLogger } from '../src/telemetry/index.ts';
import { sumSeries } from './lib/prometheus-text.ts';

interface ServerStats {
  commits: number;
  operations: number;
  commitMs: number;
  cpuMs: number;
}

type FromServer = { kind: 'listening'; port: number } | ({ kind: 'stats' } & ServerStats) | { kind: 'ok' };

/** CPU profiles of one phase at a time (the whole process's would be mostly start-up). */
class Profiler {
  private readonly session = new Session();

  async start(): Promise<void> {
    this.session.connect();
    await this.post('Profiler.enable');
    await this.post('Profiler.start');
  }

  async stop(path: string): Promise<void> {
    const { profile } = (await this.post('Profiler.stop')) as { profile: unknown };
    writeFileSync(path, JSON.stringify(profile));
    this.session.disconnect();
  }

  private post(method: string): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.session.post(method, (error, result) => (error ? reject(error) : resolve(result))),
    );
  }
}

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    jobs: { type: 'string', default: '20000' },
    producers: { type: 'string', default: '50' },
    batch: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '50' },
    transport: { type: 'string', default: 'stream' },
    flush: { type: 'string', default: 'nextTick' },
    durability: { type: 'string', default: 'full' },
    streams: { type: 'string' },
    profile: { type: 'string' },
    events: { type: 'boolean', default: false },
  },
});

if (args.serve !== undefined) await serve(args.serve, args.durability === 'relaxed' ? 'relaxed' : 'full');
else await main();

/**
 * The child: the server as `sepp serve` runs it (the composition root, with its
 * telemetry: per-call metrics cost CPU too), counting group commits from its metrics.
 */
async function serve(dataDir: string, durability: 'full' | 'relaxed'): Promise<void> {
  const config = loadConfig({
    flags: { dataDir, durability, grpcListen: '127.0.0.1:0', adminListen: '127.0.0.1:0' },
    env: {},
    cwd: dataDir,
  });
  const server = await startServer(config, {
    logger: silentLogger,
    build: { version: 'bench', commit: '' },
    uiAssets: null,
  });
  const port = server.grpcPort;
  const commitStats = async () => {
    const text = await server.telemetry.metricsText();
    return {
      commits: sumSeries(text, 'sepp_commit_batch_size_count'),
      operations: sumSeries(text, 'sepp_commit_batch_size_sum'),
      commitMs: sumSeries(text, 'sepp_commit_duration_sum'),
    };
  };
  const send = (message: FromServer) => process.send?.(message);
  send({ kind: 'listening', port });
  const profiler = new Profiler();
  process.on('message', async (message: string) => {
    if (message.startsWith('profile-start')) {
      await profiler.start();
      send({ kind: 'ok' });
    } else if (message.startsWith('profile-stop ')) {
      await profiler.stop(message.slice('profile-stop '.length));
      send({ kind: 'ok' });
    } else if (message === 'stats') {
      const cpu = process.cpuUsage();
      send({ kind: 'stats', ...(await commitStats()), cpuMs: (cpu.user + cpu.system) / 1000 });
    } else if (message === 'stop') {
      await server.shutdown();
      process.exit(0);
    }
  });
}

async function main(): Promise<void> {
  const jobs = Number(args.jobs);
  const producers = Number(args.producers);
  const batch = Number(args.batch);
  const concurrency = Number(args.concurrency);
  const transport = args.transport === 'unary' ? 'unary' : 'stream';
  const flushOn = args.flush === 'setImmediate' ? 'setImmediate' : 'nextTick';
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-bench-'));
  const fsyncMs = probeFsyncMs(dataDir);
  const child = fork(
    new URL(import.meta.url).pathname,
    ['--serve', dataDir, '--durability', args.durability],
    {
      execArgv: ['--import', 'tsx'],
    },
  );
  const messages: FromServer[] = [];
  let wake: (() => void) | undefined;
  child.on('message', (m: FromServer) => {
    messages.push(m);
    wake?.();
  });
  const next = async (): Promise<FromServer> => {
    while (messages.length === 0) await new Promise<void>((r) => (wake = r));
    return messages.shift()!;
  };
  const clientProfiler = new Profiler();
  const profileDir = args.profile;
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  /** With --profile DIR: profiles the phase in both processes, into DIR/{client,server}-PHASE.cpuprofile. */
  const profiled = async <T>(phase: string, run: () => Promise<T>): Promise<T> => {
    if (profileDir === undefined) return run();
    child.send('profile-start');
    await next();
    await clientProfiler.start();
    const result = await run();
    await clientProfiler.stop(join(profileDir, `client-${phase}.cpuprofile`));
    child.send(`profile-stop ${join(profileDir, `server-${phase}.cpuprofile`)}`);
    await next();
    return result;
  };
  const serverStats = async (): Promise<ServerStats> => {
    child.send('stats');
    const m = await next();
    if (m.kind !== 'stats') throw new Error('expected stats');
    return m;
  };
  const first = await next();
  if (first.kind !== 'listening') throw new Error('expected the server to listen');

  const client = SeppClient.connect(`127.0.0.1:${first.port}`, { transport, flushOn });
  await client.ready();
  const subscriber = args.events ? SeppClient.connect(`127.0.0.1:${first.port}`) : undefined;
  let eventsSeen = 0;
  let eventsEnded: string | undefined;
  let allEvents: Promise<void> = Promise.resolve();
  if (subscriber !== undefined) {
    const subscription = subscriber.events();
    await subscription.caughtUp;
    allEvents = (async () => {
      for await (const _event of subscription) {
        // Enqueued, leased and completed for every job.
        if (++eventsSeen === 3 * jobs) break;
      }
    })().catch((error: unknown) => {
      eventsEnded = error instanceof Error ? error.message : String(error);
    });
  }
  const payload = Buffer.alloc(256, 'x');

  // Enqueue phase.
  let s0 = await serverStats();
  let c0 = process.cpuUsage();
  let started = performance.now();
  let next_ = 0;
  await profiled('enqueue', () =>
    Promise.all(
      Array.from({ length: producers }, async () => {
        while (next_ < jobs) {
          if (batch === 1) {
            next_++;
            await client.enqueue('bench', 'noop', payload);
          } else {
            const n = Math.min(batch, jobs - next_);
            next_ += n;
            await client.enqueueBatch(
              Array.from({ length: n }, () => ({ queue: 'bench', type: 'noop', payload })),
            );
          }
        }
      }),
    ),
  );
  let seconds = (performance.now() - started) / 1000;
  let s1 = await serverStats();
  let c1 = process.cpuUsage(c0);
  const stats = client.stats();
  const enqueue = {
    jobsPerSecond: Math.round(jobs / seconds),
    jobsPerBatch: stats.enqueuedJobs / stats.batches,
    jobsPerCommit: jobs / (s1.commits - s0.commits),
    commitMsMean: (s1.commitMs - s0.commitMs) / (s1.commits - s0.commits),
    clientCpuUsPerJob: ((c1.user + c1.system) / jobs).toFixed(1),
    serverCpuUsPerJob: (((s1.cpuMs - s0.cpuMs) * 1000) / jobs).toFixed(1),
  };

  // Drain phase.
  s0 = s1;
  c0 = process.cpuUsage();
  started = performance.now();
  let done = 0;
  await profiled(
    'drain',
    () =>
      new Promise<void>((resolve) => {
        const worker = client.worker({
          queues: ['bench'],
          concurrency,
          transport,
          handlers: { noop: () => {} },
          ...(args.streams === undefined ? {} : { streams: Number(args.streams) }),
        });
        worker.on('completed', () => {
          if (++done === jobs) resolve();
        });
        worker.on('error', (e) => console.error('worker:', e.message));
      }),
  );
  seconds = (performance.now() - started) / 1000;
  s1 = await serverStats();
  c1 = process.cpuUsage(c0);
  const drain = {
    opsPerCommit: (s1.operations - s0.operations) / (s1.commits - s0.commits),
    commitMsMean: (s1.commitMs - s0.commitMs) / (s1.commits - s0.commits),
    jobsPerSecond: Math.round(jobs / seconds),
    jobsPerCommit: jobs / (s1.commits - s0.commits),
    clientCpuUsPerJob: ((c1.user + c1.system) / jobs).toFixed(1),
    serverCpuUsPerJob: (((s1.cpuMs - s0.cpuMs) * 1000) / jobs).toFixed(1),
  };
  await allEvents;
  await subscriber?.close();
  await client.close();
  child.send('stop');
  await new Promise((r) => child.on('exit', r));
  rmSync(dataDir, { recursive: true, force: true });

  const streams = args.streams ?? (transport === 'unary' ? '1' : `min(concurrency, 2)`);
  console.log(
    `sdk-quick: ${jobs} jobs of 256 B, durability ${args.durability}, transport ${transport}, flush on ${flushOn}; ` +
      `${producers} producers; worker concurrency ${concurrency} over ${streams} ${transport === 'unary' ? 'pollers' : 'Work streams'}`,
  );
  console.log(
    `machine: ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)} at the end, ` +
      `fdatasync of 4 KiB in the data directory ${fsyncMs.toFixed(2)} ms (median of 50, before the run)`,
  );
  console.log(
    `enqueue: ${enqueue.jobsPerSecond} jobs/s; ${enqueue.jobsPerBatch.toFixed(1)} jobs per ${transport === 'stream' ? 'Produce message' : 'EnqueueBatch call'}, ` +
      `${enqueue.jobsPerCommit.toFixed(1)} jobs per group commit (${enqueue.commitMsMean.toFixed(2)} ms each); ` +
      `CPU per job: client ${enqueue.clientCpuUsPerJob} µs, server ${enqueue.serverCpuUsPerJob} µs`,
  );
  console.log(
    `drain:   ${drain.jobsPerSecond} jobs/s; ${drain.jobsPerCommit.toFixed(1)} jobs per group commit (${drain.opsPerCommit.toFixed(1)} operations, ${drain.commitMsMean.toFixed(2)} ms each); ` +
      `CPU per job: client ${drain.clientCpuUsPerJob} µs, server ${drain.serverCpuUsPerJob} µs`,
  );
  if (subscriber !== undefined) {
    console.log(
      `events:  one subscriber on every event received ${eventsSeen} of ${3 * jobs}` +
        (eventsEnded === undefined ? '' : `; it ended: ${eventsEnded}`),
    );
  }
}

/** Median fdatasync latency of a 4 KiB write in `dir`: the floor under every group commit. */
function probeFsyncMs(dir: string): number {
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
