/**
 * The check every backend's `counts.mismatches` makes: its maintained counts
 * against a count of the rows, one line per disagreement (`queue/state:
 * counter N, rows M`); empty when exact.
 */
import type { QueueCountRow } from './rows.ts';

export function countMismatches(
  counted: readonly QueueCountRow[],
  fromRows: readonly QueueCountRow[],
): string[] {
  const rows = new Map(fromRows.map((r) => [`${r.queue}/${r.state}`, r.jobs]));
  const problems: string[] = [];
  for (const row of counted) {
    const key = `${row.queue}/${row.state}`;
    const actual = rows.get(key) ?? 0;
    if (actual !== row.jobs) problems.push(`${key}: counter ${row.jobs}, rows ${actual}`);
    rows.delete(key);
  }
  for (const [key, actual] of rows) problems.push(`${key}: no counter, rows ${actual}`);
  return problems;
}
