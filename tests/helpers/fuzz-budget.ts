/**
 * The budget of one fuzz loop: at most `runs` cases (SEPP_FUZZ_RUNS, or the
 * file's own default) and, when SEPP_FUZZ_SECONDS is set, at most that many
 * seconds (`npm run test:long` sets both, so that the long suite ends in a
 * known time on any machine). The loop counts its cases and reports how many
 * ran. A time-boxed loop must still run at least `floor` cases — the file's
 * default size, what the system tier runs — or it fails: a time box too short
 * for the machine is a failure, never a quiet pass over a handful of cases.
 */
import assert from 'node:assert/strict';

const timeBoxSeconds =
  process.env.SEPP_FUZZ_SECONDS === undefined ? undefined : Number(process.env.SEPP_FUZZ_SECONDS);
if (timeBoxSeconds !== undefined && !(timeBoxSeconds > 0)) {
  throw new Error(`SEPP_FUZZ_SECONDS=${process.env.SEPP_FUZZ_SECONDS}: give a number of seconds above 0`);
}

export class FuzzBudget {
  /** Cases started so far (count each one as it starts: `budget.cases++`). */
  cases = 0;
  private readonly startedMs = performance.now();
  private readonly deadlineMs =
    timeBoxSeconds === undefined ? Number.POSITIVE_INFINITY : this.startedMs + timeBoxSeconds * 1000;

  constructor(
    /** What the report line calls the loop. */
    private readonly name: string,
    /** Most cases. */
    readonly runs: number,
    /** Fewest cases a time-boxed loop must run (capped at `runs`). */
    private readonly floor: number,
  ) {}

  /** fast-check's parameters for this budget. */
  get fastCheck(): { numRuns: number; interruptAfterTimeLimit?: number } {
    return timeBoxSeconds === undefined
      ? { numRuns: this.runs }
      : { numRuns: this.runs, interruptAfterTimeLimit: timeBoxSeconds * 1000 };
  }

  /** For a loop of its own: whether one more case may start. */
  more(): boolean {
    return this.cases < this.runs && performance.now() < this.deadlineMs;
  }

  /** Reports how many cases ran and in what time; fails below the floor. */
  finish(detail = ''): void {
    const seconds = ((performance.now() - this.startedMs) / 1000).toFixed(1);
    const box = timeBoxSeconds === undefined ? '' : ` (time box ${timeBoxSeconds} s)`;
    console.log(`${this.name}: ${this.cases} of ${this.runs} cases in ${seconds} s${box}${detail}`);
    const floor = Math.min(this.floor, this.runs);
    assert.ok(
      this.cases >= floor,
      `${this.name}: only ${this.cases} cases ran in the time box, fewer than ${floor}: ` +
        'raise SEPP_FUZZ_SECONDS or run on a quieter machine',
    );
  }
}
