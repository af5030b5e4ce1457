/**
 * The job budget of one phase, shared by its concurrent actors. An actor claims jobs before
 * working on them, so the phase does exactly `planned` jobs however many actors there are,
 * and stops claiming at the deadline so every phase is bounded in time.
 */
export class JobBudget {
  private claimed = 0;
  private doneCount = 0;

  constructor(
    readonly planned: number,
    private readonly deadlineMs: number,
  ) {}

  /** Claims up to `max` jobs; returns how many were granted (0: the phase is over). */
  claim(max: number): number {
    if (this.pastDeadline()) return 0;
    const granted = Math.min(max, this.planned - this.claimed);
    this.claimed += granted;
    return granted;
  }

  /** Gives back claimed jobs that were not obtained (a short batch). */
  unclaim(n: number): void {
    this.claimed -= n;
  }

  complete(n: number): void {
    this.doneCount += n;
  }

  get done(): number {
    return this.doneCount;
  }

  pastDeadline(): boolean {
    return performance.now() >= this.deadlineMs;
  }

  /** How long a blocking reserve may wait: at most 1 s, never past the deadline. */
  waitMs(): number {
    return Math.max(0, Math.min(1000, this.deadlineMs - performance.now()));
  }
}
