/**
 * How often a thing that repeats is told (a log line for a failure that goes on, a refusal
 * in a flood): the first of a run at once, then at most one line per `everyMs`, each standing
 * for the occurrences since the line before, so a flood is one line a minute, not one a call.
 * The time is a parameter: the caller reads its clock.
 */
export class RepeatThrottle {
  /** When the last line was told; undefined before the first of a run. */
  private lastLineMs: number | undefined;
  /** Occurrences not yet in a line. */
  private untold = 0;

  constructor(private readonly everyMs: number) {}

  /**
   * One more occurrence at `nowMs`: how many occurrences a line told now stands for (this one
   * and those held back since the last line), or 0 when no line is due yet.
   */
  occurred(nowMs: number): number {
    this.untold++;
    if (this.lastLineMs !== undefined && nowMs - this.lastLineMs < this.everyMs) return 0;
    this.lastLineMs = nowMs;
    const told = this.untold;
    this.untold = 0;
    return told;
  }

  /** The run is over: the next occurrence is told at once, standing for itself alone. */
  reset(): void {
    this.lastLineMs = undefined;
    this.untold = 0;
  }
}

/**
 * A RepeatThrottle per distinct thing (say, per error message): each told on its own terms.
 * At most `maxKeys` are followed; past that they are all forgotten, so the next of each is
 * told at once again — bounded, whatever the keys hold.
 */
export class RepeatThrottles {
  private readonly runs = new Map<string, RepeatThrottle>();

  constructor(
    private readonly everyMs: number,
    private readonly maxKeys: number,
  ) {}

  /** RepeatThrottle.occurred for the run of `key`. */
  occurred(key: string, nowMs: number): number {
    let run = this.runs.get(key);
    if (run === undefined) {
      if (this.runs.size >= this.maxKeys) this.runs.clear();
      run = new RepeatThrottle(this.everyMs);
      this.runs.set(key, run);
    }
    return run.occurred(nowMs);
  }
}
