/**
 * The planner's statistics of the tables that grow fastest, kept up while they grow
 * (design note 0100, amendment "Plans while the tables grow").
 *
 * A prepared statement keeps the generic plan made after its first executions until
 * something invalidates it; an ANALYZE of a table it reads does. Without statistics, the
 * planner takes `cancelled_at_ms IS NULL` and the like to keep 0.5 % of the rows, and a table
 * never analyzed for 10 pages: the plans made while jobs is small read it whole (the ack
 * batch's DELETE joined `unnest` to a sequential scan, 5–30 ms an execution at a few thousand
 * jobs). Autovacuum analyzes the jobs table after 20,000 changes (schema/postgres/0001) and
 * looks at most once a minute: a burst into an empty table ran minutes on those plans.
 *
 * So each server looks, about once a second, at the cumulative statistics of `jobs` and
 * `job_dependencies`, and analyzes a table whose live rows have more than doubled (plus
 * `minRows`) since its last ANALYZE. That re-plans every statement reading it, from its
 * present size. It costs one catalog read a second and, while a table grows, one ANALYZE per
 * doubling; a table that shrinks (a queue draining) is left to autovacuum, as an index probe
 * planned for a large table stays right for a small one.
 */
import type { Op } from '../op.ts';
import { type Connection, rows, statement } from './sql.ts';

/** Live rows a table must have gained at least before it is analyzed here. */
const minRows = 500;

/**
 * $1 `minRows`: the store's growing tables whose live rows more than doubled since their last
 * ANALYZE. The statistics functions on the two tables' oids, rather than the
 * `pg_stat_user_tables` view over every table: 2 ms less planning and reading a second.
 */
const grown = statement(
  `SELECT c.relname::text AS name FROM pg_class c
    WHERE c.oid IN (to_regclass('jobs'), to_regclass('job_dependencies'))
      AND pg_stat_get_mod_since_analyze(c.oid) >= $1
      AND pg_stat_get_live_tuples(c.oid) >= 2 * greatest(c.reltuples, 0) + $1
    ORDER BY c.relname`,
);
/**
 * A sample of 900 rows rather than 30,000 (the default target of 100), in the read unit's
 * transaction only: an ANALYZE of 10,000 jobs took 7–13 rather than 37–54 ms (scratch timings
 * at load ~4), and 1.3–2.2 rather than 3.7–4.8 µs per job of a 10,000-job W1 drain it landed in.
 * What the plans need is the table's size and its columns' null fractions and distinct values,
 * which this gives; autovacuum's later ANALYZE makes the finer statistics.
 */
const coarse = statement('SET LOCAL default_statistics_target = 3');
/** SKIP_LOCKED: a table autovacuum (or another server) is working on is left to it. */
const analyze: Record<string, ReturnType<typeof statement>> = {
  jobs: statement('ANALYZE (SKIP_LOCKED) jobs'),
  job_dependencies: statement('ANALYZE (SKIP_LOCKED) job_dependencies'),
};

export interface StatisticsOps {
  /** Analyzes the tables that grew (see above); answers their names. */
  refresh(): Op<string[]>;
}

export function statisticsOps(c: Connection): StatisticsOps {
  return {
    *refresh() {
      const tables = (yield* rows<{ name: string }>(c, grown, [minRows])).map((r) => r.name);
      if (tables.length > 0) yield c.send(coarse, []);
      for (const table of tables) {
        const s = analyze[table];
        if (s !== undefined) yield c.send(s, []);
      }
      return tables;
    },
  };
}
