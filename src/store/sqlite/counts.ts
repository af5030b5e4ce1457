/**
 * Per-queue, per-state counts (`queue_counts`, schema/0003_engine_counts.sql):
 * one UPDATE per queue and state per operation moves them, in the same
 * savepoint as the job change, so nothing counts rows to answer. `mismatches`
 * compares them with the rows they count (tests, crash checks, `sepp doctor`).
 */
import { countMismatches } from '../count-check.ts';
import type { Counts } from '../queues.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareCountStatements(db: Preparer) {
  return {
    /** Moves a queue's count of one state by a delta (positional: the hot path binds no object). */
    adjustCount: db.prepare<[number, string, string]>(
      'UPDATE queue_counts SET jobs = jobs + ? WHERE queue = ? AND state = ?',
    ),
    allCounts: db.prepare<[], { queue: string; state: string; jobs: number }>(
      'SELECT queue, state, jobs FROM queue_counts',
    ),
    queueCounts: db.prepare<[string], { state: string; jobs: number }>(
      'SELECT state, jobs FROM queue_counts WHERE queue = ?',
    ),
    /** Jobs of a queue in one state, from the maintained counters. */
    inState: db
      .prepare<[string, string], number>('SELECT jobs FROM queue_counts WHERE queue = ? AND state = ?')
      .pluck(),
    /** Unfinished jobs of a queue (waiting + scheduled + ready + leased), for max_depth. */
    queueDepth: db
      .prepare<[string], number>(
        "SELECT coalesce(sum(jobs), 0) FROM queue_counts WHERE queue = ? AND state IN ('waiting', 'scheduled', 'ready', 'leased')",
      )
      .pluck(),
    /** Stored jobs, how many there are: the sum of the maintained counters (for "searched N of M"). */
    storedJobs: db.prepare<[], number>('SELECT coalesce(sum(jobs), 0) FROM queue_counts').pluck(),
    countsFromRows: db.prepare<[], { queue: string; state: string; jobs: number }>(
      'SELECT queue, state, count(*) AS jobs FROM jobs GROUP BY queue, state',
    ),
  };
}

export type CountStatements = ReturnType<typeof prepareCountStatements>;

/** One line per counter that disagrees with a `count(*)` of its rows; empty when healthy. */
export function counterMismatches(sql: Pick<CountStatements, 'allCounts' | 'countsFromRows'>): string[] {
  return countMismatches(sql.allCounts.all(), sql.countsFromRows.all());
}

export function countOps(sql: CountStatements): Counts {
  return {
    *adjust({ queue, from, to, jobs }) {
      if (jobs === 0) return;
      if (from !== null) sql.adjustCount.run(-jobs, queue, from);
      if (to !== null) sql.adjustCount.run(jobs, queue, to);
    },
    *all() {
      return sql.allCounts.all();
    },
    *ofQueue(queue) {
      return sql.queueCounts.all(queue);
    },
    *inState({ queue, state }) {
      return sql.inState.get(queue, state) ?? 0;
    },
    *unfinished(queue) {
      return sql.queueDepth.get(queue) ?? 0;
    },
    *total() {
      return sql.storedJobs.get() ?? 0;
    },
    *mismatches() {
      return counterMismatches(sql);
    },
  };
}
