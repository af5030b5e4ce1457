import type { WorkloadRun } from '../workloads/context.ts';
import type { PhaseResult } from '../workloads/phase.ts';
import type { SystemResult } from './results.ts';

/** Picks results out of a SystemResult; repetitions are summarised by their median. */

export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Every repetition's result for one phase of one workload (and concurrency, for W4). */
export function phaseRuns(
  system: SystemResult,
  workload: WorkloadRun['workload'],
  phase: string,
  concurrency?: number,
): PhaseResult[] {
  return system.runs
    .filter((r) => r.workload === workload && (concurrency === undefined || r.concurrency === concurrency))
    .flatMap((r) => r.phases.filter((p) => p.phase === phase));
}

/** The median over repetitions of one number of a phase; undefined when the phase did not run. */
export function med(
  runs: readonly PhaseResult[],
  pick: (p: PhaseResult) => number | undefined,
): number | undefined {
  return median(runs.map(pick).filter((v): v is number => v !== undefined));
}

export function jobsPerSec(runs: readonly PhaseResult[]): number | undefined {
  return med(runs, (p) => p.jobsPerSec);
}

/** True when some repetition hit its time limit, so the figure covers fewer jobs than planned. */
export function anyIncomplete(runs: readonly PhaseResult[]): boolean {
  return runs.some((p) => !p.complete);
}
