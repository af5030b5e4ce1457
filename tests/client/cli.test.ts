/**
 * The operator commands as a user runs them: `sepp …` (in-process,
 * tests/helpers/cli.ts) against a real server, checking the human output, the --json output and
 * the exit codes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { cliJson, sepp } from '../helpers/cli.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';
import { testStoreKind } from '../helpers/test-store.ts';

const json = cliJson;

describe('operator CLI', () => {
  let t: TestServer;
  let client: SeppClient;
  let env: Record<string, string>;
  let dir: string;

  before(async () => {
    t = await startTestServer({ toml: '[queues.tiny]\nmax_payload_bytes = 4\n' });
    client = SeppClient.connect(t.address);
    env = { SEPP_SERVER: t.address };
    dir = mkdtempSync(join(tmpdir(), 'sepp-cli-'));
  });
  after(async () => {
    await client.close();
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('enqueue --debounce-key: the second enqueue is absorbed by the waiting job (docs/cli.md example)', async () => {
    // The example of docs/cli.md and `sepp enqueue --help`, run twice.
    const line = ['enqueue', 'search', 'reindex', '--json', '{"doc":7}', '--debounce-key', 'doc-7'];
    const timing = ['--debounce', '30s', '--debounce-max', '5m'];
    const first = await sepp([...line, ...timing], env);
    assert.equal(first.code, 0, first.stderr);
    const id = /^enqueued (\S+) on search$/.exec(first.stdout.trim())?.[1];
    assert.ok(id, first.stdout);
    const second = await sepp(
      ['enqueue', 'search', 'reindex', '--json', '{"doc":7,"v":2}', '--debounce-key', 'doc-7', ...timing],
      env,
    );
    assert.equal(second.code, 0, second.stderr);
    assert.equal(
      second.stdout.trim(),
      `debounced into ${id} on search (it waits with key doc-7; it now holds this payload)`,
    );
    const scripted = json<{ id: string; debounced: boolean }>(
      await sepp([...line, ...timing, '-o', 'json'], env),
    );
    assert.deepEqual([scripted.id, scripted.debounced], [id, true]);
    const job = await client.getJob(id);
    assert.equal(job.state, 'scheduled');
    assert.equal(job.debounceKey, 'doc-7');
    assert.equal(job.debounceUntil!.getTime() - job.enqueuedAt.getTime(), 300_000);
    const shown = await sepp(['job', id], env);
    assert.match(shown.stdout, /debounce key +doc-7 \(pushed back at most to /);
    const usage = await sepp(['enqueue', 'search', 'reindex', '--debounce', '30s'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--debounce needs --debounce-key/);
  });

  test('enqueue: payload flags, options, human and JSON output', async () => {
    const human = await sepp(['enqueue', 'emails', 'send', '--json', '{"to":"ada@example.com"}'], env);
    assert.equal(human.code, 0, human.stderr);
    const id = /^enqueued (\S+) on emails$/.exec(human.stdout.trim())?.[1];
    assert.ok(id, human.stdout);
    const job = await client.getJob(id);
    assert.equal(job.contentType, 'application/json');
    assert.deepEqual(job.json(), { to: 'ada@example.com' });

    const file = join(dir, 'report.json');
    writeFileSync(file, '{"month":"2026-05"}');
    const scripted = json<{ id: string; deduplicated: boolean }>(
      await sepp(
        [
          'enqueue',
          'reports',
          'build',
          '--file',
          file,
          '--priority',
          '7',
          '--delay',
          '30s',
          '--key',
          'may',
          '--max-attempts',
          '2',
          '--meta',
          'tenant=acme',
          '-o',
          'json',
        ],
        env,
      ),
    );
    assert.equal(scripted.deduplicated, false);
    const report = await client.getJob(scripted.id);
    assert.equal(report.state, 'scheduled');
    assert.equal(report.runAt.getTime() - report.enqueuedAt.getTime(), 30_000);
    assert.equal(report.priority, 7);
    assert.equal(report.maxAttempts, 2);
    assert.equal(report.idempotencyKey, 'may');
    assert.deepEqual(report.metadata, { tenant: 'acme' });
    assert.equal(report.contentType, 'application/json');

    const again = json<{ id: string; deduplicated: boolean }>(
      await sepp(['enqueue', 'reports', 'build', '--key', 'may', '-o', 'json'], env),
    );
    assert.deepEqual(again, { id: scripted.id, deduplicated: true, debounced: false });

    const runAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 86_400_000).toISOString();
    const at = await sepp(['enqueue', 'later', 't', '--run-at', runAt, '-o', 'json'], env);
    assert.equal((await client.getJob(json<{ id: string }>(at).id)).runAt.toISOString(), runAt);
  });

  test('enqueue: bad input exits 2 with the reason', async () => {
    const badJson = await sepp(['enqueue', 'q', 't', '--json', '{nope'], env);
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /--json is not valid JSON/);
    const badDelay = await sepp(['enqueue', 'q', 't', '--delay', '10 parsecs'], env);
    assert.equal(badDelay.code, 2);
    assert.match(badDelay.stderr, /--delay/);
    const tooBig = await sepp(['enqueue', 'tiny', 't', '--json', '"far too large"'], env);
    assert.equal(tooBig.code, 2);
    assert.match(tooBig.stderr, /payload_too_large/);
    const missing = await sepp(['enqueue', 'q'], env);
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr, 'sepp: missing TYPE: sepp enqueue QUEUE TYPE (see sepp enqueue --help)\n');
  });

  test('queues: a table for people, JSON for scripts', async () => {
    const first = await client.enqueue('listed', 't');
    await client.enqueue('listed', 't');
    // A job waiting on a dependency is counted, in a column of its own (issue: it was in none).
    await client.enqueue('held', 't', '', { dependsOn: [first.id] });
    const table = await sepp(['queues'], env);
    assert.equal(table.code, 0, table.stderr);
    const [header, ...rows] = table.stdout.trim().split('\n');
    assert.match(
      header ?? '',
      /^QUEUE\s+PAUSED\s+WAITING\s+SCHEDULED\s+READY\s+LEASED\s+DEAD\s+COMPLETED\s+CANCELLED\s+OLDEST READY\s+RESERVES WAITING$/,
    );
    assert.ok(
      rows.some((r) => /^listed\s+no\s+0\s+0\s+2\s+0\s+0\s+0\s+0\s+\S+\s+0$/.test(r)),
      table.stdout,
    );
    assert.ok(
      rows.some((r) => /^held\s+no\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+-\s+0$/.test(r)),
      table.stdout,
    );
    await client.enqueue('later', 't', '', { delayMs: 3_600_000 });
    const queues = json<
      { name: string; counts: { ready: number; waiting: number }; oldestReadyAgeMs: number | null }[]
    >(await sepp(['queues', '--json'], env));
    const listed = queues.find((q) => q.name === 'listed');
    assert.equal(listed?.counts.ready, 2);
    assert.equal(queues.find((q) => q.name === 'held')?.counts.waiting, 1);
    assert.equal(typeof listed?.oldestReadyAgeMs, 'number');
    // No ready job: no age (0 would read as "a job became due just now").
    assert.equal(queues.find((q) => q.name === 'later')?.oldestReadyAgeMs, null);
  });

  test('workers: who is connected and the reserves waiting, as a table and as JSON', async () => {
    await client.enqueue('staffed', 't');
    // A lease that outlasts both commands, however slowly a loaded machine runs them.
    const [job] = await client.reserve({ queues: ['staffed'], workerId: 'cli-worker-1', leaseMs: 3_600_000 });
    assert.ok(job);
    // A long-poll on an empty queue, waiting while both commands run; aborted at the end.
    const stop = new AbortController();
    const waiting = client
      .reserve({ queues: ['unstaffed'], waitMs: 60_000, workerId: 'cli-waiter', signal: stop.signal })
      .catch(() => []);
    let page = await client.listWorkersPage();
    for (let i = 0; i < 1000 && page.waitingReserves === 0; i++) page = await client.listWorkersPage();
    assert.equal(page.waitingReserves, 1);
    const table = await sepp(['workers'], env);
    assert.equal(table.code, 0, table.stderr);
    const [header, ...rows] = table.stdout.trim().split('\n');
    assert.match(
      header ?? '',
      /^WORKER\s+ADDRESS\s+TRANSPORT\s+QUEUES\s+JOBS\s+HOLDING FOR\s+DONE\/FAILED 15M\s+LAST SEEN$/,
    );
    assert.ok(
      rows.some((r) => /^cli-worker-1\s+\S+:\d+\s+reserve\s+staffed\s+1\s+\S+\s+0\/0\s+\S+ ago$/.test(r)),
      table.stdout,
    );
    assert.equal(rows.at(-1), '1 reserve (long-polls and Work streams) waiting for jobs now');
    // JSON stays the array of workers it always was (scripts read it); the count is in the table's line.
    const workers = json<{ workerId: string; jobsHeld: number; transport: string }[]>(
      await sepp(['workers', '--json'], env),
    );
    assert.deepEqual(
      workers.filter((w) => w.workerId === 'cli-worker-1').map((w) => [w.transport, w.jobsHeld]),
      [['reserve', 1]],
    );
    stop.abort();
    await waiting;
    await client.ack(job);
  });

  test('status: version, uptime, the store, durability and the counts, as text and as JSON', async () => {
    const text = await sepp(['status'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^server {6}sepp \S+.*, up \S+ \(since \d{4}-\d\d-\d\dT/m);
    // Which process answered (servers sharing one PostgreSQL behind a load balancer).
    assert.match(
      text.stdout,
      /^instance {4}[0-9a-f-]{36} on \S+ \(pid \d+\); listens on gRPC \S+:\d+, admin \S+:\d+, HTTP (off|\S+:\d+)$/m,
    );
    assert.match(
      text.stdout,
      testStoreKind === 'sqlite'
        ? /^store {7}sqlite \(embedded\)$/m
        : /^store {7}postgres \S+ database \S+ schema \S+; other servers' signals: connected/m,
    );
    // The PostgreSQL store's bounds (GetServerInfo's), one line; SQLite has none.
    if (testStoreKind === 'sqlite') assert.doesNotMatch(text.stdout, /^bounds/m);
    else
      assert.match(
        text.stdout,
        /^bounds {6}store\.pool_size \d+ \(one writer, the rest read\), store\.max_waiting_reads \d+, store\.max_waiting_reads_per_key \d+, store\.statement_timeout_ms \d+$/m,
      );
    assert.match(text.stdout, /^durability {2}(full|relaxed) \(the default; a queue may set its own\)$/m);
    assert.match(text.stdout, /^features {4}nack_give_back, work_stop_delivery$/m);
    assert.match(text.stdout, /^queues {6}\d+/m);
    assert.match(text.stdout, /^workers {5}\d+ connected$/m);
    const status = json<{
      version: string;
      store: { kind: string };
      features: string[];
      queues: number;
      workers: number;
    }>(await sepp(['status', '--json'], env));
    assert.deepEqual(status.features, ['nack_give_back', 'work_stop_delivery']);
    const queues = json<unknown[]>(await sepp(['queues', '--json'], env));
    assert.equal(status.store.kind, testStoreKind);
    assert.equal(status.queues, queues.length);
    assert.equal(typeof status.workers, 'number');
  });

  test('job: details, JSON with the decoded payload, and exit 5 for an unknown id', async () => {
    const { id } = await client.enqueueJson(
      'shown',
      'send',
      { to: 'grace@example.com' },
      { metadata: { a: 'b' } },
    );
    const human = await sepp(['job', id], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^id\\s+${id}$`, 'm'));
    assert.match(human.stdout, /^state\s+ready$/m);
    assert.match(human.stdout, /^attempt\s+0 of 5$/m);
    assert.match(human.stdout, /^metadata\s+a=b$/m);
    assert.match(human.stdout, /"to": "grace@example.com"/);
    const data = json<{ id: string; state: string; payloadEncoding: string; payload: unknown }>(
      await sepp(['job', id, '--json'], env),
    );
    assert.equal(data.id, id);
    assert.equal(data.state, 'ready');
    assert.equal(data.payloadEncoding, 'json');
    assert.deepEqual(data.payload, { to: 'grace@example.com' });

    const unknown = await sepp(['job', '0190a4c2-0000-7000-8000-000000000000'], env);
    assert.equal(unknown.code, 5);
    assert.match(unknown.stderr, /^sepp: .*0190a4c2-0000-7000-8000-000000000000/);
    const malformed = await sepp(['job', 'not-a-job-id'], env);
    assert.equal(malformed.code, 2);
  });

  test('dlq list, requeue and delete', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await client.enqueue('mail', 'send', `m${i}`, { maxAttempts: 1 });
      ids.push(id);
    }
    for (const job of await client.reserve({ queues: ['mail'], maxJobs: 3 })) {
      if (job.id === ids[2]) await client.nack(job, { error: 'invalid address', deadLetter: true });
      else await client.nack(job, { error: 'SMTP 451 try later' });
    }

    const table = await sepp(['dlq', 'list', 'mail'], env);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trim().split('\n');
    assert.match(lines[0] ?? '', /^ID\s+TYPE\s+ATTEMPTS\s+REASON\s+FAILED AT\s+LAST ERROR$/);
    assert.equal(lines.length, 4);
    assert.match(table.stdout, /attempts_exhausted\s+\S+\s+SMTP 451 try later/);

    const listed = json<{ id: string; deadReason: string; lastError: string }[]>(
      await sepp(['dlq', 'list', 'mail', '--reason', 'dead_lettered', '--json'], env),
    );
    assert.deepEqual(
      listed.map((j) => [j.id, j.deadReason, j.lastError]),
      [[ids[2], 'dead_lettered', 'invalid address']],
    );
    // A listing has no error history (the server leaves it out of pages): no "errors": [] that reads as none.
    assert.equal(Object.hasOwn(listed[0] ?? {}, 'errors'), false);
    assert.equal(Object.hasOwn(listed[0] ?? {}, 'payload'), false);
    const limited = json<unknown[]>(await sepp(['dlq', 'list', 'mail', '--limit', '2', '--json'], env));
    assert.equal(limited.length, 2);

    const requeued = await sepp(['dlq', 'requeue', 'mail', ids[0]!], env);
    assert.equal(requeued.code, 0, requeued.stderr);
    assert.equal(requeued.stdout.trim(), 'requeued 1 dead letter of mail');
    assert.equal((await client.getJob(ids[0]!)).state, 'ready');

    const neither = await sepp(['dlq', 'requeue', 'mail'], env);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /--all/);

    // Deleting everything asks first; with no terminal to ask, --yes is required.
    const refused = await sepp(['dlq', 'delete', 'mail', '--all'], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /without --yes/);
    assert.equal((await client.listQueues()).find((q) => q.name === 'mail')?.counts.dead, 2);
    const deleted = json<{ deleted: number }>(
      await sepp(['dlq', 'delete', 'mail', '--all', '--yes', '--json'], env),
    );
    assert.equal(deleted.deleted, 2);
    const byId = await sepp(['dlq', 'delete', 'mail', ids[0]!], env);
    assert.equal(byId.stdout.trim(), 'deleted 0 dead letters of mail', 'a job that is not dead is skipped');
  });

  test('pause and resume', async () => {
    await client.enqueue('pausable', 't');
    const paused = await sepp(['pause', 'pausable'], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^paused pausable/);
    assert.deepEqual(await client.reserve({ queues: ['pausable'] }), []);
    assert.deepEqual(json(await sepp(['resume', 'pausable', '--json'], env)), {
      queue: 'pausable',
      paused: false,
    });
    assert.equal((await client.reserve({ queues: ['pausable'] })).length, 1);
  });

  test('a server that is not there: exit 3 and a hint', async () => {
    const probe = await startTestServer();
    const address = probe.address;
    await probe.dispose();
    const run = await sepp(['queues', '--server', address]);
    assert.equal(run.code, 3);
    assert.equal(
      run.stderr,
      `sepp: cannot reach sepp at ${address}: connection refused; is it running, and is that its gRPC port? (--server)\n`,
    );
  });
});

describe('operator CLI with API keys', () => {
  const adminKey = 'cli-admin-key-0123456789';
  const producerKey = 'cli-producer-key-0123456789';
  let t: TestServer;

  before(async () => {
    t = await startTestServer({
      toml: apiKeysToml([
        { name: 'ops', role: 'admin', key: adminKey },
        { name: 'app', role: 'producer', key: producerKey },
      ]),
    });
  });
  after(() => t.dispose());

  test('exit 4 without a valid key or with a role that does not allow the call; keys are never printed', async () => {
    const env = { SEPP_SERVER: t.address };
    const none = await sepp(['queues'], env);
    assert.equal(none.code, 4);
    assert.match(none.stderr, /not authenticated.*--api-key or SEPP_API_KEY/);
    registerSecret('API key (never configured)', 'not-the-key-0123456789');
    const wrong = await sepp(['queues', '--api-key', 'not-the-key-0123456789'], env);
    assert.equal(wrong.code, 4);
    assert.doesNotMatch(wrong.stderr + wrong.stdout, /not-the-key-0123456789/);
    const role = await sepp(['pause', 'q', '--api-key', producerKey], env);
    assert.equal(role.code, 4);
    assert.match(role.stderr, /permission denied/);
    assert.doesNotMatch(role.stderr + role.stdout, new RegExp(producerKey));
    const fromEnv = await sepp(['enqueue', 'q', 't', '-o', 'json'], { ...env, SEPP_API_KEY: producerKey });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    const admin = await sepp(['pause', 'q', '--api-key', adminKey], env);
    assert.equal(admin.code, 0, admin.stderr);
  });
});
