/**
 * The CPU-per-job check to run before merging an engine change: what the server spends
 * per job on the W1 shape (enqueue, drain) and per W2 round, as medians of --runs
 * fresh servers, printed next to the last committed result
 * (bench/results/cpu-per-job.json at HEAD) and, with --against, next to other
 * checkouts measured in the same run, interleaved, the order alternating (the only fair comparison on a shared
 * machine: the committed figure was measured under another load).
 *
 *   npx tsx bench/cpu-per-job.ts [--runs 3] [--jobs 20000] [--rounds 1000] [--warmup 0]
 *                                [--against main] [--against /path/to/checkout] [--save]
 *                                [--profile DIR [--profile-every] [--profile-interval-us 1000]] [--api-key]
 *
 *   W1 enqueue  50 producers, each awaiting one `enqueue` (the SDK coalesces them per turn)
 *   W1 drain    one Worker, concurrency 50, `prefetch: 0` (pinned: this measures the server's cost
 *               per job at a fixed shape, not the SDK's default, `auto`; the committed figures were
 *               taken at 0)
 *   W2 round    one caller: enqueue → the Worker (concurrency 1, `prefetch: 0`, pinned as the
 *               drain) is pushed the job → its durable ack
 *
 * --against takes a git ref (its tree is exported to a temporary directory that uses this
 * checkout's node_modules) or a checkout's directory; the client is always this checkout's
 * SDK, so only the server differs; each is shown with the change of the medians and the paired
 * change (the median of run i's change against run i of the other). --save writes this checkout's medians to
 * bench/results/cpu-per-job.json (commit it with the change that moved them).
 * --warmup N enqueues and drains N jobs of another queue on each fresh server before the measured
 * phases, so that they read a server whose code is compiled (by default the enqueue is the
 * server's first work, and pays for V8's compiling its path).
 * --profile DIR writes a CPU profile of this checkout's server per phase (last run);
 * with --profile-every, of every checkout's server in every run (`server-PHASE-rRUN-tTREE`, TREE
 * the checkout's place in the list: 0 this one, then each --against), so that both sides of a
 * comparison are profiled alike (bench/profile-top.ts --enqueue-parts compares them);
 * --profile-interval-us sets the sampling interval (V8's default 1,000 µs). Each profile has a
 * `.threads.json` beside it: the main thread's CPU and the other threads' (bench/lib/server-child.ts).
 * --api-key gives every server (each checkout's alike) one admin API key in a config file
 * (`[[grpc.api_keys]]`, by its SHA-256) and the client sends it: production's usual setup, where
 * every job records the key that made it. The file also turns on the HTTP API, idle
 * (SEPP_BENCH_CONFIG, bench/lib/server-child.ts), on every side. It does not go with --save
 * (the committed figures are of a server without keys).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable, median } from './engine-lib.ts';
import { drainJobs, enqueueJobs, measured, type PhaseFigures, roundTrips } from './lib/sdk-phases.ts';
import { BenchServer, probeFsyncMs } from './lib/server-process.ts';
import { git, type SourceTree, sourceTree } from './lib/trees.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '0' },
    against: { type: 'string', multiple: true, default: [] },
    save: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'profile-every': { type: 'boolean', default: false },
    'profile-interval-us': { type: 'string' },
    'api-key': { type: 'boolean', default: false },
  },
});
if (args.save && args['api-key']) {
  console.error('cpu-per-job: --save keeps the figures of a server without keys: run it without --api-key');
  process.exit(2);
}
const runs = Number(args.runs);
const jobs = Number(args.jobs);
const rounds = Number(args.rounds);
const warmup = Number(args.warmup);
const profileIntervalUs =
  args['profile-interval-us'] === undefined ? undefined : Number(args['profile-interval-us']);
const repoRoot = new URL('..', import.meta.url).pathname;
const resultPath = join(repoRoot, 'bench/results/cpu-per-job.json');

/** The figures this benchmark keeps: server CPU per unit first (the point), then rates. */
const figureNames = [
  'enqueue server µs/job',
  'drain server µs/job',
  'W2 server µs/round',
  'enqueue kernel µs/job',
  'drain kernel µs/job',
  'W2 kernel µs/round',
  'enqueue jobs/s',
  'drain jobs/s',
  'W2 rounds/s',
  'W2 commits/round',
] as const;
type FigureName = (typeof figureNames)[number];
type Figures = Record<FigureName, number>;

interface SavedResult {
  commit: string;
  date: string;
  command: string;
  machine: string;
  loadAverage: number[];
  runs: number;
  figures: Figures;
}

interface Tree extends SourceTree {
  samples: Figures[];
}

/** The key of --api-key: the config holds its SHA-256 only. */
const apiKey = 'cpu-per-job-bench-key-0123456789';

/** Runs the three phases on a fresh server; `profile` names each phase's profile (none: not profiled). */
async function runOnce(tree: Tree, profile: ((phase: string) => string) | undefined): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-cpu-'));
  if (args['api-key']) {
    const config = join(dir, 'sepp.toml');
    const sha256 = createHash('sha256').update(apiKey).digest('hex');
    writeFileSync(config, `[[grpc.api_keys]]\nname = "bench"\nrole = "admin"\nkey_sha256 = "${sha256}"\n`);
    process.env.SEPP_BENCH_CONFIG = config;
  }
  const server = await BenchServer.start(join(dir, 'data'), 'full', tree.srcDir).finally(
    () => delete process.env.SEPP_BENCH_CONFIG,
  );
  const client = SeppClient.connect(`127.0.0.1:${server.port}`, args['api-key'] ? { apiKey } : {});
  try {
    await client.ready();
    if (warmup > 0) {
      await enqueueJobs(client, 'warmup', warmup, 50);
      await drainJobs(client, 'warmup', warmup, { concurrency: 50, transport: 'stream', prefetch: 0 });
    }
    const phase = async (name: string, units: number, work: () => Promise<void>): Promise<PhaseFigures> =>
      measured(server, units, async () => {
        if (profile !== undefined) await server.profileStart(profileIntervalUs);
        await work();
        if (profile !== undefined) await server.profileStop(profile(name));
      });
    const enqueue = await phase('enqueue', jobs, () => enqueueJobs(client, 'w1', jobs, 50));
    const drain = await phase('drain', jobs, () =>
      drainJobs(client, 'w1', jobs, { concurrency: 50, transport: 'stream', prefetch: 0 }),
    );
    const w2 = await phase('w2', rounds, () => roundTrips(client, 'w2', rounds, 0));
    return {
      'enqueue server µs/job': enqueue.serverCpuUs,
      'drain server µs/job': drain.serverCpuUs,
      'W2 server µs/round': w2.serverCpuUs,
      'enqueue kernel µs/job': enqueue.serverSystemCpuUs,
      'drain kernel µs/job': drain.serverSystemCpuUs,
      'W2 kernel µs/round': w2.serverSystemCpuUs,
      'enqueue jobs/s': enqueue.perSecond,
      'drain jobs/s': drain.perSecond,
      'W2 rounds/s': w2.perSecond,
      'W2 commits/round': 1 / w2.perCommit,
    };
  } finally {
    await client.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function medians(samples: readonly Figures[]): Figures {
  const out = {} as Figures;
  for (const name of figureNames) out[name] = median(samples.map((s) => s[name]));
  return out;
}

/** The result committed at HEAD, not the working copy: the figure a change is judged against. */
function lastCommitted(): SavedResult | undefined {
  try {
    return JSON.parse(git('show', 'HEAD:bench/results/cpu-per-job.json')) as SavedResult;
  } catch {
    return undefined;
  }
}

const format = (name: FigureName, value: number) =>
  name.includes('µs') || name.includes('commits')
    ? value.toFixed(name.includes('commits') ? 2 : 1)
    : Math.round(value).toLocaleString('en');
const change = (now: number, before: number) => {
  const percent = (now / before - 1) * 100;
  return `${percent >= 0 ? '+' : ''}${percent.toFixed(1)} %`;
};

/** A figure and its change, or dashes when the committed result predates the figure. */
const compared = (name: FigureName, now: number, before: number | undefined) =>
  before === undefined ? ['–', '–'] : [format(name, before), change(now, before)];

const self: Tree = { label: 'this checkout', srcDir: undefined, samples: [] };
const trees = [self, ...args.against.map((a) => ({ ...sourceTree(a), samples: [] }))];
const loadAtStart = loadavg();
const fsyncMs = probeFsyncMs(tmpdir());
if (args.profile !== undefined) mkdirSync(args.profile, { recursive: true });
try {
  for (let run = 1; run <= runs; run++) {
    // The order alternates: whichever server runs first in a pair was measured to pay
    // 10-16 % more (docs/performance.md), so a fixed order biases the comparison.
    for (const tree of run % 2 === 1 ? trees : [...trees].reverse()) {
      const dir = args.profile;
      const profile =
        dir === undefined
          ? undefined
          : args['profile-every']
            ? (phase: string) => join(dir, `server-${phase}-r${run}-t${trees.indexOf(tree)}.cpuprofile`)
            : tree === self && run === runs
              ? (phase: string) => join(dir, `server-${phase}.cpuprofile`)
              : undefined;
      const figures = await runOnce(tree, profile);
      tree.samples.push(figures);
      console.error(
        `run ${run}/${runs} ${tree.label}: ${figureNames.map((n) => `${n} ${format(n, figures[n])}`).join(', ')}; load ${loadavg()[0]?.toFixed(2)}`,
      );
    }
  }
} finally {
  for (const tree of trees) tree.cleanup?.();
}

const committed = lastCommitted();
const ours = medians(self.samples);
const others = trees
  .slice(1)
  .map((t) => ({ label: t.label, figures: medians(t.samples), samples: t.samples }));
/**
 * The median of the runs' own changes (run i of this checkout against run i of the other, measured
 * one after the other): the load drifts less within a pair than over the whole run, so this reads
 * steadier than the change of the medians when the machine is shared.
 */
const pairedChange = (name: FigureName, theirs: readonly Figures[]) =>
  change(1 + median(self.samples.map((s, i) => s[name] / theirs[i]![name] - 1)), 1);
const header = [
  'figure',
  'this checkout',
  ...others.flatMap((o) => [o.label, 'change', 'paired change']),
  ...(committed === undefined
    ? []
    : [`committed (${committed.commit}, load ${committed.loadAverage[0]})`, 'change']),
];
const rows = figureNames.map((name) => [
  name,
  format(name, ours[name]),
  ...others.flatMap((o) => [
    format(name, o.figures[name]),
    change(ours[name], o.figures[name]),
    pairedChange(name, o.samples),
  ]),
  ...(committed === undefined ? [] : compared(name, ours[name], committed.figures[name])),
]);
const loadAtEnd = loadavg();
console.log(
  [
    `### CPU per job: medians of ${runs} runs${others.length > 0 ? ', checkouts interleaved' : ''} (${jobs.toLocaleString('en')} jobs, ${rounds.toLocaleString('en')} W2 rounds, durability full${args['api-key'] ? ', with an API key' : ''}${warmup > 0 ? `, after a warm-up of ${warmup.toLocaleString('en')} jobs` : ''})`,
    '',
    markdownTable(header, rows),
    '',
    `- load average (1 min) ${loadAtStart[0]?.toFixed(2)} at the start, ${loadAtEnd[0]?.toFixed(2)} at the end; ${cpus().length} CPUs; fdatasync of 4 KiB ${fsyncMs.toFixed(2)} ms`,
    committed === undefined
      ? '- no committed result yet (bench/results/cpu-per-job.json at HEAD): run with --save and commit it'
      : `- the committed figures were measured on ${committed.date} under another load: for a decision, compare checkouts in one run (--against main)`,
    '- an engine feature that is not used may cost at most 5 % (BRIEFING): server µs/job above +5 % against the interleaved baseline needs a look',
  ].join('\n'),
);

if (args.save) {
  const saved: SavedResult = {
    commit: git('rev-parse', '--short', 'HEAD'),
    date: new Date().toISOString().slice(0, 10),
    command: `npx tsx bench/cpu-per-job.ts ${process.argv.slice(2).join(' ')}`.trim(),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}, Node ${process.version}`,
    loadAverage: loadAtEnd.map((l) => Number(l.toFixed(2))),
    runs,
    figures: Object.fromEntries(figureNames.map((n) => [n, Number(ours[n].toFixed(2))])) as Figures,
  };
  writeFileSync(resultPath, `${JSON.stringify(saved, null, 2)}\n`);
  console.error(`cpu-per-job: wrote ${resultPath}`);
}
