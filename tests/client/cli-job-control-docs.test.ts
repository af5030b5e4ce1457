/**
 * docs/cli.md's "Job control" session, run as a reader would: every `sepp`
 * command of its console block runs in order against a server holding the
 * jobs it talks about, succeeds, and prints what the docs show (the job ids in
 * the docs stand for jobs made here).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { sepp } from '../helpers/cli.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const adminKey = 'cli-docs-admin-key-0123456789';
registerSecret('CLI docs admin key', adminKey);
const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'cli.md'), 'utf8');
const uuid = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

/** The section's console block as commands, each with the output the docs show (maybe none). */
function session(): { args: string[]; shown: string }[] {
  const section = docs.split('\n## Job control\n')[1]?.split('\n## ')[0] ?? '';
  const block = /```console\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block !== undefined, 'docs/cli.md has a console block under "Job control"');
  const steps: { args: string[]; shown: string }[] = [];
  for (const line of block.trimEnd().split('\n')) {
    if (line.startsWith('$ sepp ')) steps.push({ args: line.slice('$ sepp '.length).split(' '), shown: '' });
    else {
      const last = steps.at(-1);
      assert.ok(last !== undefined, `output before any command: ${line}`);
      last.shown += `${line}\n`;
    }
  }
  return steps;
}

let t: TestServer;
let client: SeppClient;

before(async () => {
  t = await startTestServer({
    toml: `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${adminKey}"\n`,
  });
  client = SeppClient.connect(t.address, { apiKey: adminKey });
});
after(async () => {
  await client.close();
  await t.dispose();
});

test('every command of the job control session runs and prints what the docs show', async () => {
  const later = { delayMs: 3_600_000 };
  // The jobs the docs' ids stand for, in the order the ids appear: one to cancel, one to update.
  const stand = [(await client.enqueue('emails', 'send', undefined, later)).id];
  stand.push((await client.enqueue('emails', 'send', undefined, later)).id);
  for (let i = 0; i < 3; i++) await client.enqueue('bulk', 'digest');
  for (let i = 0; i < 2; i++) await client.enqueue('updates', 'report', undefined, later);
  for (let i = 0; i < 3; i++) await client.enqueue('purged', 't');

  const ids = new Map<string, string>();
  const real = (text: string) =>
    text.replace(uuid, (id) => {
      if (!ids.has(id)) ids.set(id, stand[ids.size] ?? assert.fail(`more ids in the docs than jobs: ${id}`));
      return ids.get(id)!;
    });
  const steps = session();
  assert.ok(steps.length >= 8, `${steps.length} commands`);
  for (const step of steps) {
    const args = step.args.map(real);
    const run = await sepp(args, { SEPP_SERVER: t.address, SEPP_API_KEY: adminKey });
    assert.equal(run.code, 0, `sepp ${args.join(' ')}: ${run.stderr}`);
    if (step.shown !== '') assert.equal(run.stdout, real(step.shown), `sepp ${args.join(' ')}`);
  }
  assert.equal((await client.getJob(stand[0]!)).state, 'cancelled');
  assert.equal((await client.getJob(stand[1]!)).priority, 7);
  assert.equal((await client.getJob(stand[1]!)).group, 'acme');
});
