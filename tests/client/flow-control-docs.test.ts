/**
 * docs/flow-control.md as a user reads it: its configuration is a server's
 * configuration, and each `$ sepp …` command of its console example runs
 * against that server and prints what the page shows (ids and ages aside).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { runSepp } from '../helpers/cli.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const page = readFileSync(new URL('../../docs/flow-control.md', import.meta.url), 'utf8');
const block = (language: string): string => {
  const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(page)?.[1];
  assert.ok(found, `docs/flow-control.md has a ${language} block`);
  return found;
};

/** Splits a command line as a POSIX shell would for the quoting the page uses ('…'). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

/** What may differ between runs: job ids and ages; table cells are compared, not padding. */
function normalize(output: string): string[][] {
  return output
    .trim()
    .split('\n')
    .map((line) =>
      line
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
        .replace(/^(\S+\s+(?:\S+\s+){8})\d+(?:\.\d+)?(?:ms|s|m|h|d)\b/, '$1AGE')
        .split(/\s{2,}/),
    );
}

let t: TestServer;
before(async () => {
  t = await startTestServer({ toml: block('toml') });
});
after(async () => {
  await t.dispose();
});

test('the console example of docs/flow-control.md runs as shown', async () => {
  const session = block('console').trimEnd().split('\n');
  assert.ok(session[0]?.startsWith('$ '));
  let commands = 0;
  for (let i = 0; i < session.length; ) {
    const command = session[i]!.slice(2);
    const expected: string[] = [];
    for (i++; i < session.length && !session[i]!.startsWith('$ '); i++) expected.push(session[i]!);
    const [program, ...args] = words(command);
    assert.equal(program, 'sepp');
    const run = await runSepp(args, { SEPP_SERVER: t.address });
    assert.equal(run.code, 0, `${command}: ${run.stderr}`);
    assert.deepEqual(normalize(run.stdout), normalize(expected.join('\n')), command);
    commands++;
  }
  assert.equal(commands, 4);
});
