/**
 * Compares the per-queue, per-state counters (`queue_counts`, kept by the engine)
 * with the rows they count. Healthy databases give no mismatches. Used by the
 * engine's diagnostics and by crash tests that inspect a killed server's
 * database file read-only, without an engine.
 */
import type { Statements } from './statements.ts';

/** One line per counter that disagrees with a `count(*)` of its rows; empty when healthy. */
export function counterMismatches(sql: Pick<Statements, 'allCounts' | 'countsFromRows'>): string[] {
  const fromRows = new Map(sql.countsFromRows.all().map((r) => [`${r.queue}/${r.state}`, r.jobs]));
  const problems: string[] = [];
  for (const row of sql.allCounts.all()) {
    const key = `${row.queue}/${row.state}`;
    const actual = fromRows.get(key) ?? 0;
    if (actual !== row.jobs) problems.push(`${key}: counter ${row.jobs}, rows ${actual}`);
    fromRows.delete(key);
  }
  for (const [key, actual] of fromRows) problems.push(`${key}: no counter, rows ${actual}`);
  return problems;
}
