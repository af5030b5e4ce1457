/**
 * The docs' tables stay formatted: every Markdown table in README.md, SECURITY.md,
 * ARCHITECTURE.md, docs/ (and its decisions), packaging/ and the SDKs' docs has its
 * columns aligned, every row's cell borders where the separator row has them (as a
 * formatter pads them). `npm run lint` does not cover Markdown: Biome formats no `.md`
 * file. Widths are counted in code points, which is what the docs' characters take.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/cli.ts';

function docFiles(): string[] {
  const files = ['README.md', 'SECURITY.md', 'ARCHITECTURE.md', 'packaging/README.md'];
  for (const dir of ['docs', 'docs/decisions']) {
    for (const name of readdirSync(join(repoRoot, dir)).sort())
      if (name.endsWith('.md')) files.push(`${dir}/${name}`);
  }
  for (const name of readdirSync(join(repoRoot, 'clients')).sort()) {
    for (const doc of ['README.md', 'REFERENCE.md'])
      if (existsSync(join(repoRoot, 'clients', name, doc))) files.push(`clients/${name}/${doc}`);
  }
  return files.filter((file) => existsSync(join(repoRoot, file)));
}

/** Where a row's cell borders are: its unescaped pipes, in code points from the row's start. */
function borders(row: string): number[] {
  const chars = [...row];
  return chars.flatMap((ch, i) => (ch === '|' && chars[i - 1] !== '\\' ? [i] : []));
}

const separator = /^\|[\s:|-]+\|$/;

test('every Markdown table in the docs has its columns aligned', () => {
  const misaligned: string[] = [];
  let tables = 0;
  for (const file of docFiles()) {
    const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
    for (let i = 0; i + 1 < lines.length; i++) {
      if (!lines[i]!.startsWith('|') || !separator.test(lines[i + 1]!)) continue;
      tables++;
      const expected = borders(lines[i + 1]!).join();
      for (let j = i; j < lines.length && lines[j]!.startsWith('|'); j++) {
        if (borders(lines[j]!).join() !== expected) misaligned.push(`${file}:${j + 1}`);
      }
    }
  }
  assert.ok(tables > 50, `tables found: ${tables}`);
  assert.deepEqual(
    misaligned,
    [],
    'rows whose cells do not line up with their table (pad them as a formatter would)',
  );
});
