/**
 * The instructions the server executes for W1's enqueue, counted by Valgrind (cachegrind,
 * no cache simulation): a count that the machine's load does not move, for a difference of a
 * few per cent between two builds that cpu-per-job's CPU times cannot resolve on a shared
 * machine. Each run starts a built server (`dist/sepp.cjs serve`, durability full) under
 * Valgrind, enqueues JOBS jobs as bench/cpu-per-job.ts does (50 producers, each awaiting one
 * `enqueue`), stops it with SIGTERM, and reads the total; the run with 0 jobs (start and stop
 * only) is subtracted, so a row says what the jobs cost. Two sizes tell the cost that grows
 * with the jobs (the slope) from a one-time one (V8 compiling the path: the intercept).
 *
 *   npx tsx bench/enqueue-instructions.ts [--jobs 5000,20000] [--against /path/to/checkout]...
 *
 * The checkouts must be built (`npm run build`). User-space instructions only: the kernel's
 * work (writes, fdatasync, sockets) is not counted, nor are cache misses. About 40× slower
 * than without Valgrind: a run of 20,000 jobs takes a minute or two.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable } from './engine-lib.ts';
import { freePort } from './lib/net.ts';
import { enqueueJobs } from './lib/sdk-phases.ts';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '5000,20000' },
    against: { type: 'string', multiple: true, default: [] },
  },
});
if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.error('enqueue-instructions: valgrind is not on PATH (apt-get install valgrind)');
  process.exit(2);
}
const sizes = [0, ...args.jobs.split(',').map(Number)];
const checkouts = [new URL('..', import.meta.url).pathname, ...args.against].map((c) => resolve(c));

/** Instructions of one server's life: start, `jobs` enqueued, SIGTERM. */
async function instructions(checkout: string, jobs: number): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-instr-'));
  const out = join(dataDir, 'cachegrind.out');
  const port = await freePort();
  const child = spawn(
    'valgrind',
    [
      '--tool=cachegrind',
      '--cache-sim=no',
      '--branch-sim=no',
      '--smc-check=all-non-file',
      `--cachegrind-out-file=${out}`,
      process.execPath,
      join(checkout, 'dist/sepp.cjs'),
      'serve',
      '--data-dir',
      join(dataDir, 'data'),
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
  const client = SeppClient.connect(`127.0.0.1:${port}`);
  try {
    await client.ready(600_000);
    if (jobs > 0) await enqueueJobs(client, 'w1', jobs, 50);
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
  const code = await exited;
  const summary = /^summary: (\d+)/m.exec(readFileSync(out, 'utf8'));
  rmSync(dataDir, { recursive: true, force: true });
  if (summary === null)
    throw new Error(`${checkout}: no cachegrind summary (exit ${code}): ${stderr.slice(-2000)}`);
  return Number(summary[1]);
}

const loadAtStart = loadavg()[0];
const counts = new Map<string, number[]>();
// Interleaved by size, so that both checkouts meet the same conditions (Valgrind's counts
// hardly depend on them, but the client's coalescing into messages does on timing).
for (const jobs of sizes) {
  for (const checkout of checkouts) {
    const n = await instructions(checkout, jobs);
    counts.set(checkout, [...(counts.get(checkout) ?? []), n]);
    console.error(
      `${checkout}: ${jobs} jobs, ${n.toLocaleString('en')} instructions; load ${loadavg()[0]?.toFixed(2)}`,
    );
  }
}
const base = checkouts[0]!;
const perJob = (checkout: string, i: number) =>
  (counts.get(checkout)![i]! - counts.get(checkout)![0]!) / sizes[i]!;
const rows = checkouts.flatMap((checkout) =>
  sizes.slice(1).map((jobs, k) => {
    const i = k + 1;
    const change =
      checkout === base ? '' : `${((perJob(base, i) / perJob(checkout, i) - 1) * 100).toFixed(1)} %`;
    return [
      checkout,
      jobs.toLocaleString('en'),
      Math.round(perJob(checkout, i)).toLocaleString('en'),
      change,
    ];
  }),
);
const slopeRows =
  sizes.length < 3
    ? []
    : checkouts.map((checkout) => {
        const a = sizes.length - 2;
        const b = sizes.length - 1;
        const slope = (counts.get(checkout)![b]! - counts.get(checkout)![a]!) / (sizes[b]! - sizes[a]!);
        return [checkout, `${sizes[a]}→${sizes[b]} (slope)`, Math.round(slope).toLocaleString('en'), ''];
      });
console.log(
  [
    `### Server instructions per enqueued job (Valgrind cachegrind; start and stop subtracted)`,
    '',
    markdownTable(
      ['checkout', 'jobs', 'instructions per job', 'this checkout against it'],
      [...rows, ...slopeRows],
    ),
    '',
    `- start-and-stop run: ${checkouts.map((c) => `${c} ${(counts.get(c)![0]! / 1e6).toFixed(0)} M`).join(', ')}`,
    `- load average (1 min) ${loadAtStart?.toFixed(2)} at the start, ${loadavg()[0]?.toFixed(2)} at the end (it moves the times, hardly the counts)`,
  ].join('\n'),
);
