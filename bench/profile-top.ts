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
 * --under REGEX: the top entries of the samples with a frame (`function file`) matching REGEX only,
 * so they say where one part's time goes (`--under '^enqueueFlowsIn '`).
 *
 * --cap-us N: a sample that is not idle counts at most N µs. On a loaded machine the process is
 * descheduled between samples, and the whole gap (tens of ms) goes to whatever frame was running:
 * with V8's 1 ms interval, `--cap-us 2000` leaves the time the process actually ran.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

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
