import type { BatchSupport } from '../systems/types.ts';
import type { WorkloadRun } from '../workloads/context.ts';
import type { FsyncCheck } from '../workloads/fsync-check.ts';

/** Everything measured for one system in one harness run (all repetitions); written verbatim to the JSON file. */
export interface SystemResult {
  readonly id: string;
  readonly label: string;
  readonly durability: string;
  readonly settings: string;
  readonly batch: BatchSupport;
  readonly fsyncChecks: readonly FsyncCheck[];
  readonly runs: readonly WorkloadRun[];
  /** The kernel's RSS high-water mark of the server processes, the highest of all starts. */
  readonly serverLifetimePeakRssBytes: number;
  /** The disk's fdatasync median just before each start of this system: the disk's speed varies. */
  readonly diskFdatasyncMedianUs: readonly number[];
  /** Failures (one per failed repetition); the runs before a failure are kept. */
  readonly errors: readonly string[];
}

export interface MachineDescription {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly os: string;
  readonly node: string;
  readonly disk: string;
  /** Median of a few 4 KiB write + fdatasync calls in the temp dir, a yardstick for every figure. */
  readonly fdatasyncMedianUs: number;
}

export interface BenchReport {
  readonly startedAt: string;
  readonly command: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly machine: MachineDescription;
  readonly systems: readonly SystemResult[];
}

/** Folds one more repetition of a system into what was measured before. */
export function mergeRepetition(before: SystemResult | undefined, next: SystemResult): SystemResult {
  if (before === undefined) return next;
  return {
    ...before,
    settings: before.settings || next.settings,
    fsyncChecks: [...before.fsyncChecks, ...next.fsyncChecks],
    runs: [...before.runs, ...next.runs],
    serverLifetimePeakRssBytes: Math.max(before.serverLifetimePeakRssBytes, next.serverLifetimePeakRssBytes),
    diskFdatasyncMedianUs: [...before.diskFdatasyncMedianUs, ...next.diskFdatasyncMedianUs],
    errors: [...before.errors, ...next.errors],
  };
}
