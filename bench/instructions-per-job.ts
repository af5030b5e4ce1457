/**
 * The instructions the server executes per job of W1, counted by Valgrind (cachegrind, no cache
 * simulation): a count that the machine's load does not move, for a difference of a few per cent
 * between two builds that cpu-per-job's CPU times cannot resolve on a shared machine.
 *
 *   npx tsx bench/instructions-per-job.ts [--jobs 1000,6000] [--repeats 2] [--phases enqueue,drain] [--api-key]
 *       [--node-flags=--predictable] [--keep DIR] [--against /path/to/checkout]...
 *
 * Each run starts a checkout's built server (`dist/sepp.cjs serve`, durability full, a fresh data
 * directory) under Valgrind, does its work from this process, stops the server with SIGTERM and
 * reads the total. Each phase is run at two sizes, SMALL and JOBS, and the table gives the slope,
 * (count at JOBS − count at SMALL) / (JOBS − SMALL): what one more job costs once the server has
 * started and V8 has compiled most of the path (subtracting a run that only starts and stops the
 * server leaves the variation of its start in, and the compiling the first jobs pay). The runs
 * of one repeat, every checkout's interleaved:
 *   enqueue   SMALL, then JOBS jobs enqueued as cpu-per-job does: 50 producers each awaiting one
 *             `enqueue`
 *   drain     JOBS jobs enqueued in batches of 100, then one Worker (concurrency 50,
 *             `prefetch: 0`) acks SMALL, then (the other run) all JOBS of them
 * --api-key gives the server one admin API key (`[[grpc.api_keys]]`) and the client sends it: every
 * job then carries its creator. The node flags default to `--predictable` (which implies
 * `--single-threaded`): V8 then compiles and collects garbage on the main thread, at points the
 * program reaches alike in every run, and on a fixed heap-growing schedule, instead of in
 * background threads racing it and on timers. With `--single-threaded` alone, four runs of one
 * build of 500 jobs spread over 90 M instructions and the slope to 2,500 jobs over 25 %; with
 * `--predictable`, runs of 1,000 jobs agree within ~1 M. What still varies is the timing the
 * server meets (how many calls one read of the socket brings, how many enqueues one commit groups)
 * and, the most, whether a major GC's marking (~40 M instructions, with the write barrier it turns
 * on) falls inside the larger run: the table shows the spread of the repeats, and each slope once
 * more without V8's GC functions. The flags change what V8 does: compare counts taken with the
 * same flags only.
 *
 * --keep DIR keeps each run's Valgrind output there (`cg_annotate FILE`, `cg_diff A B`: by function,
 * named for native code such as SQLite's, not for the code V8 compiled).
 *
 * The checkouts must be built (`npm run build`). User-space instructions only: the kernel's work
 * (writes, fdatasync, sockets) is not counted, nor are cache misses. Valgrind runs the server about
 * 50× slower than without it: a run of 6,000 jobs takes a minute or two.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable } from './engine-lib.ts';
import { freePort } from './lib/net.ts';
import { drainJobs, enqueueJobs } from './lib/sdk-phases.ts';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000,6000' },
    repeats: { type: 'string', default: '2' },
    phases: { type: 'string', default: 'enqueue' },
    'api-key': { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '--predictable' },
    against: { type: 'string', multiple: true, default: [] },
    keep: { type: 'string' },
  },
});
const [small, jobs] = args.jobs.split(',').map(Number);
const repeats = Number(args.repeats);
const whole = (n: number | undefined): n is number => n !== undefined && Number.isInteger(n) && n >= 1;
if (!whole(small) || !whole(jobs) || small >= jobs || !whole(repeats)) {
  console.error(
    'instructions-per-job: --jobs takes SMALL,JOBS (whole numbers, SMALL < JOBS), --repeats a whole number ≥ 1',
  );
  process.exit(2);
}
if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.error('instructions-per-job: valgrind is not on PATH (apt-get install valgrind)');
  process.exit(2);
}
const nodeFlags = args['node-flags'].split(' ').filter((flag) => flag !== '');
const checkouts = [new URL('..', import.meta.url).pathname, ...args.against].map((c) => resolve(c));
/** The key of --api-key: the config holds its SHA-256 only. */
const apiKey = 'instructions-bench-key-0123456789';

type Run = 'enqueue-small' | 'enqueue' | 'drain-small' | 'drain';
const phaseNames = args.phases.split(',');
const runs: Run[] = [
  ...(phaseNames.includes('enqueue') ? (['enqueue-small', 'enqueue'] as const) : []),
  ...(phaseNames.includes('drain') ? (['drain-small', 'drain'] as const) : []),
];
if (runs.length === 0 || phaseNames.some((p) => p !== 'enqueue' && p !== 'drain')) {
  console.error('instructions-per-job: --phases takes enqueue, drain or both (comma-separated)');
  process.exit(2);
}

/** The work of one run, on a ready client. */
async function work(client: SeppClient, run: Run): Promise<void> {
  if (run === 'enqueue-small' || run === 'enqueue')
    await enqueueJobs(client, 'w1', run === 'enqueue' ? jobs! : small!, 50);
  if (run === 'drain-small' || run === 'drain') {
    await enqueueJobs(client, 'w1', jobs!, 1, 100);
    await drainJobs(client, 'w1', run === 'drain' ? jobs! : small!, {
      concurrency: 50,
      transport: 'stream',
      prefetch: 0,
    });
  }
}

/** How many Valgrind outputs --keep has kept, for their names. */
let kept = 0;

/** Instructions of one server's life: start, the run's work, SIGTERM. */
async function instructions(checkout: string, run: Run): Promise<Count> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-instr-'));
  const out = join(dir, 'cachegrind.out');
  const port = await freePort();
  const config: string[] = [];
  if (args['api-key']) {
    const sha256 = createHash('sha256').update(apiKey).digest('hex');
    writeFileSync(
      join(dir, 'sepp.toml'),
      `[[grpc.api_keys]]\nname = "bench"\nrole = "admin"\nkey_sha256 = "${sha256}"\n`,
    );
    config.push('--config', join(dir, 'sepp.toml'));
  }
  const child = spawn(
    'valgrind',
    [
      '--tool=cachegrind',
      '--cache-sim=no',
      '--branch-sim=no',
      '--smc-check=all-non-file',
      `--cachegrind-out-file=${out}`,
      process.execPath,
      ...nodeFlags,
      join(checkout, 'dist/sepp.cjs'),
      'serve',
      ...config,
      '--data-dir',
      join(dir, 'data'),
      '--grpc-listen',
      `127.0.0.1:${port}`,
      '--admin-listen',
      '127.0.0.1:0',
      '--durability',
      'full',
      '--log-level',
      'error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const client = SeppClient.connect(`127.0.0.1:${port}`, args['api-key'] ? { apiKey } : {});
  try {
    await client.ready(600_000);
    await work(client, run);
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
  const code = await exited;
  const text = readFileSync(out, 'utf8');
  const summary = /^summary: (\d+)/m.exec(text);
  if (args.keep !== undefined) {
    mkdirSync(args.keep, { recursive: true });
    copyFileSync(out, join(args.keep, `${basename(checkout)}-${run}-${++kept}.cachegrind.out`));
  }
  rmSync(dir, { recursive: true, force: true });
  if (summary === null)
    throw new Error(`${checkout}: no cachegrind summary (exit ${code}): ${stderr.slice(-2000)}`);
  return { all: Number(summary[1]), gc: gcInstructions(text) };
}

/** A run's instructions: all of them, and those of V8's garbage collector (by function name). */
interface Count {
  all: number;
  gc: number;
}

/**
 * The functions of V8's garbage collector: marking (and the write barrier that marking turns on in
 * compiled code), scavenging, sweeping, evacuating. Whether a major GC's marking falls inside a
 * run or after it moves a run's count by ~40 M instructions (seen with --keep and cg_diff), so the
 * table gives the slope without them too.
 */
const gcFunction =
  /Mark|Scaveng|Sweep|Evacuat|Compact|RecordWrite|WriteBarrier|RememberedSet|SlotSet|Pretenuring|GCTracer|v8::internal::Heap::|heap::base::|cppgc::/;

/** The instructions of the GC's functions in a cachegrind output (`fn=NAME` then `LINE COUNT` lines). */
function gcInstructions(text: string): number {
  let inGc = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) inGc = gcFunction.test(line);
    else if (inGc && line !== '' && line.charCodeAt(0) >= 48 && line.charCodeAt(0) <= 57)
      sum += Number(line.slice(line.indexOf(' ') + 1));
  }
  return sum;
}

const loadAtStart = loadavg()[0];
/** counts[checkout's index][run][repeat]: by index, so that a checkout given twice (a control) is run twice. */
const counts = checkouts.map(() => new Map(runs.map((r) => [r, [] as Count[]])));
for (let repeat = 0; repeat < repeats; repeat++) {
  for (const run of runs) {
    for (const [k, checkout] of checkouts.entries()) {
      const n = await instructions(checkout, run);
      counts[k]!.get(run)!.push(n);
      console.error(
        `${checkout}: ${run}, ${n.all.toLocaleString('en')} instructions (GC ${n.gc.toLocaleString('en')}); load ${loadavg()[0]?.toFixed(2)}`,
      );
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** Per job of each repeat: the slope between the phase's two sizes. */
const phases = [
  { name: 'enqueue (50 producers)', run: 'enqueue' as const, less: 'enqueue-small' as const },
  { name: 'drain (concurrency 50)', run: 'drain' as const, less: 'drain-small' as const },
].filter((phase) => runs.includes(phase.run));
/** `of` a run's count: all its instructions or those outside the GC. */
const parts = [
  { part: 'all', of: (n: Count) => n.all },
  { part: 'without the GC', of: (n: Count) => n.all - n.gc },
];
const perJob = (k: number, run: Run, less: Run, of: (n: Count) => number) => {
  const c = counts[k]!;
  return c.get(run)!.map((n, i) => (of(n) - of(c.get(less)![i]!)) / (jobs - small));
};
const rows = phases.flatMap(({ name, run, less }) =>
  parts.flatMap(({ part, of }) =>
    checkouts.map((checkout, k) => {
      const each = perJob(k, run, less, of);
      const m = median(each);
      const spread = ((Math.max(...each) - Math.min(...each)) / m) * 100;
      const against = median(perJob(0, run, less, of));
      return [
        name,
        part,
        checkout,
        each.map((x) => Math.round(x).toLocaleString('en')).join(', '),
        Math.round(m).toLocaleString('en'),
        `${spread.toFixed(2)} %`,
        k === 0 ? '' : `${((against / m - 1) * 100).toFixed(2)} %`,
      ];
    }),
  ),
);
console.log(
  [
    `### Server instructions per job (Valgrind cachegrind; slope ${small.toLocaleString('en')} → ${jobs.toLocaleString('en')} jobs, ${repeats} repeats, node ${nodeFlags.join(' ') || '(no flags)'}${args['api-key'] ? ', with an API key' : ''})`,
    '',
    markdownTable(
      [
        'phase',
        'instructions',
        'checkout',
        'per job, each repeat',
        'median',
        'spread',
        `${checkouts[0]} against it`,
      ],
      rows,
    ),
    '',
    `- the ${runs[0]} run (median, start and stop included): ${checkouts.map((c, k) => `${c} ${(median(counts[k]!.get(runs[0]!)!.map((n) => n.all)) / 1e6).toFixed(1)} M`).join(', ')}`,
    `- spread: (largest − smallest) / median of the repeats' per-job counts`,
    `- load average (1 min) ${loadAtStart?.toFixed(2)} at the start, ${loadavg()[0]?.toFixed(2)} at the end (it moves the times, hardly the counts)`,
  ].join('\n'),
);
