/**
 * `prefetch: 'auto'` (the default): a Worker leases ahead only as much work as its slots
 * finish in about one second (or a tenth of the lease, if shorter), and none until its first
 * jobs have run; so long jobs are never held, and a worker never hoards more than ~1 s of
 * other workers' work. The Python SDK's Worker follows the same rule.
 *
 * The rule, recomputed when a run finishes (no timers):
 * - `avgRunMs`: the handlers' run time (from handler start to its settlement being queued),
 *   exponentially weighted: the first run's time, then `avg += 0.1 × (run − avg)`;
 * - held-ahead limit = min(autoCap, floor(concurrency × heldBudgetMs / max(avgRunMs, 0.05))),
 *   heldBudgetMs = min(1000, leaseMs / 10), autoCap = min(500, 1000 − concurrency) (slots and
 *   held jobs fit one Work stream's credit), or 0 before `concurrency` runs have finished;
 * - split over the lanes (Work streams) as the slots are, and on each lane no more than the
 *   server's `limits.max_reserve_jobs` less the lane's slots (the most credit a stream may hold,
 *   learned from GetServerInfo; while it is not known, nothing is held).
 *
 * A lower limit gives nothing back: jobs held beyond it are kept and run; credit for them is
 * simply not asked again.
 *
 * Queues with flow limits: once the worker is handed a job whose queue had one (`max_leased`,
 * `group_max_leased`, a rate limit or a group rate limit: LeasedJob.flowLimited), the limit is 0
 * for the rest of the worker's life. Jobs it held would take the limit's allowance from workers
 * with free slots, and jobs leased at a rate limit's pace would start back to back as slots free.
 * Its first job from such a queue already says so, before any run of it could raise the limit. A
 * worker that also serves a queue without limits may have raised it on that queue's jobs first:
 * the credit it granted for held jobs is already outstanding at the server, which fills it (with
 * jobs of any of its queues) once before the stop shows; no credit for held jobs follows.
 */

/** What the rule sets of a lane (worker-active.ts's Lane). */
interface PrefetchLane {
  prefetch: number;
  readonly prefetchMax: number;
  /** Its slots. */
  readonly capacity: number;
}

/** Weight of each new run in `avgRunMs`. */
const runWeight = 0.1;
/** The shortest average run the rule divides by, in ms. */
const minAvgRunMs = 0.05;

/** The most a Worker of `concurrency` slots holds ahead under `prefetch: 'auto'`. */
export function autoPrefetchCap(concurrency: number): number {
  return Math.max(0, Math.min(500, 1000 - concurrency));
}

/** The held-ahead limit of `prefetch: 'auto'` (see the top); a pure function of what the worker saw. */
export function autoPrefetchLimit(input: {
  concurrency: number;
  leaseMs: number;
  /** Runs finished so far. */
  runs: number;
  /** Their weighted average run time, in ms (any value while `runs` is 0). */
  avgRunMs: number;
}): number {
  const { concurrency, leaseMs, runs, avgRunMs } = input;
  if (runs < concurrency) return 0;
  const heldBudgetMs = Math.min(1000, leaseMs / 10);
  const fits = Math.floor((concurrency * heldBudgetMs) / Math.max(avgRunMs, minAvgRunMs));
  return Math.min(autoPrefetchCap(concurrency), fits);
}

/** Keeps the lanes' prefetch at the auto rule's limit, split over them as the slots are. */
export class AutoPrefetch {
  private runs = 0;
  /** The handlers' weighted average run time, in ms. */
  avgRunMs = 0;
  /** The held-ahead limit now (all lanes), before each lane's bounds. */
  limit = 0;
  /** The queue of the first job that said its queue had flow limits; from then on nothing is held. */
  stoppedBy: string | undefined;

  constructor(
    private readonly lanes: readonly PrefetchLane[],
    private readonly concurrency: number,
    private readonly leaseMs: number,
    /** The server's `limits.max_reserve_jobs`; 0 while not known. */
    private readonly serverMaxReserveJobs: () => number,
  ) {
    for (const lane of lanes) lane.prefetch = 0;
  }

  /**
   * A job of `queue` came with `flowLimited`: nothing is held ahead from now on (see the top).
   * True the first time only, so the worker says it once.
   */
  flowLimited(queue: string): boolean {
    if (this.stoppedBy !== undefined) return false;
    this.stoppedBy = queue;
    this.limit = 0;
    for (const lane of this.lanes) lane.prefetch = 0;
    return true;
  }

  /**
   * What the lanes may hold now, together: `limit` within each lane's bounds, so 0 while the
   * server's `max_reserve_jobs` is not known or it cannot take held jobs back (an older server).
   */
  get lanesLimit(): number {
    let total = 0;
    for (const lane of this.lanes) total += lane.prefetch;
    return total;
  }

  /** A handler ran for `runMs`: the average and the limit move. */
  ran(runMs: number): void {
    this.runs++;
    this.avgRunMs = this.runs === 1 ? runMs : this.avgRunMs + runWeight * (runMs - this.avgRunMs);
    if (this.stoppedBy !== undefined) return;
    const limit = autoPrefetchLimit({
      concurrency: this.concurrency,
      leaseMs: this.leaseMs,
      runs: this.runs,
      avgRunMs: this.avgRunMs,
    });
    this.limit = limit;
    const serverMax = this.serverMaxReserveJobs();
    // Split as the slots are (worker-active.ts makeLanes): the first `limit % n` lanes get one more.
    const n = this.lanes.length;
    this.lanes.forEach((lane, i) => {
      const share = Math.floor(limit / n) + (i < limit % n ? 1 : 0);
      lane.prefetch = Math.max(0, Math.min(lane.prefetchMax, share, serverMax - lane.capacity));
    });
  }
}
