import { LatencyRecorder, type LatencySummary } from '../lib/latency.ts';
import { PhaseMeter } from '../lib/proc-stats.ts';
import type { Recorders } from './actors.ts';
import { JobBudget } from './claims.ts';

/** What one timed phase (e.g. W1's enqueue) measured. */
export interface PhaseResult {
  readonly phase: string;
  readonly concurrency: number;
  readonly jobsPlanned: number;
  readonly jobsDone: number;
  /** False when the phase hit its time limit before doing every planned job. */
  readonly complete: boolean;
  readonly elapsedMs: number;
  readonly jobsPerSec: number;
  /** Per operation kind: `enqueue`, `reserve`, `ack`, `reserve+ack`, batch variants. */
  readonly latency: Readonly<Record<string, LatencySummary>>;
  readonly serverCpuUsPerJob: number;
  /** serverCpuUsPerJob per server process (the system's `serverPids` order: sepp, then PostgreSQL). */
  readonly serverCpuUsPerJobByProcess?: readonly number[];
  readonly clientCpuUsPerJob: number;
  readonly serverPeakRssBytes: number;
  /** CPU used by other processes on the machine during the phase, % of all cores: noise. */
  readonly otherCpuPercent: number;
  /** How much each of the driver's counters grew during the phase (see `SystemDriver.counters`). */
  readonly serverCounterDeltas?: Readonly<Record<string, number>>;
}

export interface PhaseSpec {
  readonly phase: string;
  readonly jobs: number;
  readonly timeoutMs: number;
  /** PIDs of the server processes to meter. */
  readonly serverPids: readonly number[];
  /** The driver's server counters, if it has any. */
  readonly counters?: () => Promise<Readonly<Record<string, number>>>;
  /** One entry per concurrent actor. */
  readonly actors: readonly ((budget: JobBudget, rec: Recorders) => Promise<void>)[];
}

/** Runs the actors concurrently against one job budget and meters the server and client. */
export async function runPhase(spec: PhaseSpec): Promise<PhaseResult> {
  const recorders = new Map<string, LatencyRecorder>();
  const rec: Recorders = (op) => {
    let r = recorders.get(op);
    if (r === undefined) {
      r = new LatencyRecorder();
      recorders.set(op, r);
    }
    return r;
  };
  const countersBefore = await spec.counters?.();
  const meter = new PhaseMeter(spec.serverPids);
  const t0 = performance.now();
  const budget = new JobBudget(spec.jobs, t0 + spec.timeoutMs);
  await Promise.all(spec.actors.map((actor) => actor(budget, rec)));
  const elapsedMs = performance.now() - t0;
  const used = meter.finish();
  const countersAfter = await spec.counters?.();
  let serverCounterDeltas: Record<string, number> | undefined;
  if (countersBefore !== undefined && countersAfter !== undefined) {
    serverCounterDeltas = {};
    for (const [name, after] of Object.entries(countersAfter)) {
      serverCounterDeltas[name] = after - (countersBefore[name] ?? 0);
    }
  }
  const latency: Record<string, LatencySummary> = {};
  for (const [op, r] of recorders) {
    const summary = r.summary();
    if (summary !== undefined) latency[op] = summary;
  }
  const perJob = (us: number) => (budget.done > 0 ? us / budget.done : 0);
  return {
    phase: spec.phase,
    concurrency: spec.actors.length,
    jobsPlanned: spec.jobs,
    jobsDone: budget.done,
    complete: budget.done === spec.jobs,
    elapsedMs,
    jobsPerSec: (budget.done * 1000) / elapsedMs,
    latency,
    serverCpuUsPerJob: perJob(used.serverCpuUs),
    serverCpuUsPerJobByProcess: used.rootCpuUs.map(perJob),
    clientCpuUsPerJob: perJob(used.clientCpuUs),
    serverPeakRssBytes: used.serverPeakRssBytes,
    otherCpuPercent: used.otherCpuPercent,
    ...(serverCounterDeltas === undefined ? {} : { serverCounterDeltas }),
  };
}
