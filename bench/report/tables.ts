import { baselineSystem } from '../systems/registry.ts';
import type { PhaseResult } from '../workloads/phase.ts';
import { fixed, int, markdownTable, mb, ms, rate, ratio } from './format.ts';
import type { BenchReport, SystemResult } from './results.ts';
import { anyIncomplete, jobsPerSec, med, phaseRuns } from './select.ts';

/** One markdown table per workload, plus the fsync check and the settings each system used. */

/** Jobs/s; a phase that hit its time limit is starred and says how many jobs it did. */
function rateCell(runs: readonly PhaseResult[]): string {
  const figure = rate(jobsPerSec(runs));
  if (!anyIncomplete(runs)) return figure;
  const done = runs.map((p) => `${int(p.jobsDone)} of ${int(p.jobsPlanned)}`).join(', ');
  return `${figure}* (${done} jobs)`;
}

/** "p50 / p99 / p999" of one operation, median over repetitions. */
function pcts(runs: readonly PhaseResult[], op: string, which: 'all' | 'p50p99' = 'all'): string {
  const p50 = ms(med(runs, (p) => p.latency[op]?.p50Ms));
  const p99 = ms(med(runs, (p) => p.latency[op]?.p99Ms));
  if (which === 'p50p99') return `${p50} / ${p99}`;
  return `${p50} / ${p99} / ${ms(med(runs, (p) => p.latency[op]?.p999Ms))}`;
}

function baseline(report: BenchReport): SystemResult | undefined {
  return report.systems.find((s) => s.id === baselineSystem);
}

/** fsync-family calls per job in the strace check at `concurrency`, as "enqueue / drain". */
function syncsPerJob(s: SystemResult, concurrency: unknown): string {
  const at = (phase: string) =>
    fixed(s.fsyncChecks.find((c) => c.concurrency === concurrency && c.phase === phase)?.perJob, 2);
  return `${at('enqueue')} / ${at('drain')}`;
}

/** Mean group-commit batch: jobs done per `commits` counter step, for drivers that count commits. */
function jobsPerCommit(runs: readonly PhaseResult[]): string {
  return fixed(
    med(runs, (p) => {
      const commits = p.serverCounterDeltas?.commits;
      return commits ? p.jobsDone / commits : undefined;
    }),
    1,
  );
}

function throughputTable(report: BenchReport, workload: 'W1' | 'W3'): string | undefined {
  const ran = report.systems.filter((s) => phaseRuns(s, workload, 'enqueue').length > 0);
  if (ran.length === 0) return undefined;
  const base = baseline(report);
  const withCommits = ran.some((s) =>
    s.runs.some((r) => r.phases.some((p) => p.serverCounterDeltas?.commits)),
  );
  const baseRate = (phase: string) =>
    base === undefined ? undefined : jobsPerSec(phaseRuns(base, workload, phase));
  const rows = ran.map((s) => {
    const enq = phaseRuns(s, workload, 'enqueue');
    const drain = phaseRuns(s, workload, 'drain');
    const cpu = (runs: readonly PhaseResult[], pick: (p: PhaseResult) => number) => int(med(runs, pick));
    const common = [
      s.label,
      rateCell(enq),
      ratio(jobsPerSec(enq), baseRate('enqueue')),
      rateCell(drain),
      ratio(jobsPerSec(drain), baseRate('drain')),
    ];
    const latency =
      workload === 'W1'
        ? [pcts(enq, 'enqueue'), pcts(drain, 'reserve+ack')]
        : [
            pcts(enq, 'enqueueBatch', 'p50p99'),
            pcts(drain, 'reserveBatch', 'p50p99'),
            pcts(drain, 'ackBatch', 'p50p99'),
          ];
    const batching = workload === 'W3' ? [`${s.batch.enqueue} / ${s.batch.reserve} / ${s.batch.ack}`] : [];
    return [
      ...common,
      ...batching,
      ...latency,
      `${cpu(enq, (p) => p.serverCpuUsPerJob)} / ${cpu(drain, (p) => p.serverCpuUsPerJob)}`,
      `${cpu(enq, (p) => p.clientCpuUsPerJob)} / ${cpu(drain, (p) => p.clientCpuUsPerJob)}`,
      mb(med([...enq, ...drain], (p) => p.serverPeakRssBytes)),
      `${int(med(enq, (p) => p.otherCpuPercent))} / ${int(med(drain, (p) => p.otherCpuPercent))}`,
      ...(workload === 'W1' ? [syncsPerJob(s, report.options.concurrency)] : []),
      ...(withCommits ? [`${jobsPerCommit(enq)} / ${jobsPerCommit(drain)}`] : []),
    ];
  });
  const latencyHeader =
    workload === 'W1'
      ? ['enqueue p50 / p99 / p999 ms', 'reserve+ack p50 / p99 / p999 ms']
      : ['enqueueBatch p50 / p99 ms', 'reserveBatch p50 / p99 ms', 'ackBatch p50 / p99 ms'];
  const header = [
    'system',
    'enqueue jobs/s',
    '× BullMQ',
    'drain jobs/s',
    '× BullMQ',
    ...(workload === 'W3' ? ['batching enqueue / reserve / ack'] : []),
    ...latencyHeader,
    'server CPU µs/job enq / drain',
    'client CPU µs/job enq / drain',
    'server peak RSS MB',
    'other load % enq / drain',
    ...(workload === 'W1' ? ['fsyncs/job enq / drain (strace check)'] : []),
    ...(withCommits ? ['jobs per commit enq / drain'] : []),
  ];
  return markdownTable(header, rows);
}

function roundTripTable(report: BenchReport): string | undefined {
  const ran = report.systems.filter((s) => phaseRuns(s, 'W2', 'round').length > 0);
  if (ran.length === 0) return undefined;
  const rows = ran.map((s) => {
    const runs = phaseRuns(s, 'W2', 'round');
    return [
      s.label,
      pcts(runs, 'enqueue'),
      pcts(runs, 'reserve'),
      pcts(runs, 'ack'),
      pcts(runs, 'round'),
      rateCell(runs),
      int(med(runs, (p) => p.serverCpuUsPerJob)),
    ];
  });
  const header = [
    'system',
    'enqueue p50 / p99 / p999 ms',
    'reserve p50 / p99 / p999 ms',
    'ack p50 / p99 / p999 ms',
    'round p50 / p99 / p999 ms',
    'rounds/s',
    'server CPU µs/round',
  ];
  return markdownTable(header, rows);
}

export function w4Levels(report: BenchReport): number[] {
  const levels = new Set<number>();
  for (const s of report.systems) for (const r of s.runs) if (r.workload === 'W4') levels.add(r.concurrency);
  return [...levels].sort((a, b) => a - b);
}

function scalingTable(report: BenchReport): string | undefined {
  const levels = w4Levels(report);
  if (levels.length === 0) return undefined;
  const rows = report.systems.flatMap((s) =>
    ['enqueue', 'drain'].map((phase) => [
      s.label,
      phase,
      ...levels.map((c) => rateCell(phaseRuns(s, 'W4', phase, c))),
      int(med(phaseRuns(s, 'W4', phase, levels.at(-1)), (p) => p.serverCpuUsPerJob)),
    ]),
  );
  return markdownTable(
    ['system', 'phase', ...levels.map((c) => `c=${c} jobs/s`), `server CPU µs/job at c=${levels.at(-1)}`],
    rows,
  );
}

function fsyncTable(report: BenchReport): string | undefined {
  const checked = report.systems.filter((s) => s.fsyncChecks.length > 0);
  if (checked.length === 0) return undefined;
  const shapes = [
    ...new Map(checked.flatMap((s) => s.fsyncChecks.map((c) => [`${c.concurrency}/${c.phase}`, c]))).values(),
  ];
  const rows = checked.map((s) => [
    s.label,
    s.durability,
    s.diskFdatasyncMedianUs.map((us) => int(us)).join(', '),
    ...shapes.map((shape) => {
      const c = s.fsyncChecks.find((x) => x.concurrency === shape.concurrency && x.phase === shape.phase);
      if (c === undefined) return '–';
      const commits = c.commits === undefined ? '' : `, ${int(c.commits)} commits`;
      return `${fixed(c.perJob, 2)} (${c.fsync + c.fdatasync} / ${c.jobs}${commits})`;
    }),
  ]);
  return markdownTable(
    [
      'system',
      'durability',
      'disk fdatasync µs before each start',
      ...shapes.map((c) => `${c.phase} c=${c.concurrency}: syncs/job (syncs / jobs[, commits])`),
    ],
    rows,
  );
}

function settingsTable(report: BenchReport): string {
  return markdownTable(
    ['system', 'settings'],
    report.systems.map((s) => [
      s.label,
      s.settings + (s.errors.length === 0 ? '' : ` — **failed: ${s.errors.join('; ')}**`),
    ]),
  );
}

/** The whole markdown report: machine, command, then one section per workload. */
export function renderMarkdown(report: BenchReport): string {
  const m = report.machine;
  const opts = report.options;
  const sections: string[] = [
    `Run ${report.startedAt}: \`${report.command}\``,
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB RAM, ${m.os}, Linux ${m.kernel}, Node ${m.node}; ` +
      `disk ${m.disk}; 4 KiB write + fdatasync median ${m.fdatasyncMedianUs} µs.`,
    `Figures are medians over ${opts.repeat} repetition(s) (systems interleaved, a fresh server each` +
      `${Number(opts.warmupJobs) > 0 ? `, warmed up by ${int(Number(opts.warmupJobs))} untimed W1 jobs before anything was timed` : ''}); ` +
      '`*` marks a phase that hit its time limit (`--phase-timeout-s`) before doing all its jobs. ' +
      'Ratios are against BullMQ in the same run. "Other load" is the CPU that processes outside the ' +
      'benchmark used during the phase, in % of all cores: this machine is shared, so a high value ' +
      'means the figure is depressed by a neighbour.',
  ];
  const add = (title: string, table: string | undefined, note: string) => {
    if (table !== undefined) sections.push(`### ${title}\n\n${note}\n\n${table}`);
  };
  add(
    'W1: 50 producers, then 50 workers, one job at a time',
    throughputTable(report, 'W1'),
    `${int(Number(opts.jobs))} jobs of ${opts.payloadBytes} bytes, ${opts.concurrency} producers each awaiting one enqueue, ` +
      `then ${opts.concurrency} workers each doing reserve(1) → ack.`,
  );
  add(
    'W2: one client, enqueue → reserve → ack in sequence',
    roundTripTable(report),
    `${opts.w2Rounds} rounds.`,
  );
  add(
    'W3: batches of 100',
    throughputTable(report, 'W3'),
    `${int(Number(opts.jobs))} jobs, ${opts.w3Concurrency} producers each awaiting one batch of ${opts.batchSize}, then ` +
      `${opts.w3Concurrency} workers each reserving up to ${opts.batchSize} and acking them. ` +
      '`native`: one request per batch; `pipelined`: one request per job, written back to back (emulated).',
  );
  add(
    'W4: concurrency scaling (W1 shape)',
    scalingTable(report),
    `${int(Number(opts.w4Jobs))} jobs per level, each phase limited to ${opts.w4TimeoutS} s.`,
  );
  add(
    'fsync check (strace -c -f -e trace=fsync,fdatasync on the server)',
    fsyncTable(report),
    'Small separate runs under strace (not timed). About 1 sync per job at concurrency 1 means the ' +
      'system syncs before acknowledging each operation; fewer at high concurrency is group commit. ' +
      'For systems that count their commits (sepp), the commits of the same phase: one sync per commit ' +
      'is the durable mode working as designed.',
  );
  sections.push(`### Settings\n\n${settingsTable(report)}`);
  return `${sections.join('\n\n')}\n`;
}
