/** The tables of docs/*.md that tests check against the source (log events, metrics). */
import assert from 'node:assert/strict';

/**
 * The `code` names `keep` accepts in the first column of the tables under `## heading` of
 * `markdown` (up to the next `## `); the other columns' names are not read.
 */
export function firstColumnNames(
  markdown: string,
  heading: string,
  keep: (name: string) => boolean,
): Set<string> {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `the docs have a "## ${heading}" section`);
  const next = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, next < 0 ? markdown.length : next);
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('|')) continue;
    const firstCell = line.split('|')[1] ?? '';
    for (const m of firstCell.matchAll(/`([^`]+)`/g)) if (keep(m[1] ?? '')) names.add(m[1] ?? '');
  }
  return names;
}
