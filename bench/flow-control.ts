/**
 * What flow control costs the lease: the engine in process on a real SQLite
 * file, on a copy of a prefilled database (`--jobs` jobs of 256 bytes), in two
 * parts, every configuration once per round, rounds interleaved, medians.
 *
 * 1. Cost per lease, limits not binding. Batches of `--batch` reserve(1) calls
 *    submitted together, so each batch is one commit and the CPU per leased job
 *    is mostly the lease itself (how the next group is chosen, the counts and
 *    buckets it reads): no limits; max_leased and a rate limit set so high they
 *    never hold anything back (the cost of checking); jobs spread round-robin
 *    over 10, 1,000 and 100,000 groups (fair turns), also with group_max_leased
 *    set too high to bind (the per-group count on every turn).
 * 2. Throughput with limits that bind: `--callers` callers each doing
 *    reserve(1) → ack for `--seconds`: the limit sets the pace, and waking the
 *    throttled reserves is part of the cost.
 *
 * CPU time (process.cpuUsage), not wall time, per job: on a shared machine the
 * wall time of a commit is mostly waiting for a CPU. Durability `relaxed` by
 * default (no fsync), so the disk does not hide the lease.
 *
 *   npx tsx bench/flow-control.ts [--rounds 3] [--jobs 200000] [--batch 500] [--callers 32]
 *                                 [--seconds 3] [--durability relaxed|full] [--dir DIR]
 *
 * Not part of `npm test`.
 */
import { setMaxListeners } from 'node:events';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions, type QueueSettings } from '../src/engine/settings.ts';
import type { EnqueueRequest } from '../src/engine/types.ts';
import { type Durability, databaseFileName } from '../src/store/sqlite/open.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const rounds = Number(args.get('rounds') ?? 3);
const jobs = Number(args.get('jobs') ?? 200_000);
const batch = Number(args.get('batch') ?? 500);
const batches = Number(args.get('batches') ?? 20);
const callers = Number(args.get('callers') ?? 32);
const seconds = Number(args.get('seconds') ?? 3);
const durability = (args.get('durability') ?? 'relaxed') as Durability;
const root = args.get('dir') ?? tmpdir();

interface Config {
  name: string;
  /** Groups the jobs are spread over; 0 = no group. */
  groups: number;
  settings: Partial<QueueSettings>;
}

const never = 1_000_000;
const neverRate = { leases: never, periodMs: 1000, burst: never };
const costConfigs: Config[] = [
  { name: 'no limits, no groups', groups: 0, settings: {} },
  { name: 'max_leased (not reached)', groups: 0, settings: { maxLeased: never } },
  { name: 'rate limit (never empty)', groups: 0, settings: { rateLimit: neverRate } },
  ...[10, 1000, 100_000].flatMap((groups): Config[] => [
    { name: `${groups.toLocaleString('en')} groups`, groups, settings: {} },
    {
      name: `${groups.toLocaleString('en')} groups, group_max_leased (not reached)`,
      groups,
      settings: { groupMaxLeased: never },
    },
  ]),
];
const bindingConfigs: Config[] = [
  { name: 'no limits, no groups', groups: 0, settings: {} },
  { name: `max_leased = ${callers / 2}`, groups: 0, settings: { maxLeased: callers / 2 } },
  {
    name: 'rate limit 1,000/s',
    groups: 0,
    settings: { rateLimit: { leases: 1000, periodMs: 1000, burst: 100 } },
  },
  { name: '10 groups, group_max_leased = 1', groups: 10, settings: { groupMaxLeased: 1 } },
  { name: '1,000 groups, group_max_leased = 1', groups: 1000, settings: { groupMaxLeased: 1 } },
];

const payload = Buffer.alloc(256, 'x');

/** A database holding `jobs` ready jobs spread round-robin over `groups` groups (0: none). */
async function template(groups: number): Promise<string> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-flow-template-'));
  const engine = await Engine.open(
    openSqliteStore(dataDir, { durability: 'relaxed' }),
    defaultEngineOptions(),
    {
      clock: systemClock,
    },
  );
  for (let made = 0; made < jobs; made += 1000) {
    const requests = Array.from(
      { length: Math.min(1000, jobs - made) },
      (_, i): EnqueueRequest => ({
        queue: 'bench',
        type: 'work',
        payload,
        ...(groups === 0 ? {} : { group: `g${(made + i) % groups}` }),
      }),
    );
    await engine.enqueueBatch(requests);
  }
  engine.close(); // checkpoints: the database file alone holds everything
  return dataDir;
}

/** Runs `body` on an engine over a fresh copy of the template with `config`'s queue settings. */
async function withCopy<T>(
  config: Config,
  templateDir: string,
  body: (engine: Engine) => Promise<T>,
): Promise<T> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-flow-'));
  copyFileSync(join(templateDir, databaseFileName), join(dataDir, databaseFileName));
  const engine = await Engine.open(
    openSqliteStore(dataDir, { durability }),
    { ...defaultEngineOptions(), queues: { bench: config.settings } },
    { clock: systemClock },
  );
  try {
    return await body(engine);
  } finally {
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Part 1: CPU µs per leased job, `batches` batches of `batch` reserve(1) calls, each batch one commit. */
function costPerLease(engine: Engine): Promise<number> {
  return (async () => {
    let leased = 0;
    const cpu = process.cpuUsage();
    for (let b = 0; b < batches; b++) {
      const got = await Promise.all(
        Array.from({ length: batch }, () => engine.reserve({ queues: ['bench'] })),
      );
      leased += got.reduce((n, jobsOfCall) => n + jobsOfCall.length, 0);
    }
    const spent = process.cpuUsage(cpu);
    return (spent.user + spent.system) / Math.max(1, leased);
  })();
}

/** Part 2: jobs/s and CPU µs per job with `callers` callers doing reserve(1) → ack. */
async function throughput(
  engine: Engine,
): Promise<{ jobsPerSecond: number; cpuUsPerJob: number; throttled: number }> {
  let done = 0;
  const stop = new AbortController();
  // Every waiting caller listens on it.
  setMaxListeners(callers * 2, stop.signal);
  const caller = async () => {
    while (!stop.signal.aborted) {
      const [job] = await engine.reserve({ queues: ['bench'], waitMs: 60_000 }, stop.signal);
      if (job === undefined) continue;
      await engine.ack({ jobId: job.id, attempt: job.attempt });
      done++;
    }
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const running = Array.from({ length: callers }, caller);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const throttled = (await engine.listQueues())[0]?.throttledWorkers ?? 0;
  // Waiting reserves return at once; calls in flight finish and count.
  stop.abort();
  await Promise.all(running);
  const elapsedS = (performance.now() - started) / 1000;
  const spent = process.cpuUsage(cpu);
  return {
    jobsPerSecond: done / elapsedS,
    cpuUsPerJob: (spent.user + spent.system) / Math.max(1, done),
    throttled,
  };
}

const templates = new Map<number, string>();
for (const groups of new Set([...costConfigs, ...bindingConfigs].map((c) => c.groups))) {
  console.error(
    `filling a template: ${jobs.toLocaleString('en')} jobs over ${groups.toLocaleString('en')} groups …`,
  );
  templates.set(groups, await template(groups));
}

const cost = new Map<string, number[]>();
const binding = new Map<string, { jobsPerSecond: number; cpuUsPerJob: number; throttled: number }[]>();
for (let round = 1; round <= rounds; round++) {
  for (const config of costConfigs) {
    const us = await withCopy(config, templates.get(config.groups)!, costPerLease);
    console.error(`round ${round}, cost: ${config.name}: ${us.toFixed(1)} µs CPU per lease`);
    cost.set(config.name, [...(cost.get(config.name) ?? []), us]);
  }
  for (const config of bindingConfigs) {
    const run = await withCopy(config, templates.get(config.groups)!, throughput);
    console.error(
      `round ${round}, binding: ${config.name}: ${Math.round(run.jobsPerSecond)} jobs/s, ${run.cpuUsPerJob.toFixed(1)} µs CPU per job`,
    );
    binding.set(config.name, [...(binding.get(config.name) ?? []), run]);
  }
}
for (const dir of templates.values()) rmSync(dir, { recursive: true, force: true });

const plainCost = median(cost.get(costConfigs[0]!.name)!);
const costRows = costConfigs.map((config) => {
  const us = median(cost.get(config.name)!);
  return [config.name, us.toFixed(1), `${(us / plainCost).toFixed(2)}×`];
});
const bindingRows = bindingConfigs.map((config) => {
  const runs = binding.get(config.name)!;
  return [
    config.name,
    Math.round(median(runs.map((r) => r.jobsPerSecond))).toLocaleString('en'),
    median(runs.map((r) => r.cpuUsPerJob)).toFixed(1),
    String(median(runs.map((r) => r.throttled))),
  ];
});
console.log(
  [
    `### Flow control: lease cost (engine in process, durability ${durability}, ${jobs.toLocaleString('en')} jobs of 256 B prefilled, medians of ${rounds} interleaved rounds)`,
    '',
    `Cost per lease: ${batches} batches of ${batch} reserve(1) calls, each batch one commit; CPU µs per leased job. No limit binds.`,
    '',
    markdownTable(['configuration', 'CPU µs per lease', 'vs no limits'], costRows),
    '',
    `Limits that bind: ${callers} callers doing reserve(1) → ack for ${seconds} s.`,
    '',
    markdownTable(
      ['configuration', 'jobs/s', 'CPU µs per job (lease + ack)', 'throttled callers at the end'],
      bindingRows,
    ),
    '',
    ...machineDescription(root),
  ].join('\n'),
);
