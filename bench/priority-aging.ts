/**
 * What priority aging costs the lease (issue 35): the engine in process on a real SQLite
 * file, on a copy of a prefilled database of `--jobs` ready jobs of 256 bytes spread
 * round-robin over the 10 priorities, with `priority_aging_ms` off (strict priority: one
 * UPDATE over jobs_ready) and on (the oldest ready jobs of each of the 10 priorities
 * read, compared by effective priority, then each priority's share leased). Each
 * configuration once per round, rounds interleaved, medians.
 *
 * Cost per lease: `--batches` batches of `--batch` reserve(N) calls submitted together
 * (each batch one commit), for N = 1 and N = 10; CPU time (process.cpuUsage) per leased
 * job, not wall time: on a shared machine the wall time of a commit is mostly waiting for
 * a CPU. Durability `relaxed` (no fsync), so the disk does not hide the lease.
 *
 *   npx tsx bench/priority-aging.ts [--rounds 3] [--jobs 100000] [--batch 200] [--batches 10] [--dir DIR]
 *
 * Not part of `npm test`.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions } from '../src/engine/settings.ts';
import type { EnqueueRequest } from '../src/engine/types.ts';
import { databaseFileName } from '../src/store/sqlite/open.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const rounds = Number(args.get('rounds') ?? 3);
const jobs = Number(args.get('jobs') ?? 100_000);
const batch = Number(args.get('batch') ?? 200);
const batches = Number(args.get('batches') ?? 10);
const root = args.get('dir') ?? tmpdir();

interface Config {
  name: string;
  agingMs: number;
  maxJobs: number;
}
const configs: Config[] = [
  { name: 'aging off, reserve(1)', agingMs: 0, maxJobs: 1 },
  { name: 'aging 1 s, reserve(1)', agingMs: 1000, maxJobs: 1 },
  { name: 'aging off, reserve(10)', agingMs: 0, maxJobs: 10 },
  { name: 'aging 1 s, reserve(10)', agingMs: 1000, maxJobs: 10 },
];

const payload = Buffer.alloc(256, 'x');

/** A database holding `jobs` ready jobs, priorities 0–9 round-robin. */
async function template(): Promise<string> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-aging-template-'));
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
      (_, i): EnqueueRequest => ({ queue: 'bench', type: 'work', payload, priority: (made + i) % 10 }),
    );
    await engine.enqueueBatch(requests);
  }
  engine.close();
  return dataDir;
}

/** CPU µs per leased job on a fresh copy of the template with `config`. */
async function costPerLease(config: Config, templateDir: string): Promise<number> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-aging-'));
  copyFileSync(join(templateDir, databaseFileName), join(dataDir, databaseFileName));
  const engine = await Engine.open(
    openSqliteStore(dataDir, { durability: 'relaxed' }),
    { ...defaultEngineOptions(), queues: { bench: { priorityAgingMs: config.agingMs } } },
    { clock: systemClock },
  );
  try {
    let leased = 0;
    const cpu = process.cpuUsage();
    for (let b = 0; b < batches; b++) {
      const got = await Promise.all(
        Array.from({ length: batch }, () => engine.reserve({ queues: ['bench'], maxJobs: config.maxJobs })),
      );
      leased += got.reduce((n, jobsOfCall) => n + jobsOfCall.length, 0);
    }
    const spent = process.cpuUsage(cpu);
    return (spent.user + spent.system) / Math.max(1, leased);
  } finally {
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.error(`filling a template: ${jobs.toLocaleString('en')} jobs over 10 priorities …`);
const templateDir = await template();
const loads: number[] = [];
const cost = new Map<string, number[]>();
for (let round = 1; round <= rounds; round++) {
  for (const config of configs) {
    loads.push(loadavg()[0]!);
    const us = await costPerLease(config, templateDir);
    console.error(`round ${round}: ${config.name}: ${us.toFixed(1)} µs CPU per leased job`);
    cost.set(config.name, [...(cost.get(config.name) ?? []), us]);
  }
}
rmSync(templateDir, { recursive: true, force: true });

const rows = configs.map((config) => {
  const runs = cost.get(config.name)!;
  const off = median(cost.get(config.name.replace(/aging 1 s/, 'aging off'))!);
  const us = median(runs);
  return [
    config.name,
    us.toFixed(1),
    runs.map((r) => r.toFixed(1)).join(', '),
    config.agingMs === 0 ? '—' : `${(us / off).toFixed(2)}×`,
  ];
});
console.log(
  [
    `### Priority aging: lease cost at 10 priorities (engine in process, durability relaxed, ${jobs.toLocaleString('en')} ready jobs of 256 B over priorities 0–9, medians of ${rounds} interleaved rounds)`,
    '',
    `${batches} batches of ${batch} reserve(N) calls, each batch one commit; CPU µs per leased job.`,
    '',
    markdownTable(['configuration', 'CPU µs per leased job', 'runs', 'vs aging off'], rows),
    '',
    `Load average (1 min) at the start of the runs: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}.`,
    '',
    ...machineDescription(root),
  ].join('\n'),
);
