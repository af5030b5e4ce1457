import { countSyncs } from '../lib/strace.ts';
import type { WorkloadContext } from './context.ts';
import { runThroughput } from './throughput.ts';

/** fsync-family calls the server made per job in one phase of a small strace'd run. */
export interface FsyncCheck {
  readonly concurrency: number;
  readonly phase: 'enqueue' | 'drain';
  readonly jobs: number;
  readonly fsync: number;
  readonly fdatasync: number;
  readonly perJob: number;
  /** Group commits in the phase, from the driver's `commits` counter (sepp): syncs should match it. */
  readonly commits?: number;
}

/**
 * Checks a system's durability mode the way an operator would: strace the server while it
 * takes a few jobs. At concurrency 1 a system that syncs before acknowledging shows about
 * one sync per operation; at W1's concurrency, group commit shows as fewer than one.
 */
export async function checkFsyncs(
  ctx: WorkloadContext,
  concurrency: number,
  jobs: number,
): Promise<FsyncCheck[]> {
  const checks: FsyncCheck[] = [];
  await runThroughput(ctx, {
    jobs,
    concurrency,
    timeoutMs: ctx.phaseTimeoutMs,
    aroundPhase: async (phase, run) => {
      const { result, syncs } = await countSyncs(ctx.driver.serverPids(), run);
      const total = syncs.fsync + syncs.fdatasync;
      const commits = result.serverCounterDeltas?.commits;
      checks.push({
        concurrency,
        phase,
        jobs: result.jobsDone,
        ...syncs,
        perJob: result.jobsDone > 0 ? total / result.jobsDone : 0,
        ...(commits === undefined ? {} : { commits }),
      });
      return result;
    },
  });
  return checks;
}
