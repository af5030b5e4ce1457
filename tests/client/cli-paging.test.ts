/**
 * The CLI's paging flags (issue 29): `sepp queues` and `sepp dlq list` show one
 * page with `--page-size` / `--page-token` and end it with the next page's
 * token; following the tokens gives every entry once; `--all` follows every
 * page (past `--limit`); `--all` with a page flag is a usage error (exit 2).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { cliJson, sepp } from '../helpers/cli.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
let env: Record<string, string>;
const queues = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e'];

before(async () => {
  t = await startTestServer();
  env = { SEPP_SERVER: t.address };
  const engine = t.server.engine;
  await engine.enqueueBatch(queues.map((queue) => ({ queue, type: 't', payload: new Uint8Array() })));
  // Four dead letters in p-a (its first job and three more).
  await engine.enqueueBatch(
    Array.from({ length: 3 }, () => ({ queue: 'p-a', type: 't', payload: new Uint8Array() })),
  );
  for (const job of await engine.reserve({ queues: ['p-a'], maxJobs: 4, leaseMs: 60_000, waitMs: 0 })) {
    await engine.nack({
      jobId: job.id,
      attempt: job.attempt,
      error: 'no',
      directive: { kind: 'dead_letter' },
    });
  }
});
after(async () => {
  await t.dispose();
});

test('sepp queues --page-size 2: pages joined by --page-token give every queue once, in order', async () => {
  const seen: string[] = [];
  let token: string | null = '';
  let pages = 0;
  while (token !== null && pages < 10) {
    const args = ['queues', '--json', '--page-size', '2', ...(token === '' ? [] : ['--page-token', token])];
    const page: { queues: { name: string }[]; nextPageToken: string | null } = cliJson(await sepp(args, env));
    assert.ok(page.queues.length <= 2);
    seen.push(...page.queues.map((q) => q.name));
    token = page.nextPageToken;
    pages++;
  }
  assert.deepEqual(seen, queues);
  assert.equal(pages, 3);
  const human = await sepp(['queues', '--page-size', '2'], env);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^p-a\s/m);
  assert.doesNotMatch(human.stdout, /^p-c\s/m);
  assert.match(human.stdout, /^\(more: --page-token \S+\)$/m);
  // Without paging flags: every queue, as before.
  const all = cliJson<{ name: string }[]>(await sepp(['queues', '--json'], env));
  assert.deepEqual(
    all.map((q) => q.name),
    queues,
  );
});

test('sepp dlq list: --page-size/--page-token page, --all follows every page past --limit', async () => {
  const first: { jobs: { id: string }[]; nextPageToken: string | null } = cliJson(
    await sepp(['dlq', 'list', 'p-a', '--json', '--page-size', '2'], env),
  );
  assert.equal(first.jobs.length, 2);
  assert.ok(first.nextPageToken);
  const second: { jobs: { id: string }[]; nextPageToken: string | null } = cliJson(
    await sepp(['dlq', 'list', 'p-a', '--json', '--page-token', first.nextPageToken], env),
  );
  assert.equal(second.jobs.length, 2);
  assert.equal(second.nextPageToken, null);
  assert.equal(new Set([...first.jobs, ...second.jobs].map((j) => j.id)).size, 4);
  const all = cliJson<{ id: string }[]>(
    await sepp(['dlq', 'list', 'p-a', '--json', '--all', '--limit', '1'], env),
  );
  assert.equal(all.length, 4);
  const limited = cliJson<{ id: string }[]>(
    await sepp(['dlq', 'list', 'p-a', '--json', '--limit', '1'], env),
  );
  assert.equal(limited.length, 1);
});

test('--all with --page-size or --page-token is a usage error; a bad page size says why', async () => {
  for (const args of [
    ['queues', '--all', '--page-size', '2'],
    ['dlq', 'list', 'p-a', '--all', '--page-token', 'x'],
  ]) {
    const run = await sepp(args, env);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, /give --all or --page-size\/--page-token, not both/);
  }
  const bad = await sepp(['queues', '--page-size', 'ten'], env);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--page-size "ten" is not a whole number/);
});
