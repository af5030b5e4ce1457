/**
 * The top entries of a V8 CPU profile (`.cpuprofile`, from `node --cpu-prof` or the
 * benchmarks' --profile): self time per function, and the share of the profile.
 *
 *   npx tsx bench/profile-top.ts FILE.cpuprofile [--top 25] [--w5-parts JOBS]
 *
 * --w5-parts JOBS: instead, the server's time in W5's parts (bench/results/w5-cpu-2026-12-06.md),
 * µs per job over JOBS jobs: each sample goes to the first part, in the list's order, that a
 * frame of its stack matches. The profiler's own start (`Profiler.start`'s dispatch, taken in the
 * server's thread) is a part of its own, not CPU the server spends on W5. Then the run in two
 * phases, split at the last sample of a flow's enqueue: each phase's wall time and its shares
 * (the server's CPU, `fdatasync`, idle), so the drain alone shows what the Worker's rounds cost.
 *
 * --client-parts JOBS: the same for a client's profile (the benchmark's own process: producers and
 * the SDK Worker, bench/results/sdk-worker-cpu-2026-12-07.md).
 *
 * --enqueue-parts JOBS: the server's CPU in W1's enqueue (bench/cpu-per-job.ts --profile-every),
 * µs per job over JOBS jobs, per part of the enqueue's path, for several profiles at once. Files
 * named `…-tN.cpuprofile` (N: the checkout, 0 the one measured) are grouped by N and shown side
 * by side, each part's median over a group's runs and its range. A sample goes to the innermost
 * frame of its stack that a part names (Node's and native frames pass it to their caller). The
 * shares come from the samples' counts (a descheduled gap is one sample, not its wall time); the
 * µs come from the main thread's CPU measured beside the profile (`.threads.json`, its schedstat),
 * which is the one thread a profile samples; the other threads (V8's GC and compiler helpers, the
 * profiler's sampler) are a row of their own. Idle and `fdatasync` (a blocking wait) are left out
 * of the shares, so the little CPU the sync itself costs is spread over the parts.
 *
 * --under REGEX: the top entries of the samples with a frame (`function file`) matching REGEX only,
 * so they say where one part's time goes (`--under '^enqueueFlowsIn '`).
 *
 * --cap-us N: a sample that is not idle counts at most N µs. On a loaded machine the process is
 * descheduled between samples, and the whole gap (tens of ms) goes to whatever frame was running:
 * with V8's 1 ms interval, `--cap-us 2000` leaves the time the process actually ran.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { markdownTable, median } from './engine-lib.ts';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: {
    top: { type: 'string', default: '25' },
    'w5-parts': { type: 'string' },
    'client-parts': { type: 'string' },
    'enqueue-parts': { type: 'string' },
    under: { type: 'string' },
    'cap-us': { type: 'string' },
  },
  allowPositionals: true,
});
const capUs = values['cap-us'] === undefined ? Number.POSITIVE_INFINITY : Number(values['cap-us']);

/** Sample i's time: its gap from the one before, at most --cap-us unless it is idle. */
function sampleUs(profile: CpuProfile, node: ProfileNode | undefined, i: number): number {
  const delta = profile.timeDeltas[i] ?? 0;
  return node?.callFrame.functionName === '(idle)' ? delta : Math.min(delta, capUs);
}

/** W5's parts: a name, and what a frame (`function file`) of the sample's stack matches. */
const w5Parts: [string, RegExp][] = [
  ['idle', /^\(idle\)/],
  ['fdatasync (a blocking wait, not CPU)', /^fdatasync /],
  ['the profiler itself (not W5)', /^post node:inspector/],
  ['counters (queue_counts)', /^(count|adjust) src\/(engine\/context|store\/sqlite\/counts)/],
  ['events, records', /^(emit|record|recordCompleted|attemptsEnded) src\/engine/],
  ["collector's lease: dependency results", /^dependencyResultsOf /],
  ['lease: the rest', /^leaseOrWait /],
  ['ack: release of dependents (sets)', /^endKept /],
  ['ack: through the Settler one by one', /^tryAck /],
  ['ack: keptCompleted', /^keptCompleted /],
  ['ack: completeDependedOnMany', /^completeDependedOn src\/engine/],
  ['ack: multi-row DELETE', /^ackMany /],
  ['ack: the rest', /^ackEach /],
  ['flow enqueue: edges', /^add src\/store\/sqlite\/dependencies/],
  ["flow enqueue: the jobs' INSERT", /^insert src\/store\/sqlite\/jobs/],
  ["flow enqueue: the engine's rest", /^(enqueueFlowsIn|enqueueFlow) src\/engine/],
  ['rpc: enqueueFlowFromProto', /^enqueueFlowFromProto /],
  ['commit, savepoints', /^flush src\/store\/sqlite\/group-commit/],
  ['codec: generated', /^(decode|encode|fromPartial) src\/gen/],
  ['codec: hand-written', /(work-response|work-request|produce-response)-codec/],
  ['garbage collector', /^\(garbage/],
  ['(program)', /^\(program/],
  ['gRPC and the rest', /./],
];

/**
 * A client's parts (the SDK Worker's path and the producers'). Unlike W5's parts, a sample
 * goes to the innermost frame of its stack that a part names (a part's test sees the frame
 * and its caller): everything the Worker does runs under a stream's `emit` or the microtask
 * queue, so the outermost frames would say little. A frame is `function file`, the file from
 * its last `src/` (so the SDK's `src/worker.ts`, grpc-js's `src/call.js`).
 */
const clientParts: [string, (frame: string, caller: string) => boolean][] = [
  ['idle', (f) => /^\(idle\)/.test(f)],
  ["the profiler's own start", (f) => /^(post|dispatch) (node:inspector)?/.test(f) && !/ src\//.test(f)],
  ['garbage collector', (f) => /^\(garbage/.test(f)],
  ['(program)', (f) => /^\(program/.test(f)],
  [
    'producers: flows and enqueues (their encode included)',
    (f) =>
      /^\S+ src\/(flows|batch-senders|enqueue-batcher|enqueue-calls|convert|gen\/sepp\/v1\/(flow|produce))\.ts/.test(
        f,
      ),
  ],
  ['Work: encode of the settlements (generated)', (f) => /^encode src\/gen\/sepp\/v1\/work\.ts/.test(f)],
  ['Work: encode of the settlements (hand-written)', (f) => /^encode\w* src\/work-codec\.ts/.test(f)],
  ['Work: decode of the jobs and answers (hand-written)', (f) => /^\S+ src\/work-codec\.ts/.test(f)],
  [
    'Work: decode of the jobs and answers (generated)',
    (f) => /^\S+ src\/gen\/sepp\/v1\/(work|job)\.ts/.test(f),
  ],
  ['Worker: trace lookup per job (trace.ts)', (f) => /^\S+ src\/trace\.ts/.test(f)],
  [
    'Worker: JSON payload decode',
    (f, c) => /^(parse|isJsonContentType) /.test(f) || /^isJsonContentType/.test(c),
  ],
  [
    'Worker: its events emitted (`emit`, listeners)',
    (f, c) => /^emit node:events/.test(f) && / src\/worker\.ts/.test(c),
  ],
  ['Worker: WorkerJob (jobs.ts, worker-job.ts)', (f) => /^\S+ src\/(jobs|worker-job)\.ts/.test(f)],
  ['Worker: run, settle, lease keeper', (f) => /^\S+ src\/(worker[\w-]*|lease-keeper|results)\.ts/.test(f)],
  ['Work stream transport (flush, settle, onMessage)', (f) => /^\S+ src\/work-stream-transport\.ts/.test(f)],
  ['promises, ticks', (f) => /^(runMicrotasks|processTicksAndRejections|nextTick) /.test(f)],
];

function printClientParts(profile: CpuProfile, parentOf: Map<number, ProfileNode>, jobs: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const partUs = new Map<string, number>();
  const rest = 'gRPC, HTTP/2, sockets and the rest';
  profile.samples.forEach((id, i) => {
    const stack = stackOf(byId.get(id), parentOf);
    let part = rest;
    for (let at = 0; at < stack.length && part === rest; at++) {
      const named = clientParts.find(([, test]) => test(stack[at]!, stack[at + 1] ?? ''));
      if (named !== undefined) part = named[0];
    }
    partUs.set(part, (partUs.get(part) ?? 0) + sampleUs(profile, byId.get(id), i));
  });
  printPartTable(partUs, jobs);
}

/** Each frame of a sample's stack, leaf first, as `function file`. */
function stackOf(node: ProfileNode | undefined, parentOf: Map<number, ProfileNode>): string[] {
  const stack: string[] = [];
  for (; node !== undefined; node = parentOf.get(node.id)) {
    const { functionName, url } = node.callFrame;
    stack.push(`${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src|clients)\//, '$1/')}`);
  }
  return stack;
}

function printW5Parts(profile: CpuProfile, parentOf: Map<number, ProfileNode>, jobs: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const partUs = new Map<string, number>();
  // Each sample's time, its part, and whether it is a flow's enqueue (for the phases).
  const timeline: { atUs: number; us: number; part: string; flow: boolean }[] = [];
  let atUs = 0;
  profile.samples.forEach((id, i) => {
    const stack = stackOf(byId.get(id), parentOf);
    const part = w5Parts.find(([, pattern]) => stack.some((frame) => pattern.test(frame)))![0];
    const us = sampleUs(profile, byId.get(id), i);
    atUs += us;
    partUs.set(part, (partUs.get(part) ?? 0) + us);
    timeline.push({ atUs, us, part, flow: part.startsWith('flow enqueue') });
  });
  printPartTable(partUs, jobs);
  const lastFlowUs = timeline.reduce((last, s) => (s.flow ? s.atUs : last), 0);
  console.log('\n| phase | wall ms | server CPU | fdatasync | idle |\n| --- | ---: | ---: | ---: | ---: |');
  for (const [name, inPhase] of [
    ['until the last flow was stored', (s: { atUs: number }) => s.atUs <= lastFlowUs],
    ['the drain after it', (s: { atUs: number }) => s.atUs > lastFlowUs],
  ] as const) {
    const samples = timeline.filter((s) => inPhase(s) && !s.part.startsWith('the profiler'));
    const wallUs = samples.reduce((sum, s) => sum + s.us, 0);
    if (wallUs === 0) continue; // no flow in the profile (--prefill's drain): one phase
    const share = (test: (part: string) => boolean) =>
      `${((samples.reduce((sum, s) => (test(s.part) ? sum + s.us : sum), 0) / wallUs) * 100).toFixed(0)} %`;
    console.log(
      `| ${name} | ${(wallUs / 1000).toFixed(0)} | ${share((p) => !notCpu(p))} | ${share((p) => p.startsWith('fdatasync'))} | ${share((p) => p === 'idle')} |`,
    );
  }
}

/** Not the process's CPU: waiting (idle, `fdatasync`) and the profiler's own start. */
const notCpu = (part: string) =>
  part === 'idle' || part.startsWith('fdatasync') || part.startsWith('the profiler');

/** µs per job of each part, largest first, and its share of the CPU (idle, `fdatasync` and the profiler left out). */
function printPartTable(partUs: Map<string, number>, jobs: number): void {
  const cpuUs = [...partUs].reduce((sum, [part, us]) => (notCpu(part) ? sum : sum + us), 0);
  console.log('| part | µs per job | share of CPU |\n| --- | ---: | ---: |');
  for (const [part, us] of [...partUs].sort((a, b) => b[1] - a[1])) {
    const share = notCpu(part) ? '–' : `${((us / cpuUs) * 100).toFixed(1)} %`;
    console.log(`| ${part} | ${(us / jobs).toFixed(1)} | ${share} |`);
  }
  console.log(`| total (without idle, fdatasync and the profiler) | ${(cpuUs / jobs).toFixed(1)} | |`);
}

/**
 * The enqueue's parts, innermost first: a sample goes to the first frame of its stack (leaf
 * first) that one of them names. A frame is `function path`, the path from its first
 * `node_modules/`, `src/` or `clients/` (so this tree's and a baseline's read alike).
 */
const enqueueParts: [string, RegExp][] = [
  ['garbage collector (main thread)', /^\(garbage collector\) /],
  ['(program): V8 and native code without a JS frame', /^\(program\) /],
  ['the profiler itself', /^(post|dispatch) node:inspector/],
  ['commit: BEGIN, savepoints, COMMIT (group-commit.ts)', / src\/store\/sqlite\/group-commit\.ts$/],
  [
    'SQLite INSERT of the jobs (jobs.ts, multi-row.ts, the native run)',
    / src\/store\/sqlite\/(jobs|multi-row)\.ts$/,
  ],
  ['store: the rest', / src\/store\//],
  ['engine: enqueue (validation, ids, rows, counts)', / src\/engine\//],
  ['telemetry (metrics, OpenTelemetry)', / (src\/telemetry\/|node_modules\/@opentelemetry\/)/],
  [
    'codec: Produce decode and answer encode',
    / (clients\/typescript\/src\/gen\/|src\/gen\/|node_modules\/@bufbuild\/|src\/rpc\/(produce-response-codec|wire-writer|utf8-fields|message-frames)\.ts$)/,
  ],
  ['rpc: Produce stream, admission, conversion (src/rpc)', / src\/rpc\//],
  ['grpc-js (with the HTTP/2 it calls)', / node_modules\/@grpc\//],
  ['sepp: the rest (app, config, utils)', / src\//],
];
const enqueueRest = 'Node: HTTP/2, sockets, timers, promises (no sepp or grpc-js frame)';

/** A profile's sample counts per enqueue part (idle and fdatasync apart). */
function enqueuePartCounts(profile: CpuProfile, parentOf: Map<number, ProfileNode>): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const frameOf = (node: ProfileNode) =>
    `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/^.*?\/(node_modules|src|clients)\//, '$1/')}`;
  const counts = new Map<string, number>();
  for (const id of profile.samples) {
    const leaf = byId.get(id);
    if (leaf === undefined) continue;
    const leafName = leaf.callFrame.functionName;
    let part = leafName === '(idle)' ? 'idle' : leafName === 'fdatasync' ? 'fdatasync' : undefined;
    for (
      let node: ProfileNode | undefined = leaf;
      part === undefined && node !== undefined;
      node = parentOf.get(node.id)
    ) {
      part = enqueueParts.find(([, pattern]) => pattern.test(frameOf(node!)))?.[0];
    }
    counts.set(part ?? enqueueRest, (counts.get(part ?? enqueueRest) ?? 0) + 1);
  }
  return counts;
}

/** The rows after the parts: what `.threads.json` measured beside the profile. */
const threadRows = ['main thread (schedstat)', 'other threads (schedstat)', 'process'];
/** The kinds of garbage collection bench/lib/server-child.ts counts (perf_hooks' names). */
const gcKindsShown = ['minor', 'major', 'incremental'];
/** The kernel's side of a profiled phase (bench/lib/server-child.ts, process.resourceUsage()). */
const kernelCounts = ['minorPageFaults', 'majorPageFaults', 'voluntarySwitches', 'involuntarySwitches'];
/** Rows that are counts, not µs per job. */
const countRows = ['samples on CPU', ...gcKindsShown.map((kind) => `GCs, ${kind}`), ...kernelCounts];

/** A profile's figures: µs per job of each part and thread row, GC pauses, and the counts. */
function enqueueFigures(file: string, jobs: number): Map<string, number> {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const counts = enqueuePartCounts(profile, parentOf);
  const threadsFile = file.replace(/\.cpuprofile$/, '.threads.json');
  if (!existsSync(threadsFile))
    throw new Error(`${threadsFile}: missing (bench/cpu-per-job.ts --profile writes it)`);
  const {
    cpuMs,
    gcs = {},
    kernel = {},
  } = JSON.parse(readFileSync(threadsFile, 'utf8')) as {
    cpuMs: { main: number; others: number };
    gcs?: Record<string, { count: number; ms: number }>;
    kernel?: Record<string, number>;
  };
  const onCpu = [...counts].filter(([part]) => part !== 'idle' && part !== 'fdatasync');
  const cpuSamples = onCpu.reduce((sum, [, n]) => sum + n, 0);
  const perJob = (ms: number) => (ms * 1000) / jobs;
  const figures = new Map<string, number>();
  for (const [part, n] of onCpu) figures.set(part, perJob((n / cpuSamples) * cpuMs.main));
  figures.set(threadRows[0]!, perJob(cpuMs.main));
  figures.set(threadRows[1]!, perJob(cpuMs.others));
  figures.set(threadRows[2]!, perJob(cpuMs.main + cpuMs.others));
  for (const kind of gcKindsShown) {
    figures.set(`GCs, ${kind}: pause µs per job`, perJob(gcs[kind]?.ms ?? 0));
    figures.set(`GCs, ${kind}`, gcs[kind]?.count ?? 0);
  }
  figures.set('samples on CPU', cpuSamples);
  figures.set('kernel CPU (rusage)', perJob(kernel.systemCpuMs ?? 0));
  for (const name of kernelCounts) figures.set(name, kernel[name] ?? 0);
  return figures;
}

/** µs per job of each enqueue part, per checkout (`-tN` in the file names), medians and ranges. */
function printEnqueueParts(files: readonly string[], jobs: number): void {
  const groups = new Map<string, Map<string, number>[]>();
  for (const file of files) {
    const group = /-t(\d+)\.cpuprofile$/.exec(file)?.[1] ?? file;
    groups.set(group, [...(groups.get(group) ?? []), enqueueFigures(file, jobs)]);
  }
  const names = [...groups.keys()];
  const rows = [
    ...enqueueParts.map(([part]) => part),
    enqueueRest,
    ...threadRows,
    'kernel CPU (rusage)',
    ...gcKindsShown.map((kind) => `GCs, ${kind}: pause µs per job`),
    ...countRows,
  ];
  const valuesOf = (runs: Map<string, number>[], row: string) => runs.map((r) => r.get(row) ?? 0);
  const cell = (runs: Map<string, number>[], row: string) => {
    const values = valuesOf(runs, row);
    const digits = countRows.includes(row) ? 0 : 2;
    return `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
  };
  const first = groups.get(names[0]!)!;
  const table = rows.map((row) => [
    row,
    ...names.flatMap((name, i) => {
      const runs = groups.get(name)!;
      if (i === 0) return [cell(runs, row)];
      const delta = median(valuesOf(first, row)) - median(valuesOf(runs, row));
      return [cell(runs, row), countRows.includes(row) ? '' : `${delta >= 0 ? '+' : ''}${delta.toFixed(2)}`];
    }),
  ]);
  const header = [
    'part, µs per job',
    ...names.flatMap((name, i) =>
      i === 0 ? [`t${name}: median (range)`] : [`t${name}: median (range)`, `t${names[0]} − t${name}`],
    ),
  ];
  const sizes = names.map((name) => groups.get(name)!.length).join(' and ');
  console.log(`Medians of ${sizes} profiles, ${jobs.toLocaleString('en')} jobs each\n`);
  console.log(markdownTable(header, table));
}

if (values['enqueue-parts'] !== undefined) {
  printEnqueueParts(positionals, Number(values['enqueue-parts']));
  process.exit(0);
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  if (values['w5-parts'] !== undefined) {
    printW5Parts(profile, parentOf, Number(values['w5-parts']));
    continue;
  }
  if (values['client-parts'] !== undefined) {
    printClientParts(profile, parentOf, Number(values['client-parts']));
    continue;
  }
  const under = values.under === undefined ? undefined : new RegExp(values.under);
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = sampleUs(profile, byId.get(id), i);
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) return;
    if (under !== undefined && !stackOf(byId.get(id), parentOf).some((f) => under.test(f))) return;
    const where =
      frame.url === ''
        ? ''
        : ` ${frame.url.replace(/^.*\/(node_modules|src|clients)\//, '$1/')}:${frame.lineNumber + 1}`;
    // A native call (better-sqlite3's run/get/all) says little alone: name its JavaScript caller.
    const caller = frame.url === '' && frame.functionName !== '' ? parentOf.get(id)?.callFrame : undefined;
    const via =
      caller === undefined || caller.functionName === '(root)'
        ? ''
        : ` ← ${caller.functionName || '(anonymous)'}`;
    const key = `${frame.functionName || '(anonymous)'}${where}${via}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
    totalUs += delta;
  });
  const busyUs = totalUs - (selfUs.get('(idle)') ?? 0);
  console.log(
    `${file}${under === undefined ? '' : ` under ${under.source}`}: ${(totalUs / 1000).toFixed(0)} ms sampled, ${(busyUs / 1000).toFixed(0)} ms not idle`,
  );
  for (const [key, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    const share = key === '(idle)' ? '' : ` (${((us / busyUs) * 100).toFixed(1)} % of busy)`;
    console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${key}${share}`);
  }
}
