/**
 * Every log event the server writes is in the table of docs/observability.md ("Logs"), and
 * the table names no event the server does not write. The events are read from the source:
 * every call of a logger method — `x.debug|info|warn|error('event.name', …)` (`?.` too),
 * `logger[level]('event.name', …)`, and the admin app's `log.log('level', 'event.name', …)` —
 * must name its event with string literals (a conditional between literals counts), so a
 * new event cannot slip past by being built at run time: such a call fails here too.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { firstColumnNames } from '../helpers/docs-tables.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

interface SourceFile {
  readonly path: string;
  readonly text: string;
}

interface LoggedEvents {
  /** Event name → where it is logged (`path:line`). */
  readonly events: Map<string, string[]>;
  /** Logger calls whose event name is not written as string literals (`path:line`). */
  readonly unreadable: string[];
}

/**
 * Calls that pass on an event their caller named, with the text of their first argument:
 * the callers are scanned instead. Any other call without a literal name fails the test.
 */
const forwarders = new Set([
  // The admin app's `log.log(level, event, fields)` (its calls are read as `.log('level', 'event'`).
  'src/app-admin.ts: message',
]);

const eventName = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
/** A logger method called on something, or a level picked at run time, or the admin app's `log.log('level', …)`. */
const loggerCall =
  /(?<!console)(?:\?\.|\.)(?:debug|info|warn|error)\(|\b(?:logger|log)\[\w+\]\(|(?<!console)(?:\?\.|\.)log\(\s*'(?:debug|info|warn|error)'\s*,/g;

/** The first argument's text from `start` (just after `(` or `,`): up to a top-level `,` or `)`. */
function firstArgument(text: string, start: number): string {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'" || ch === '"' || ch === '`') {
      const end = text.indexOf(ch, i + 1);
      if (end < 0) return text.slice(start);
      i = end;
    } else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') {
      if (depth === 0) return text.slice(start, i);
      depth--;
    } else if (ch === ',' && depth === 0) return text.slice(start, i);
  }
  return text.slice(start);
}

/** The event names a source file's logger calls write, and the calls whose name cannot be read. */
function loggedEvents(files: readonly SourceFile[]): LoggedEvents {
  const events = new Map<string, string[]>();
  const unreadable: string[] = [];
  for (const file of files) {
    for (const match of file.text.matchAll(loggerCall)) {
      const lineStart = file.text.lastIndexOf('\n', match.index) + 1;
      const before = file.text.slice(lineStart, match.index).trimStart();
      // Comment lines name calls in prose; they log nothing.
      if (before.startsWith('*') || before.startsWith('/*') || before.startsWith('//')) continue;
      const where = `${file.path}:${file.text.slice(0, match.index).split('\n').length}`;
      const argument = firstArgument(file.text, match.index + match[0].length);
      const literals = [...argument.matchAll(/'([^']*)'|"([^"]*)"|`([^`$]*)`/g)].map(
        (m) => m[1] ?? m[2] ?? m[3] ?? '',
      );
      const names = literals.filter((literal) => eventName.test(literal));
      if (names.length === 0 || argument.includes('${')) {
        if (!forwarders.has(`${file.path}: ${argument.trim()}`))
          unreadable.push(`${where}: ${argument.trim().slice(0, 80)}`);
        continue;
      }
      for (const name of names) events.set(name, [...(events.get(name) ?? []), where]);
    }
  }
  return { events, unreadable };
}

/** The event names in the first column of the table under `## Logs`. */
const documentedEvents = (markdown: string) =>
  firstColumnNames(markdown, 'Logs', (name) => eventName.test(name));

function sourceFiles(): SourceFile[] {
  const src = join(repoRoot, 'src');
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts'))
    .sort()
    .map((path) => ({ path: `src/${path}`, text: readFileSync(join(src, path), 'utf8') }));
}

test('the scanner finds every way the server names an event, and a name it cannot read', () => {
  const found = loggedEvents([
    {
      path: 'a.ts',
      text: [
        "logger.warn('a.plain', { detail });",
        "deps.log?.error('a.optional');",
        'parts.logger.info(',
        "  'a.next_line',",
        '  { x: 1 },',
        ');',
        "logger.error(event === 'lost' ? 'a.lost' : 'a.rescue_failed', { detail });",
        "logger[level]('a.level_picked', { detail });",
        "deps.log?.log('warn', 'a.admin', { user });",
        " * logger.warn('a.in_comment') is prose",
        "// logger.warn('a.in_line_comment')",
        "console.error('not.an_event');",
        'logger.warn(name, { detail });',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal
        'logger.warn(`a.${kind}`);',
      ].join('\n'),
    },
  ]);
  assert.deepEqual([...found.events.keys()].sort(), [
    'a.admin',
    'a.level_picked',
    'a.lost',
    'a.next_line',
    'a.optional',
    'a.plain',
    'a.rescue_failed',
  ]);
  assert.deepEqual(found.events.get('a.next_line'), ['a.ts:3']);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal
  assert.deepEqual(found.unreadable, ['a.ts:13: name', 'a.ts:14: `a.${kind}`']);
});

test('the table reads every name of a row, and only its first column', () => {
  const names = documentedEvents(
    [
      '## Metrics',
      '| `sepp.jobs.enqueued` | counter |',
      '## Logs',
      '| event | level | fields |',
      '| --- | --- | --- |',
      '| `a.one`, `a.two` | info, warn | `detail` — see `b.mentioned` |',
      '## Next',
      '| `c.after` | info |',
    ].join('\n'),
  );
  assert.deepEqual([...names].sort(), ['a.one', 'a.two']);
});

test('every event the server logs is in the table of docs/observability.md, and nothing more', () => {
  const found = loggedEvents(sourceFiles());
  assert.deepEqual(found.unreadable, [], 'log calls must name their event with a string literal');
  // The scanner works on this tree: it sees events of every kind of call.
  for (const name of ['server.started', 'otel.export_problem', 'admin.login', 'storage.files_lost'])
    assert.ok(found.events.has(name), `the scan finds ${name}`);
  const documented = documentedEvents(readFileSync(join(repoRoot, 'docs/observability.md'), 'utf8'));
  const undocumented = [...found.events]
    .filter(([name]) => !documented.has(name))
    .map(([name, where]) => `${name} (${where.join(', ')})`);
  assert.deepEqual(undocumented, [], 'add these to the table under "## Logs" in docs/observability.md');
  const notLogged = [...documented].filter((name) => !found.events.has(name));
  assert.deepEqual(notLogged, [], 'docs/observability.md names events the server does not log');
});
