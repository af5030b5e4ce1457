/**
 * Docs and binary cannot drift: every `sepp …` command line in README.md,
 * docs/*.md and packaging/ (code blocks, and inline code in prose and tables)
 * is parsed by the real command-line parser in dry-run mode — the command path
 * must exist and accept every flag given, with nothing run. Placeholders of
 * the docs' syntax lines (`QUEUE`, `IDS…`, `[--limit N]`) become sample values.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { buildCli, commandGroups, DryRunAccepted, topLevelCommands } from '../../src/cli/parser.ts';
import { repoRoot, testIo } from '../helpers/cli.ts';

interface Found {
  where: string;
  text: string;
  /** A full command line (code block) or a reference in prose (inline code: may leave out arguments). */
  kind: 'line' | 'reference';
}

function docFiles(): string[] {
  const files = ['README.md', 'packaging/README.md'];
  for (const name of readdirSync(join(repoRoot, 'docs')).sort())
    if (name.endsWith('.md')) files.push(`docs/${name}`);
  const clients = join(repoRoot, 'clients');
  if (existsSync(clients)) {
    for (const name of readdirSync(clients).sort()) {
      if (existsSync(join(clients, name, 'README.md'))) files.push(`clients/${name}/README.md`);
    }
  }
  return files;
}

/** Splits a shell command line into words; stops at a comment, a redirection or the end of the command. */
function shellWords(line: string): { words: string[]; rest: string } {
  const words: string[] = [];
  let word: string | null = null;
  let i = 0;
  const push = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  for (; i < line.length; i++) {
    const ch = line[i] ?? '';
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end;
    } else if (ch === '"') {
      let j = i + 1;
      let text = '';
      while (j < line.length && line[j] !== '"') {
        if (line[j] === '\\' && j + 1 < line.length) j++;
        text += line[j];
        j++;
      }
      word = (word ?? '') + text;
      i = j;
    } else if (ch === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else if (/\s/.test(ch)) {
      push();
    } else if (word === null && ch === '#') {
      break;
    } else if (
      ch === '>' ||
      ch === '<' ||
      ch === ';' ||
      (ch === '|' && word === null) ||
      line.startsWith('&&', i)
    ) {
      push();
      return { words, rest: line.slice(i) };
    } else {
      word = (word ?? '') + ch;
    }
  }
  push();
  return { words, rest: '' };
}

/** `sepp …` commands in one line of a code block: after a `$ ` prompt, `sudo`, `&&`, `;` or `|`. */
function commandsInLine(line: string): string[] {
  const found: string[] = [];
  let text = line.trim().replace(/^\$\s+/, '');
  while (text !== '') {
    const { words, rest } = shellWords(text);
    let start = 0;
    while (/^[A-Z_][A-Z0-9_]*=/.test(words[start] ?? '')) start++; // VAR=value sepp …
    if (words[start] === 'sudo' || words[start] === 'npx') start++;
    const program = words[start] ?? '';
    if (program === 'sepp' || program.endsWith('/sepp'))
      found.push(['sepp', ...words.slice(start + 1)].join('\u0000'));
    else if (program === 'npm' && words[start + 1] === 'start') {
      // `npm start [--silent] -- ARGS` runs `sepp ARGS` from the checkout, and `sepp serve`
      // when ARGS are none or begin with a flag (bin/sepp.mjs).
      const dashes = words.indexOf('--', start);
      const args = dashes < 0 ? [] : words.slice(dashes + 1);
      const serve = args[0] === undefined || args[0].startsWith('-') ? ['serve'] : [];
      found.push(['sepp', ...serve, ...args].join('\u0000'));
    }
    text = rest.replace(/^(&&|\|\||[;|]|[0-9]?>>?\s*\S+|<\s*\S+)\s*/, '');
    if (text === rest) break;
  }
  return found;
}

/** Every `sepp` command line and reference in a markdown file. */
export function extractCommands(markdown: string, file: string): Found[] {
  const found: Found[] = [];
  const lines = markdown.split('\n');
  let fence: string | null = null;
  let block: { start: number; lines: string[] } | null = null;
  let previousBlank = true;
  const flushBlock = () => {
    if (block === null) return;
    const prompted = block.lines.some((l) => /^\s*\$ /.test(l));
    block.lines.forEach((l, k) => {
      if (prompted && !/^\s*\$ /.test(l)) return; // output lines of a console session
      for (const text of commandsInLine(l))
        found.push({ where: `${file}:${(block?.start ?? 0) + k + 1}`, text, kind: 'line' });
    });
    block = null;
  };
  lines.forEach((line, n) => {
    const fenceMark = /^\s*(```|~~~)/.exec(line)?.[1];
    if (fence !== null) {
      if (fenceMark === fence) {
        flushBlock();
        fence = null;
      } else block?.lines.push(line);
      return;
    }
    if (fenceMark !== undefined) {
      fence = fenceMark;
      block = { start: n + 1, lines: [] };
      return;
    }
    const indented = /^( {4}|\t)/.test(line);
    if (indented && (block !== null || previousBlank)) {
      block ??= { start: n, lines: [] };
      block.lines.push(line);
      return;
    }
    if (block !== null && line.trim() === '') {
      block.lines.push(line);
      return;
    }
    flushBlock();
    previousBlank = line.trim() === '';
    for (const span of line.matchAll(/`([^`]+)`/g)) {
      const text = (span[1] ?? '').trim();
      if (text === 'sepp' || !/^sepp\s/.test(text)) continue;
      for (const command of commandsInLine(text.replace(/\\\|/g, '|'))) {
        found.push({ where: `${file}:${n + 1}`, text: command, kind: 'reference' });
      }
    }
  });
  flushBlock();
  return found;
}

/** Sample values for the docs' placeholders: by the flag they follow, else by name. */
const afterFlag: Readonly<Record<string, string>> = {
  '--reason': 'attempts_exhausted',
  '--role': 'producer',
  '--limit': '5',
  '--priority': '5',
  '--output': 'json',
  '--queue': 'emails',
  '--type': 'send',
  '--state': 'ready',
  '--group': 'acme',
  '--new-group': 'acme',
  '--actor': 'key:ops',
  '--action': 'queue.pause',
  '--target': 'queue:emails',
  '--run-at': '2026-05-01T09:00:00Z',
  '--delay': '30s',
  '--timeout-ms': '5000',
  '--job': '01a2365f-985c-7000-b7f9-d57e51622832',
  '--kind': 'completed',
};
const byName: Readonly<Record<string, string>> = {
  QUEUE: 'emails',
  COMMAND: 'queues',
  TYPE: 'send',
  ID: '01a2365f-985c-7000-b7f9-d57e51622832',
  IDS: '01a2365f-985c-7000-b7f9-d57e51622832',
  FILE: 'copy.db',
  F: 'payload.json',
  PAYLOAD: '{}',
  TEXT: '{}',
  T: 'text/plain',
  K: 'key-1',
  N: 'billing',
  NAME: 'nightly-report',
  'KEY=VALUE': 'tenant=acme',
  'HOST:PORT': '127.0.0.1:50051',
  KEY: 'key-0123456789abcdef',
  KEYS: 'max_attempts',
};

/** The arguments after `sepp`, with the syntax of usage lines ([…], (…|…), PLACEHOLDERS) made concrete. */
function concreteArgs(words: readonly string[]): { args: string[]; problem?: string } {
  const args: string[] = [];
  for (const raw of words) {
    const word = raw.replace(/^[[(]+/, '').replace(/[\])]+$/, '');
    if (word === '' || word === '|') continue;
    const name = word.replace(/…$/, '');
    if (/^[A-Z][A-Z0-9_:=]*$/.test(name)) {
      const sample = afterFlag[args.at(-1) ?? ''] ?? byName[name];
      if (sample === undefined)
        return { args, problem: `no sample value for the placeholder ${word}; add one to this test` };
      args.push(sample);
    } else args.push(word);
  }
  return { args };
}

type Verdict = { ok: true } | { ok: false; message: string };

/** Parses `args` with the real parser in dry-run mode: nothing runs, nothing is printed. */
async function check(args: readonly string[], kind: Found['kind']): Promise<Verdict> {
  const help = args.some((a) => a === '--help' || a === '-h');
  const given = help ? args.filter((a) => a !== '--help' && a !== '-h') : args;
  // A reference (or a --help line) names a command and its flags; its arguments may be left out.
  const partial = help || kind === 'reference';
  const parser = buildCli(given, testIo(), { dryRun: true });
  try {
    await new Promise<void>((resolve, reject) => {
      parser
        .parseAsync(given, {}, (error: Error | undefined) => (error ? reject(error) : resolve()))
        .then(() => resolve(), reject);
    });
    return { ok: true };
  } catch (error) {
    if (error instanceof DryRunAccepted) return { ok: true };
    const message = error instanceof Error ? error.message : String(error);
    if (
      partial &&
      /^(missing arguments|missing [A-Z][A-Z-]*(…)?( and [A-Z][A-Z-]*(…)?)*: sepp |missing required argument|name an? \S+ subcommand)/.test(
        message,
      )
    ) {
      return { ok: true };
    }
    return { ok: false, message };
  }
}

describe('every sepp command in the docs is one the CLI accepts', () => {
  const found = docFiles().flatMap((file) =>
    extractCommands(readFileSync(join(repoRoot, file), 'utf8'), file),
  );

  test('the docs show the commands this test is about', () => {
    const texts = found.map((f) => f.text.split('\u0000').join(' '));
    for (const expected of [
      'sepp queues --json', // docs/development.md: npm start --silent -- queues --json
      'sepp enqueue emails send --json {"to":"ada@example.com"}', // README: npx sepp enqueue …
      'sepp serve --data-dir /tmp/walk/data --log-level debug', // observability.md: VAR=… npm start -- …
      'sepp admin hash-password',
      'sepp config example',
      'sepp queues',
      'sepp --version',
    ]) {
      assert.ok(texts.includes(expected), `${expected} is among the ${found.length} commands found`);
    }
    assert.ok(found.length >= 40, `found ${found.length}`);
  });

  test('each one parses: the command path exists and takes every flag given', async () => {
    const problems: string[] = [];
    for (const f of found) {
      const words = f.text.split('\u0000').slice(1);
      const { args, problem } = concreteArgs(words);
      const verdict =
        problem === undefined ? await check(args, f.kind) : { ok: false as const, message: problem };
      if (!verdict.ok) problems.push(`${f.where}: \`${words.join(' ') || 'sepp'}\`: ${verdict.message}`);
    }
    assert.deepEqual(problems, []);
  });

  test('docs/cli.md shows every command and subcommand the CLI has', () => {
    const shown = new Set(
      found
        .filter((f) => f.where.startsWith('docs/cli.md:'))
        .flatMap((f) => {
          // `sepp schedules [list]` shows the subcommand too.
          const [, first, second] = f.text.split('\u0000').map((w) => w.replace(/^\[|\]$/g, ''));
          return [first ?? '', `${first} ${second}`];
        }),
    );
    const missing = [
      ...topLevelCommands.filter((c) => !shown.has(c)),
      ...Object.entries(commandGroups).flatMap(([group, subs]) =>
        subs.filter((s) => !shown.has(`${group} ${s}`)).map((s) => `${group} ${s}`),
      ),
    ];
    assert.deepEqual(missing, [], 'commands `sepp --help` lists that docs/cli.md never shows');
  });

  test('the checker itself catches an unknown command, subcommand and flag', async () => {
    const markdown = [
      'Run `sepp admin hash-pasword` or `sepp queues --bogus` or:',
      '',
      '```console',
      '$ sepp pausse emails',
      'output line',
      '$ npm start --silent -- queus --json',
      '```',
      '',
      '    sepp queue delete emails --forse',
    ].join('\n');
    const wrong = extractCommands(markdown, 'x.md');
    assert.equal(wrong.length, 5);
    for (const f of wrong) {
      const verdict = await check(concreteArgs(f.text.split('\u0000').slice(1)).args, f.kind);
      assert.equal(verdict.ok, false, `${f.where} ${f.text}`);
    }
  });

  test('the command lists the parser keeps for its messages match `sepp --help`', async () => {
    const help = async (args: string[]) => {
      const parser = buildCli(args, testIo(), { dryRun: true });
      return new Promise<string>((resolve, reject) => {
        parser.parseAsync(args, {}, (error: Error | undefined, _argv: unknown, output: string) =>
          error ? reject(error) : resolve(output),
        );
      });
    };
    const commandsIn = (text: string, prefix: string) =>
      [...text.matchAll(new RegExp(`^ {2}${prefix} ([a-z-]+)`, 'gm'))].map((m) => m[1]).sort();
    assert.deepEqual(commandsIn(await help(['--help']), 'sepp'), [...topLevelCommands].sort());
    for (const [group, subcommands] of Object.entries(commandGroups)) {
      assert.deepEqual(
        commandsIn(await help([group, '--help']), `sepp ${group}`),
        [...subcommands].sort(),
        group,
      );
    }
  });
});
