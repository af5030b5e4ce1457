/**
 * Every instrument the server creates is in the metrics table of docs/observability.md, and
 * the table names none it does not create. The names are read from src/telemetry's
 * `meter.create…('name', …)` calls, and from the calls of the two helpers that make
 * instruments of a name they are given (`jobs('enqueued', …)` is `sepp.jobs.enqueued`,
 * `upDown('sepp.events.backlog', …)`); any other call whose name is not a string literal
 * fails here, so a new instrument cannot slip past by a name built at run time.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { firstColumnNames } from '../helpers/docs-tables.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The helpers (their name argument, as written in their own `meter.create…` call) and the instrument names they make. */
const helpers: Readonly<Record<string, { argument: string; name: (given: string) => string }>> = {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal
  jobs: { argument: '`sepp.jobs.${name}`', name: (given) => `sepp.jobs.${given}` },
  upDown: { argument: 'name', name: (given) => given },
};

function createdInstruments(): { names: Set<string>; unreadable: string[] } {
  const names = new Set<string>();
  const unreadable: string[] = [];
  const dir = join(repoRoot, 'src', 'telemetry');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const m of text.matchAll(/\bmeter\.create\w+\(\s*([^,]+),/g)) {
      const argument = (m[1] ?? '').trim();
      const literal = /^'([^']+)'$/.exec(argument);
      if (literal?.[1] !== undefined) names.add(literal[1]);
      else if (!Object.values(helpers).some((h) => h.argument === argument))
        unreadable.push(`${file}: ${argument}`);
    }
    for (const [helper, { name }] of Object.entries(helpers)) {
      for (const m of text.matchAll(new RegExp(`\\b${helper}\\(\\s*'([^']+)'`, 'g')))
        names.add(name(m[1] ?? ''));
    }
  }
  return { names, unreadable };
}

/** The OpenTelemetry names in the first column of the tables under `## Metrics`. */
const documentedInstruments = (markdown: string) =>
  firstColumnNames(markdown, 'Metrics', (name) => /^[a-z_.]+$/.test(name));

test('every instrument the server creates is in the metrics table of docs/observability.md, and nothing more', () => {
  const { names, unreadable } = createdInstruments();
  assert.deepEqual(unreadable, [], 'name instruments with string literals (or through jobs() or upDown())');
  // The scan works on this tree: it sees instruments made each way.
  for (const name of [
    'sepp.jobs.enqueued',
    'sepp.events.backlog',
    'rpc.server.duration',
    'sepp.answers.beyond_room',
  ])
    assert.ok(names.has(name), `the scan finds ${name}`);
  const documented = documentedInstruments(readFileSync(join(repoRoot, 'docs/observability.md'), 'utf8'));
  assert.deepEqual(
    [...names].filter((name) => !documented.has(name)).sort(),
    [],
    'add these to the metrics table of docs/observability.md',
  );
  assert.deepEqual(
    [...documented].filter((name) => !names.has(name)).sort(),
    [],
    'docs/observability.md names instruments the server does not create',
  );
});
