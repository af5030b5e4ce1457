/**
 * When a schedule ticks: croner reads the cron expression (5 fields, or 6
 * with seconds) in the schedule's IANA timezone; an interval schedule ticks
 * on anchor + k × interval. Both are bounded by the schedule's start and end.
 *
 * Daylight saving time is croner's (as in Vixie cron and croner-rust): a
 * fixed-time expression (single second, minute and hour, like `30 2 * * *`)
 * whose time falls in a spring-forward gap runs at the first valid time after
 * the gap, and once when a fall-back repeats its time; other expressions
 * (`0 * * * *`) skip times in the gap and run on both occurrences of a
 * repeated hour. Ticks are whole seconds.
 */
import { Cron } from 'croner';

/** Counting missed cron ticks one by one stops here; the count is then a lower bound. */
export const countedTicksMax = 1000;

export interface TimingDefinition {
  cron: string | null;
  intervalMs: number | null;
  timezone: string;
  anchorMs: number;
  startAtMs: number | null;
  endAtMs: number | null;
}

/** Due ticks in a span: the latest few and how many there were. */
export interface DueTicks {
  /** The latest `keep` ticks, oldest first. */
  latest: number[];
  /** Ticks in the span: exact, or at least countedTicksMax when `exact` is false. */
  count: number;
  exact: boolean;
}

export class ScheduleTiming {
  private readonly cron: Cron | null;

  /** Throws croner's TypeError for a bad expression or timezone (validation reports it). */
  constructor(readonly definition: TimingDefinition) {
    this.cron =
      definition.cron === null
        ? null
        : new Cron(definition.cron, { timezone: definition.timezone, paused: true, mode: '5-or-6-parts' });
  }

  /** The first tick strictly after `afterMs`, or null when none comes. */
  nextAfter(afterMs: number): number | null {
    const { startAtMs, endAtMs } = this.definition;
    const fromMs = startAtMs !== null && afterMs < startAtMs ? startAtMs - 1 : afterMs;
    const tick = this.rawNextAfter(fromMs);
    return tick === null || (endAtMs !== null && tick >= endAtMs) ? null : tick;
  }

  /** The first `count` ticks after `afterMs`. */
  nextRuns(afterMs: number, count: number): number[] {
    const runs: number[] = [];
    let at = afterMs;
    while (runs.length < count) {
      const next = this.nextAfter(at);
      if (next === null) break;
      runs.push(next);
      at = next;
    }
    return runs;
  }

  /**
   * The ticks from `firstMs` (a tick) up to `nowMs` (inclusive, and before the
   * end): how many, and the latest `keep` of them.
   */
  dueBetween(firstMs: number, nowMs: number, keep: number): DueTicks {
    const { intervalMs, endAtMs } = this.definition;
    const lastMs = endAtMs === null ? nowMs : Math.min(nowMs, endAtMs - 1);
    if (firstMs > lastMs) return { latest: [], count: 0, exact: true };
    if (intervalMs !== null) {
      const count = Math.floor((lastMs - firstMs) / intervalMs) + 1;
      const latest: number[] = [];
      for (let k = Math.max(0, count - keep); k < count; k++) latest.push(firstMs + k * intervalMs);
      return { latest, count, exact: true };
    }
    const latest: number[] = [];
    let count = 0;
    for (let tick: number | null = firstMs; tick !== null && tick <= lastMs; tick = this.nextAfter(tick)) {
      latest.push(tick);
      if (latest.length > keep) latest.shift();
      if (++count >= countedTicksMax) {
        // A long outage of a frequent schedule: take the latest ticks from the end instead.
        const fromEnd = (this.cron as Cron)
          .previousRuns(keep, new Date(lastMs + 1))
          .map((d) => d.getTime())
          .filter((t) => t > tick!)
          .reverse();
        return { latest: fromEnd.length > 0 ? fromEnd : latest, count, exact: false };
      }
    }
    return { latest, count, exact: true };
  }

  private rawNextAfter(afterMs: number): number | null {
    const { intervalMs, anchorMs } = this.definition;
    if (intervalMs !== null) {
      if (afterMs < anchorMs) return anchorMs;
      return anchorMs + (Math.floor((afterMs - anchorMs) / intervalMs) + 1) * intervalMs;
    }
    return (this.cron as Cron).nextRun(new Date(afterMs))?.getTime() ?? null;
  }
}

/** Whether `timezone` is an IANA timezone this Node.js knows. */
export function isKnownTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}
