/**
 * docs/workflows.md as a user reads it: each `ts` example runs against a server with
 * the SDK (`client`, `Flow` in scope, as after the imports a program would have) and
 * prints what the `text` block after it shows (job ids aside).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Flow, type SeppClient } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const page = readFileSync(new URL('../../docs/workflows.md', import.meta.url), 'utf8');
/** Each example: its code and the output shown after it. */
const examples = [...page.matchAll(/```ts\n([\s\S]*?)```\n\nIt prints[^\n]*\n\n```text\n([\s\S]*?)```/g)].map(
  (m) => ({
    code: m[1]!,
    output: m[2]!.trimEnd(),
  }),
);

type Example = (client: SeppClient, flow: typeof Flow, console: { log(line: string): void }) => Promise<void>;
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => Example;

const served = serverAndClient();

test('docs/workflows.md: every example runs and prints what the page shows', async () => {
  assert.equal(examples.length, 5, 'the page has five examples, each followed by its output');
  for (const { code, output } of examples) {
    const lines: string[] = [];
    const run = new AsyncFunction('client', 'Flow', 'console', code);
    await run(served.client, Flow, { log: (line) => lines.push(line) });
    const printed = lines
      .join('\n')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID');
    assert.equal(printed, output);
  }
});

test('docs/workflows.md: an example runs as the ES module the page says it is the body of', async (t) => {
  const module = /<!-- workflows\.md#module -->\n```js\n([\s\S]*?)```/.exec(page)?.[1];
  assert.ok(module, 'the page shows the module each example is the body of');
  const etl = examples.find(({ code }) => code.includes('new Flow()'));
  assert.ok(etl, 'the ETL example');
  // The module as a user saves it, but for where it finds the SDK: its sources here (tsx
  // compiles them), the package in a project of the user's.
  const sdk = pathToFileURL(join(import.meta.dirname, '../../clients/typescript/src/index.ts')).href;
  assert.ok(module.includes("from '@sepp-queue/client'"));
  const dir = mkdtempSync(join(tmpdir(), 'sepp-workflows-module-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'etl.mjs');
  writeFileSync(
    file,
    `${module.replace("'@sepp-queue/client'", JSON.stringify(sdk))}\n${etl.code}\nexport { client };\n`,
  );
  const lines: string[] = [];
  const log = console.log;
  const server = process.env.SEPP_SERVER;
  process.env.SEPP_SERVER = served.server.address;
  console.log = (line: string) => lines.push(line);
  try {
    const ran = (await import(pathToFileURL(file).href)) as { client: SeppClient };
    await ran.client.close();
  } finally {
    console.log = log;
    if (server === undefined) delete process.env.SEPP_SERVER;
    else process.env.SEPP_SERVER = server;
  }
  assert.deepEqual(lines, [etl.output]);
});
