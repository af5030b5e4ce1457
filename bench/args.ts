import { parseArgs } from 'node:util';
import { systems } from './systems/registry.ts';

/** The harness's command line, parsed once into a frozen object with units in the names. */
export interface BenchOptions {
  readonly workloads: readonly ('W1' | 'W2' | 'W3' | 'W4')[];
  readonly systems: readonly string[];
  readonly quick: boolean;
  /** Jobs of W1 and W3. */
  readonly jobs: number;
  /** W1-shaped jobs run on each fresh server before anything is timed (0: none). */
  readonly warmupJobs: number;
  readonly payloadBytes: number;
  /** W1's producers and workers. */
  readonly concurrency: number;
  readonly repeat: number;
  readonly w2Rounds: number;
  readonly w3Concurrency: number;
  readonly batchSize: number;
  readonly w4Levels: readonly number[];
  readonly w4Jobs: number;
  readonly w4TimeoutS: number;
  readonly phaseTimeoutS: number;
  readonly fsyncCheck: boolean;
  /** Before each timed phase, wait up to this long for the machine to be quiet (0: never). */
  readonly quietWaitS: number;
  readonly quietBelowPercent: number;
  readonly settings: ReadonlyMap<string, string>;
  /** Output path prefix: writes PREFIX.md, PREFIX.json, PREFIX-throughput.svg, PREFIX-w4.svg. */
  readonly out: string;
}

export const usage = `Usage: npm run bench -- [options]
  --workload W1,W2,W3,W4|all   workloads to run (default all)
  --systems a,b                 systems, from: ${[...systems.keys()].join(', ')} (default all but
                                sepp-base and sepp-pg-base, which need SEPP_BENCH_BASE_BUNDLE)
  --jobs N                      jobs in W1 and W3 (default 200000; --quick 5000)
  --warmup-jobs N               before anything is timed, enqueue and drain N jobs (W1's shape)
                                on each fresh server, untimed: figures of a warm process, not of
                                one still compiling its code (default 0)
  --quick                       small sizes everywhere, to check that everything works
  --concurrency N               W1 producers and workers (default 50)
  --repeat N                    run everything N times, systems interleaved; medians reported
                                (default 3; --quick 1)
  --w2-rounds N                 W2 rounds (default 5000; --quick 500)
  --w3-concurrency N            W3 producers and workers (default 8)
  --w4-levels 1,8,64,256        W4 concurrency levels
  --w4-jobs N                   jobs per W4 level (default 20000; --quick 1000)
  --w4-timeout-s S              time limit of each W4 phase (default 30)
  --phase-timeout-s S           time limit of every other phase (default 300)
  --no-fsync-check              skip the strace check
  --quiet-wait-s S              before each timed phase, wait up to S s for the machine to be
                                less than --quiet-below % busy (default 20; --quick 3; 0 = never)
  --quiet-below P               (default 25)
  --set system.key=value        a driver setting, e.g. bullmq.connection=per-client (repeatable)
  --out PREFIX                  output prefix (default bench/results/tmp/run-<time>)`;

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      workload: { type: 'string' },
      systems: { type: 'string' },
      jobs: { type: 'string' },
      'warmup-jobs': { type: 'string' },
      quick: { type: 'boolean', default: false },
      concurrency: { type: 'string' },
      repeat: { type: 'string' },
      'w2-rounds': { type: 'string' },
      'w3-concurrency': { type: 'string' },
      'w4-levels': { type: 'string' },
      'w4-jobs': { type: 'string' },
      'w4-timeout-s': { type: 'string' },
      'phase-timeout-s': { type: 'string' },
      'no-fsync-check': { type: 'boolean', default: false },
      'quiet-wait-s': { type: 'string' },
      'quiet-below': { type: 'string' },
      set: { type: 'string', multiple: true },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const quick = values.quick;
  const allWorkloads = ['W1', 'W2', 'W3', 'W4'] as const;
  const wl = (values.workload ?? 'all').toUpperCase();
  const workloads =
    wl === 'ALL'
      ? [...allWorkloads]
      : wl.split(',').map((w) => {
          const found = allWorkloads.find((a) => a === w.trim());
          if (found === undefined)
            throw new Error(`--workload: unknown workload "${w}", use W1, W2, W3, W4 or all`);
          return found;
        });
  const chosen =
    values.systems === undefined
      ? [...systems.keys()].filter((s) => s !== 'sepp-base' && s !== 'sepp-pg-base')
      : values.systems.split(',').map((s) => s.trim());
  for (const s of chosen) {
    if (!systems.has(s))
      throw new Error(`--systems: unknown system "${s}", known: ${[...systems.keys()].join(', ')}`);
  }
  const settings = new Map<string, string>();
  for (const kv of values.set ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0 || !kv.slice(0, eq).includes('.'))
      throw new Error(`--set "${kv}": use --set system.key=value`);
    settings.set(kv.slice(0, eq), kv.slice(eq + 1));
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  return Object.freeze({
    workloads,
    systems: chosen,
    quick,
    jobs: positive('jobs', values.jobs, quick ? 5000 : 200_000),
    warmupJobs:
      values['warmup-jobs'] === undefined || values['warmup-jobs'] === '0'
        ? 0
        : positive('warmup-jobs', values['warmup-jobs'], 0),
    payloadBytes: 256,
    concurrency: positive('concurrency', values.concurrency, 50),
    repeat: positive('repeat', values.repeat, quick ? 1 : 3),
    w2Rounds: positive('w2-rounds', values['w2-rounds'], quick ? 500 : 5000),
    w3Concurrency: positive('w3-concurrency', values['w3-concurrency'], 8),
    batchSize: 100,
    w4Levels: (values['w4-levels'] ?? '1,8,64,256').split(',').map((c) => positive('w4-levels', c, 1)),
    w4Jobs: positive('w4-jobs', values['w4-jobs'], quick ? 1000 : 20_000),
    w4TimeoutS: positive('w4-timeout-s', values['w4-timeout-s'], 30),
    phaseTimeoutS: positive('phase-timeout-s', values['phase-timeout-s'], 300),
    fsyncCheck: !values['no-fsync-check'],
    quietWaitS:
      values['quiet-wait-s'] === '0' ? 0 : positive('quiet-wait-s', values['quiet-wait-s'], quick ? 3 : 20),
    quietBelowPercent: positive('quiet-below', values['quiet-below'], 25),
    settings,
    out: values.out ?? `bench/results/tmp/run-${stamp}`,
  });
}
