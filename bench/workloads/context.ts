import type { SystemDriver } from '../systems/types.ts';
import type { PhaseResult } from './phase.ts';

/** What every workload needs to run against one started system. */
export interface WorkloadContext {
  readonly driver: SystemDriver;
  /** The job payload (256 bytes in SPEC §10), the same buffer for every job. */
  readonly payload: Buffer;
  /** Upper bound of each timed phase, so a slow or stuck system cannot hang the run. */
  readonly phaseTimeoutMs: number;
  /** A queue name not used before in this run, so leftovers of one run never leak into the next. */
  queueName(prefix: string): string;
  /** Called before each timed phase, with every client connected and idle (waits for a quiet machine). */
  beforePhase(): Promise<void>;
  log(message: string): void;
}

/** One execution of a workload shape (one W4 level, one W1 repetition...). */
export interface WorkloadRun {
  readonly workload: 'W1' | 'W2' | 'W3' | 'W4';
  readonly concurrency: number;
  /** 0-based repetition index, for `--repeat`. */
  readonly repetition: number;
  readonly phases: readonly PhaseResult[];
}
