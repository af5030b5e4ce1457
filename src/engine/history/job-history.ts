/**
 * The job history (issue 36, docs/admin.md "History"): per queue and job type,
 * attempts completed and failed, jobs gone dead, and the wait (due → start) and
 * run time (start → end) of the attempts that ended, kept in the database so a
 * restart does not erase it.
 *
 * Off the hot path: a settlement's after-commit hook adds to an aggregate in
 * memory (`record`); once a minute, at the minute's end, one write unit stores the
 * minute that ended (`m` rows) and this process's total of the hour so far (`h`
 * rows, replaced at each flush), and forgets rows past their retention. A crash
 * loses at most the minute not yet written; a shutdown writes the minute in
 * progress. Each process writes rows of its own (`writer`, random per start), so a
 * restart within a minute, or several servers on one PostgreSQL database, never
 * write the same row; a read adds the writers up.
 *
 * Bounds: the first `maxSeries` (queue, type) pairs a process sees keep series of
 * their own; the rest count under ('(other)', '(other)'). Minute rows are kept
 * 3 hours, hour rows 8 days: at most (maxSeries + 2) rows per writer and bucket.
 * Each bucket has a coverage row (queue '' and type ''): how many ms of it the
 * writer ran; a bucket no writer covered is "no data", never zero.
 */

import type { Op } from '../../store/op.ts';
import type { HistoryRow } from '../../store/rows.ts';
import type { Store, StoreTx, StoreView } from '../../store/store.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { addTo, type Bins, binsFromJson, binsToJson, mergeInto, quantileMs } from './bins.ts';
import type { HistoryAnswer, HistoryBucket, HistoryFigures, HistoryOutcome, HistoryWindow } from './types.ts';

export const minuteMs = 60_000;
export const hourMs = 3_600_000;
/** How long each resolution is kept. */
export const historyRetention = { m: 3 * hourMs, h: 8 * 24 * hourMs } as const;
export const defaultMaxHistorySeries = 200;
export const historyWindows: readonly HistoryWindow[] = ['1h', '24h', '7d'];
export const otherSeries = '(other)';

class Aggregate {
  completed = 0;
  failed = 0;
  dead = 0;
  readonly wait: Bins = new Map();
  readonly run: Bins = new Map();

  add(other: Aggregate): void {
    this.completed += other.completed;
    this.failed += other.failed;
    this.dead += other.dead;
    mergeInto(this.wait, other.wait);
    mergeInto(this.run, other.run);
  }

  addRow(row: HistoryRow): void {
    this.completed += row.completed;
    this.failed += row.failed;
    this.dead += row.dead;
    binsFromJson(row.wait_hist, this.wait);
    binsFromJson(row.run_hist, this.run);
  }

  figures(): HistoryFigures {
    const ended = this.completed + this.failed;
    return {
      completed: this.completed,
      failed: this.failed,
      dead: this.dead,
      failureRate: ended === 0 ? null : this.failed / ended,
      waitP50Ms: quantileMs(this.wait, 0.5),
      waitP95Ms: quantileMs(this.wait, 0.95),
      runP50Ms: quantileMs(this.run, 0.5),
      runP95Ms: quantileMs(this.run, 0.95),
    };
  }
}

const keyOf = (queue: string, type: string) => `${queue}\u0000${type}`;
const splitKey = (key: string) => key.split('\u0000') as [string, string];

/** A minute that ended (or the one in progress, at shutdown), waiting to be written. */
interface SealedMinute {
  startMs: number;
  coveredMs: number;
  series: Map<string, Aggregate>;
}

export interface JobHistoryDeps {
  clock: Clock;
  /** The engine's write path (refused once it closes). */
  write: <T>(unit: (tx: StoreTx) => Op<T>) => Promise<T>;
  read: <T>(unit: (view: StoreView) => Op<T>) => Promise<T>;
  /** This process's name in the rows. */
  writer: string;
  maxSeries?: number;
  /** A flush failed (it is tried again with the next one). */
  onError?: (error: unknown) => void;
}

/** Sealed minutes kept for a retry when writes fail; older ones are given up. */
const maxSealedMinutes = 10;

export class JobHistory {
  readonly maxSeries: number;
  private readonly startedAtMs: number;
  private minuteStartMs: number;
  private current = new Map<string, Aggregate>();
  private sealed: SealedMinute[] = [];
  private hourStartMs: number;
  private hour = new Map<string, Aggregate>();
  private hourCoveredMs = 0;
  private readonly dirtyHourKeys = new Set<string>();
  private readonly seen = new Set<string>();
  private timer: TimerHandle | undefined;
  private flushing: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly deps: JobHistoryDeps) {
    this.maxSeries = deps.maxSeries ?? defaultMaxHistorySeries;
    this.startedAtMs = deps.clock.nowMs();
    this.minuteStartMs = floorTo(this.startedAtMs, minuteMs);
    this.hourStartMs = floorTo(this.startedAtMs, hourMs);
  }

  /** Counts an ended attempt or a dead job; called after the commit that made it so. */
  record(
    queue: string,
    type: string,
    outcome: HistoryOutcome,
    waitMs: number | null,
    runMs: number | null,
  ): void {
    this.roll(this.deps.clock.nowMs());
    let key = keyOf(queue, type);
    if (!this.seen.has(key)) {
      if (this.seen.size < this.maxSeries) this.seen.add(key);
      else key = keyOf(otherSeries, otherSeries);
    }
    let agg = this.current.get(key);
    if (agg === undefined) {
      agg = new Aggregate();
      this.current.set(key, agg);
    }
    agg[outcome]++;
    if (waitMs !== null) addTo(agg.wait, Math.max(0, waitMs));
    if (runMs !== null) addTo(agg.run, Math.max(0, runMs));
  }

  /** Starts the minute timer. */
  start(): void {
    this.schedule();
  }

  /** Stops the timer and hands `store` the minute in progress (written before it closes). */
  stop(store: Store): void {
    if (this.stopped) return;
    this.stopped = true;
    this.timer?.cancel();
    const nowMs = this.deps.clock.nowMs();
    this.roll(nowMs);
    this.seal(nowMs);
    const rows = this.rowsToWrite(nowMs);
    if (rows.length > 0) store.write((tx) => tx.history.put(rows)).catch((e) => this.deps.onError?.(e));
  }

  /** Writes the minutes that ended (one write unit); resolves once written (or failed and kept). */
  flush(): Promise<void> {
    this.flushing ??= this.flushNow().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private schedule(): void {
    if (this.stopped) return;
    const nowMs = this.deps.clock.nowMs();
    this.timer = this.deps.clock.setTimer(floorTo(nowMs, minuteMs) + minuteMs - nowMs, () => {
      void this.flush().finally(() => this.schedule());
    });
  }

  private async flushNow(): Promise<void> {
    const nowMs = this.deps.clock.nowMs();
    this.roll(nowMs);
    const rows = this.rowsToWrite(nowMs);
    if (rows.length === 0) return;
    const written = this.sealed;
    const dirty = [...this.dirtyHourKeys];
    this.sealed = [];
    this.dirtyHourKeys.clear();
    try {
      await this.deps.write(function* (tx) {
        yield* tx.history.put(rows);
        yield* tx.history.forget({ resolution: 'm', beforeMs: nowMs - historyRetention.m });
        yield* tx.history.forget({ resolution: 'h', beforeMs: nowMs - historyRetention.h });
      });
    } catch (error) {
      // Kept for the next flush (rows replace by key, so writing twice is harmless).
      this.sealed = [...written, ...this.sealed].slice(-maxSealedMinutes);
      for (const key of dirty) this.dirtyHourKeys.add(key);
      this.deps.onError?.(error);
    }
  }

  /** Seals the minutes that ended by `nowMs`. */
  private roll(nowMs: number): void {
    const nowMinuteMs = floorTo(nowMs, minuteMs);
    // Each minute the server ran is sealed, with or without jobs; at most the last maxSealedMinutes.
    if (nowMinuteMs - this.minuteStartMs > maxSealedMinutes * minuteMs) {
      this.seal(this.minuteStartMs + minuteMs);
      this.minuteStartMs = nowMinuteMs - maxSealedMinutes * minuteMs;
    }
    while (this.minuteStartMs < nowMinuteMs) {
      this.seal(this.minuteStartMs + minuteMs);
      this.minuteStartMs += minuteMs;
    }
  }

  /** Seals the current minute as covered up to `endMs`, and adds it to the hour. */
  private seal(endMs: number): void {
    const startMs = this.minuteStartMs;
    const coveredMs = Math.max(0, Math.min(endMs, startMs + minuteMs) - Math.max(startMs, this.startedAtMs));
    if (coveredMs === 0 && this.current.size === 0) return;
    const hourStartMs = floorTo(startMs, hourMs);
    if (hourStartMs !== this.hourStartMs) {
      this.hourStartMs = hourStartMs;
      this.hour = new Map();
      this.hourCoveredMs = 0;
      this.dirtyHourKeys.clear();
    }
    this.hourCoveredMs += coveredMs;
    for (const [key, agg] of this.current) {
      let total = this.hour.get(key);
      if (total === undefined) {
        total = new Aggregate();
        this.hour.set(key, total);
      }
      total.add(agg);
      this.dirtyHourKeys.add(key);
    }
    this.sealed.push({ startMs, coveredMs, series: this.current });
    if (this.sealed.length > maxSealedMinutes) this.sealed.shift();
    this.current = new Map();
  }

  private rowsToWrite(_nowMs: number): HistoryRow[] {
    if (this.sealed.length === 0) return [];
    const { writer } = this.deps;
    const rows: HistoryRow[] = [];
    for (const minute of this.sealed) {
      rows.push(coverageRow('m', minute.startMs, writer, minute.coveredMs));
      for (const [key, agg] of minute.series) rows.push(seriesRow('m', minute.startMs, writer, key, agg));
    }
    rows.push(coverageRow('h', this.hourStartMs, writer, this.hourCoveredMs));
    for (const key of this.dirtyHourKeys) {
      const agg = this.hour.get(key);
      if (agg !== undefined) rows.push(seriesRow('h', this.hourStartMs, writer, key, agg));
    }
    return rows;
  }

  /** The history over `window` up to the last whole minute, optionally of one queue. */
  async query(window: HistoryWindow, queue: string | null = null): Promise<HistoryAnswer> {
    const nowMs = this.deps.clock.nowMs();
    this.roll(nowMs);
    const minuteEndMs = floorTo(nowMs, minuteMs);
    const resolution = window === '1h' ? 'm' : 'h';
    const bucketMs = resolution === 'm' ? minuteMs : hourMs;
    const buckets = window === '1h' ? 60 : window === '24h' ? 24 : 7 * 24;
    const lastStartMs = floorTo(minuteEndMs - 1, bucketMs);
    const fromMs = lastStartMs - (buckets - 1) * bucketMs;
    const stored = await this.deps.read((view) =>
      view.history.between({ resolution, fromMs, toMs: lastStartMs + bucketMs }),
    );
    // Minutes sealed here but not written yet count too (the flush runs at the minute's end).
    const rows = [...stored, ...this.unwritten(resolution, fromMs)];
    return summarize(rows, { window, bucketMs, fromMs, toMs: minuteEndMs, buckets, queue }, this.maxSeries);
  }

  private unwritten(resolution: 'm' | 'h', fromMs: number): HistoryRow[] {
    const { writer } = this.deps;
    const rows: HistoryRow[] = [];
    if (resolution === 'm') {
      for (const minute of this.sealed) {
        if (minute.startMs < fromMs) continue;
        rows.push(coverageRow('m', minute.startMs, `${writer}+`, minute.coveredMs));
        for (const [key, agg] of minute.series)
          rows.push(seriesRow('m', minute.startMs, `${writer}+`, key, agg));
      }
    } else if (this.sealed.length > 0) {
      // This writer's hour row as it will be written (it replaces the stored one).
      rows.push(coverageRow('h', this.hourStartMs, writer, this.hourCoveredMs));
      for (const [key, agg] of this.hour) rows.push(seriesRow('h', this.hourStartMs, writer, key, agg));
    }
    return rows;
  }
}

function summarize(
  rows: readonly HistoryRow[],
  w: {
    window: HistoryWindow;
    bucketMs: number;
    fromMs: number;
    toMs: number;
    buckets: number;
    queue: string | null;
  },
  maxSeries: number,
): HistoryAnswer {
  // An hour row of this writer may be both stored and in memory: the one in memory replaces it.
  const byKey = new Map<string, HistoryRow>();
  for (const row of rows)
    byKey.set(`${row.bucket_ms}\u0000${row.writer}\u0000${row.queue}\u0000${row.type}`, row);
  const buckets: HistoryBucket[] = [];
  for (let i = 0; i < w.buckets; i++) {
    buckets.push({ startMs: w.fromMs + i * w.bucketMs, coveredMs: 0, completed: 0, failed: 0, dead: 0 });
  }
  const total = new Aggregate();
  const queues = new Map<string, Aggregate>();
  const types = new Map<string, Aggregate>();
  for (const row of byKey.values()) {
    const bucket = buckets[Math.floor((row.bucket_ms - w.fromMs) / w.bucketMs)];
    if (bucket === undefined) continue;
    if (row.queue === '' && row.type === '') {
      bucket.coveredMs = Math.min(w.bucketMs, bucket.coveredMs + row.covered_ms);
      continue;
    }
    if (w.queue !== null && row.queue !== w.queue) continue;
    bucket.completed += row.completed;
    bucket.failed += row.failed;
    bucket.dead += row.dead;
    total.addRow(row);
    aggregateOf(queues, row.queue).addRow(row);
    aggregateOf(types, keyOf(row.queue, row.type)).addRow(row);
  }
  const firstData = buckets.find((b) => b.coveredMs > 0);
  return {
    window: w.window,
    bucketMs: w.bucketMs,
    fromMs: w.fromMs,
    toMs: w.toMs,
    coveredMs: buckets.reduce((sum, b) => sum + b.coveredMs, 0),
    firstDataMs: firstData === undefined ? null : firstData.startMs,
    buckets,
    total: total.figures(),
    queues: [...queues]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([queue, agg]) => ({ queue, ...agg.figures() })),
    types: [...types]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, agg]) => {
        const [queue, type] = splitKey(key);
        return { queue, type, ...agg.figures() };
      }),
    maxSeries,
  };
}

function aggregateOf(map: Map<string, Aggregate>, key: string): Aggregate {
  let agg = map.get(key);
  if (agg === undefined) {
    agg = new Aggregate();
    map.set(key, agg);
  }
  return agg;
}

function coverageRow(resolution: 'm' | 'h', bucketMs: number, writer: string, coveredMs: number): HistoryRow {
  return {
    resolution,
    bucket_ms: bucketMs,
    queue: '',
    type: '',
    writer,
    completed: 0,
    failed: 0,
    dead: 0,
    covered_ms: coveredMs,
    wait_hist: null,
    run_hist: null,
  };
}

function seriesRow(
  resolution: 'm' | 'h',
  bucketMs: number,
  writer: string,
  key: string,
  agg: Aggregate,
): HistoryRow {
  const [queue, type] = splitKey(key);
  return {
    resolution,
    bucket_ms: bucketMs,
    queue,
    type,
    writer,
    completed: agg.completed,
    failed: agg.failed,
    dead: agg.dead,
    covered_ms: 0,
    wait_hist: binsToJson(agg.wait),
    run_hist: binsToJson(agg.run),
  };
}

function floorTo(ms: number, step: number): number {
  return Math.floor(ms / step) * step;
}
