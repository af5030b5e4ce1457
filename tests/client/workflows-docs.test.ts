/**
 * docs/workflows.md as a user reads it: each `ts` example runs against a server with
 * the SDK (`client`, `Flow` in scope, as after the imports a program would have) and
 * prints what the `text` block after it shows (job ids aside).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
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
