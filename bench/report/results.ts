import type { BatchSupport } from '../systems/types.ts';
import type { WorkloadRun } from '../workloads/context.ts';
import type { FsyncCheck } from '../workloads/fsync-check.ts';

/** Everything measured for one system in one harness run; written verbatim to the JSON file. */
export interface SystemResult {
  readonly id: string;
  readonly label: string;
  readonly durability: string;
  readonly settings: string;
  readonly batch: BatchSupport;
  readonly fsyncChecks: readonly FsyncCheck[];
  readonly runs: readonly WorkloadRun[];
  /** The kernel's RSS high-water mark of the server processes over the whole run. */
  readonly serverLifetimePeakRssBytes: number;
  /** The disk's fdatasync median just before this system started: the disk's speed varies. */
  readonly diskFdatasyncMedianUs: number;
  /** Set when the system failed; the runs before the failure are kept. */
  readonly error?: string;
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
