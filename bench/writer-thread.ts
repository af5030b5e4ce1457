/**
 * The writer-thread experiment (issue 16, "pipelining"): would SQLite on a dedicated
 * worker thread make the server faster? Compares, on the real schema and the server's
 * own prepared statements and group committer, two writers with the same workloads:
 *
 *   same     the server today: batches form on setImmediate, the SQL and the COMMIT
 *            (WAL write + fsync, synchronous=FULL) run on the main thread
 *   thread   the main thread forms the batches the same way and posts them to a
 *            worker_threads writer, the only writer, which runs each batch's SQL and
 *            COMMIT in order and answers after its COMMIT returned; the main thread
 *            acknowledges a job only then (the same durability); the next batch fills
 *            meanwhile (--in-flight batches posted and unanswered at most)
 *
 * Workloads (lib/writer-workloads.ts): W1 enqueue (--producers closed-loop producers,
 * each awaiting its ack), W1 drain of those jobs (as many consumers, each sending its
 * ack with its next lease), W2 rounds (one client: enqueue + lease in one commit, then
 * the ack). Each (mode, run) is a fresh child process with a fresh data directory;
 * modes alternate (same, thread, same, thread, …) and the table shows medians.
 *
 *   npx tsx bench/writer-thread.ts [--runs 3] [--jobs 20000] [--rounds 1000]
 *                                  [--producers 50] [--work-us 0] [--in-flight 2] [--max-batch-ops 10000]
 *                                  [--modes same,thread,packed]
 *                                  [--out FILE.md]   (also writes FILE.json: every run's figures)
 *
 * Not part of `npm test`; not the server: see docs/performance.md for what it says.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { machineDescription, markdownTable, median } from './engine-lib.ts';
import { type Phase, type PhaseResult, runWorkloads, type WorkloadOptions } from './lib/writer-workloads.ts';
import { openWriter, type WriterMode } from './lib/writers.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '1000' },
    producers: { type: 'string', default: '50' },
    'payload-bytes': { type: 'string', default: '256' },
    'work-us': { type: 'string', default: '0' },
    'in-flight': { type: 'string', default: '2' },
    'max-batch-ops': { type: 'string', default: '10000' },
    modes: { type: 'string', default: 'same,thread' },
    out: { type: 'string' },
    child: { type: 'string' },
  },
});

const allModes: readonly WriterMode[] = ['same', 'thread', 'packed'];
const modes = args.modes.split(',').map((name) => {
  const mode = allModes.find((m) => m === name);
  if (mode === undefined) throw new Error(`--modes: ${name} is not one of ${allModes.join(', ')}`);
  return mode;
});
if (modes[0] !== 'same') throw new Error('--modes: the first mode must be same (the baseline of the ratios)');
const phases: readonly Phase[] = ['w1-enqueue', 'w1-drain', 'w2-round'];

interface RunRecord {
  mode: WriterMode;
  run: number;
  load: string;
  phases: Record<Phase, PhaseResult>;
}

/** One (mode, run): a fresh data directory, the three phases, the figures as JSON on stdout. */
async function child(mode: WriterMode): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-writer-thread-'));
  try {
    const writer = await openWriter(mode, dataDir, {
      maxInFlight: Number(args['in-flight']),
      maxBatchOps: Number(args['max-batch-ops']),
    });
    const options: WorkloadOptions = {
      jobs: Number(args.jobs),
      producers: Number(args.producers),
      rounds: Number(args.rounds),
      payloadBytes: Number(args['payload-bytes']),
      workUs: Number(args['work-us']),
    };
    const results = await runWorkloads(writer, options);
    await writer.close();
    process.stdout.write(`${JSON.stringify(results)}\n`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return 'uptime unavailable';
  }
}

function spawnChild(mode: WriterMode): Promise<Record<Phase, PhaseResult>> {
  const forwarded = [
    'runs',
    'jobs',
    'rounds',
    'producers',
    'payload-bytes',
    'work-us',
    'in-flight',
    'max-batch-ops',
    'modes',
  ] as const;
  const childArgs = forwarded.flatMap((name) => [`--${name}`, String(args[name])]);
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [...process.execArgv, new URL(import.meta.url).pathname, '--child', mode, ...childArgs],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`the ${mode} run exited with ${code}`));
      else resolve(JSON.parse(out) as Record<Phase, PhaseResult>);
    });
  });
}

async function parent(): Promise<void> {
  const runs = Number(args.runs);
  const records: RunRecord[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const mode of modes) {
      const load = uptime();
      console.error(`run ${run}/${runs} ${mode}: ${load}`);
      records.push({ mode, run, load, phases: await spawnChild(mode) });
    }
  }
  const report = render(records, runs, uptime());
  console.log(report);
  if (args.out !== undefined) {
    writeFileSync(args.out, report);
    writeFileSync(`${args.out.replace(/\.md$/, '')}.json`, `${JSON.stringify(records, null, 1)}\n`);
  }
}

/** The figures of the table, per phase and mode: each the median over the runs. */
const figures: readonly {
  name: string;
  of: (p: PhaseResult) => number;
  digits: number;
  threadOnly?: true;
}[] = [
  { name: 'units/s', of: (p) => p.units / (p.elapsedMs / 1000), digits: 0 },
  { name: 'W2 round p50 ms', of: (p) => p.roundP50Ms ?? Number.NaN, digits: 3 },
  { name: 'process CPU µs/unit', of: (p) => (p.userUs + p.systemUs) / p.units, digits: 1 },
  { name: '… user', of: (p) => p.userUs / p.units, digits: 1 },
  { name: '… system', of: (p) => p.systemUs / p.units, digits: 1 },
  { name: 'main thread CPU µs/unit', of: (p) => p.mainThreadUs / p.units, digits: 1 },
  // `same` has no writer thread: its SQL's CPU is in the main thread's figure.
  { name: 'writer thread CPU µs/unit', of: (p) => p.writerThreadUs / p.units, digits: 1, threadOnly: true },
  { name: 'main event loop busy %', of: (p) => 100 * p.mainBusy, digits: 1 },
  { name: 'writer in a batch %', of: (p) => (100 * p.batchMs) / p.elapsedMs, digits: 1 },
  { name: 'commits/s', of: (p) => p.commits / (p.elapsedMs / 1000), digits: 0 },
  { name: 'ops/commit', of: (p) => p.operations / p.commits, digits: 1 },
  { name: 'ms per batch (SQL + COMMIT)', of: (p) => p.batchMs / p.commits, digits: 2 },
];

function render(records: readonly RunRecord[], runs: number, loadAtEnd: string): string {
  const lines: string[] = [
    '# Writer thread vs same-thread group commit (bench/writer-thread.ts)',
    '',
    `Command: \`npx tsx bench/writer-thread.ts --runs ${runs} --jobs ${args.jobs} --rounds ${args.rounds}` +
      ` --producers ${args.producers} --work-us ${args['work-us']} --in-flight ${args['in-flight']}` +
      ` --max-batch-ops ${args['max-batch-ops']} --modes ${modes.join(',')}\``,
    '',
    `Medians of ${runs} runs per mode, modes interleaved (${modes.join(', ')}, …), each run a fresh` +
      ' process and data directory; durability `full` (synchronous=FULL) in both modes. A unit is a' +
      ' job (W1) or a round (W2: enqueue → lease → ack). `X/same` is the ratio of the medians.',
    '',
  ];
  for (const phase of phases) {
    const others = modes.slice(1);
    const header = ['figure', ...modes, ...others.map((mode) => `${mode}/same`)];
    const rows = figures
      .filter((figure) => !Number.isNaN(figure.of(records[0]!.phases[phase])))
      .map((figure) => {
        const medians = modes.map((mode) =>
          median(records.filter((r) => r.mode === mode).map((r) => figure.of(r.phases[phase]))),
        );
        const same = medians[0]!;
        const rest = medians.slice(1);
        if (figure.threadOnly) {
          return [
            figure.name,
            '— (main)',
            ...rest.map((m) => m.toFixed(figure.digits)),
            ...rest.map(() => '—'),
          ];
        }
        const ratios = rest.map((m) => (same === 0 ? '—' : `${(m / same).toFixed(2)}×`));
        return [figure.name, ...medians.map((m) => m.toFixed(figure.digits)), ...ratios];
      });
    lines.push(`## ${phase}`, '', markdownTable(header, rows), '');
  }
  lines.push('## Each run (units/s: W1 enqueue, W1 drain, W2 rounds)', '');
  lines.push(
    markdownTable(
      ['run', 'mode', ...phases, 'load before the run (uptime)'],
      records.map((r) => [
        String(r.run),
        r.mode,
        ...phases.map((phase) => (r.phases[phase].units / (r.phases[phase].elapsedMs / 1000)).toFixed(0)),
        r.load.replace(/^.*load average: /, ''),
      ]),
    ),
    '',
  );
  lines.push(`Load at the end: ${loadAtEnd}`, '', '## Machine', '', ...machineDescription(tmpdir()), '');
  return lines.join('\n');
}

// Last, after every declaration above is initialised.
if (args.child !== undefined) {
  await child(args.child as WriterMode);
} else {
  await parent();
}
