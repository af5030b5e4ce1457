/**
 * A Worker's outages: which of its lanes (a Work stream or a Reserve loop each) are
 * failing, since when, and whether the worker has been cut off from the server for
 * longer than `maxUnavailableMs`. The Worker reports each retried failure and each
 * answer from the server here, and decides what to say and whether to stop.
 */
export class Outage<Lane> {
  /** Lanes whose transports fail, with when each one's run of failures began (the worker clock's ms). */
  private readonly failingSinceMs = new Map<Lane, number>();
  /** When the first lane of the current outage failed. */
  private sinceMs: number | undefined;

  constructor(
    private readonly laneCount: number,
    /** The worker's `maxUnavailableMs`: undefined never gives up. */
    readonly maxUnavailableMs: number | undefined,
  ) {}

  /**
   * A lane's transport could not get jobs and asks again after a backoff. The first such
   * failure since the lane last connected starts its run of failures. Answers how long the
   * worker has been cut off when that is more than `maxUnavailableMs`: every lane fails, and
   * the latest lane's first failure is that long ago (a stream that still works is no outage).
   */
  failed(lane: Lane, nowMs: number): number | undefined {
    if (!this.failingSinceMs.has(lane)) this.failingSinceMs.set(lane, nowMs);
    this.sinceMs ??= nowMs;
    if (this.maxUnavailableMs === undefined || this.failingSinceMs.size < this.laneCount) return undefined;
    const downMs = nowMs - Math.max(...this.failingSinceMs.values());
    return downMs > this.maxUnavailableMs ? downMs : undefined;
  }

  /** The server answered a lane: its failures are over. Answers the outage's length once no lane fails. */
  connected(lane: Lane, nowMs: number): number | undefined {
    if (!this.failingSinceMs.delete(lane) || this.failingSinceMs.size > 0) return undefined;
    const downMs = nowMs - (this.sinceMs ?? nowMs);
    this.sinceMs = undefined;
    return downMs;
  }
}
