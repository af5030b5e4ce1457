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
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { Profiler } from './lib/profiler.ts';
import { drainJobs, enqueueJobs, measured, type PhaseFigures } from './lib/sdk-phases.ts';
import { BenchServer, probeFsyncMs } from './lib/server-process.ts';

const { values: args } = parseArgs({
  options: {
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

const jobs = Number(args.jobs);
const transport = args.transport === 'unary' ? 'unary' : 'stream';
const flushOn = args.flush === 'setImmediate' ? 'setImmediate' : 'nextTick';
const dataDir = mkdtempSync(join(tmpdir(), 'sepp-bench-'));
const fsyncMs = probeFsyncMs(dataDir);
const server = await BenchServer.start(dataDir, args.durability === 'relaxed' ? 'relaxed' : 'full');
const clientProfiler = new Profiler();
const profileDir = args.profile;
if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
/** With --profile DIR: profiles the phase in both processes, into DIR/{client,server}-PHASE.cpuprofile. */
const profiled = async (phase: string, run: () => Promise<void>): Promise<PhaseFigures> =>
  measured(server, jobs, async () => {
    if (profileDir === undefined) return run();
    await server.profileStart();
    await clientProfiler.start();
    await run();
    await clientProfiler.stop(join(profileDir, `client-${phase}.cpuprofile`));
    await server.profileStop(join(profileDir, `server-${phase}.cpuprofile`));
  });

const client = SeppClient.connect(`127.0.0.1:${server.port}`, { transport, flushOn });
await client.ready();
const subscriber = args.events ? SeppClient.connect(`127.0.0.1:${server.port}`) : undefined;
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
const enqueue = await profiled('enqueue', () =>
  enqueueJobs(client, 'bench', jobs, Number(args.producers), Number(args.batch)),
);
const stats = client.stats();
const drain = await profiled('drain', () =>
  drainJobs(client, 'bench', jobs, {
    concurrency: Number(args.concurrency),
    transport,
    ...(args.streams === undefined ? {} : { streams: Number(args.streams) }),
  }),
);
await allEvents;
await subscriber?.close();
await client.close();
await server.stop();
rmSync(dataDir, { recursive: true, force: true });

const streams = args.streams ?? (transport === 'unary' ? '1' : 'one per 1,000 slots (the default)');
console.log(
  `sdk-quick: ${jobs} jobs of 256 B, durability ${args.durability}, transport ${transport}, flush on ${flushOn}; ` +
    `${args.producers} producers; worker concurrency ${args.concurrency} over ${streams} ${transport === 'unary' ? 'pollers' : 'Work streams'}`,
);
console.log(
  `machine: ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)} at the end, ` +
    `fdatasync of 4 KiB in the data directory ${fsyncMs.toFixed(2)} ms (median of 50, before the run)`,
);
const cpuText = (p: PhaseFigures) =>
  `CPU per job: client ${p.clientCpuUs.toFixed(1)} µs, server ${p.serverCpuUs.toFixed(1)} µs`;
console.log(
  `enqueue: ${Math.round(enqueue.perSecond)} jobs/s; ${(stats.enqueuedJobs / stats.batches).toFixed(1)} jobs per ${transport === 'stream' ? 'Produce message' : 'EnqueueBatch call'}, ` +
    `${enqueue.perCommit.toFixed(1)} jobs per group commit (${enqueue.commitMsMean.toFixed(2)} ms each); ${cpuText(enqueue)}`,
);
console.log(
  `drain:   ${Math.round(drain.perSecond)} jobs/s; ${drain.perCommit.toFixed(1)} jobs per group commit (${drain.operationsPerCommit.toFixed(1)} operations, ${drain.commitMsMean.toFixed(2)} ms each); ` +
    cpuText(drain),
);
if (subscriber !== undefined) {
  console.log(
    `events:  one subscriber on every event received ${eventsSeen} of ${3 * jobs}` +
      (eventsEnded === undefined ? '' : `; it ended: ${eventsEnded}`),
  );
}
