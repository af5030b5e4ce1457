/**
 * The job control commands as an operator runs them (`sepp cancel`, `sepp
 * update`, `sepp purge`, `sepp audit`, `sepp enqueue --ttl`, and `--background`
 * of `sepp cancel|update --queue`, `sepp purge` and `sepp dlq requeue|delete
 * --all`), against a real
 * server with API keys: human and JSON output, confirmations, exit codes, and
 * the audit entries they leave (via cli, as the key).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { cliJson, sepp } from '../helpers/cli.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const adminKey = 'cli-control-admin-key-0123456789';
const producerKey = 'cli-control-producer-key-0123456789';
registerSecret('CLI admin key', adminKey);

describe('job control from the CLI', () => {
  let t: TestServer;
  let client: SeppClient;
  let env: Record<string, string>;

  before(async () => {
    t = await startTestServer({
      toml: [
        `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${adminKey}"\n`,
        `[[grpc.api_keys]]\nname = "billing"\nrole = "producer"\nkey = "${producerKey}"\n`,
      ].join(''),
    });
    client = SeppClient.connect(t.address, { apiKey: adminKey });
    env = { SEPP_SERVER: t.address, SEPP_API_KEY: adminKey };
  });
  after(async () => {
    await client.close();
    await t.dispose();
  });

  /** A bulk operation once it has ended, read again and again until it has. */
  const ended = async (id: string) => {
    let op = await client.jobs.bulkOperation(id);
    for (let i = 0; i < 1000 && op.state === 'running'; i++) op = await client.jobs.bulkOperation(id);
    return op;
  };

  test('enqueue --ttl and --unique-while-active', async () => {
    const first = cliJson<{ id: string }>(
      await sepp(
        [
          'enqueue',
          'alerts',
          'page',
          '--ttl',
          '5m',
          '--key',
          'pager-1',
          '--unique-while-active',
          '-o',
          'json',
        ],
        env,
      ),
    );
    const job = await client.getJob(first.id);
    assert.ok(job.expiresAt !== null && job.expiresAt.getTime() - job.enqueuedAt.getTime() === 300_000);
    const again = await sepp(['enqueue', 'alerts', 'page', '--key', 'pager-1', '--unique-while-active'], env);
    assert.match(again.stdout, new RegExp(`already enqueued ${first.id}`));
    const shown = await sepp(['job', first.id], env);
    assert.match(shown.stdout, /^expires at\s+\d{4}-/m);
    const noKey = await sepp(['enqueue', 'alerts', 'page', '--unique-while-active'], env);
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /--unique-while-active needs --key/);
    const badTtl = await sepp(['enqueue', 'alerts', 'page', '--ttl', 'soon'], env);
    assert.equal(badTtl.code, 2);
    const both = await sepp(
      ['enqueue', 'alerts', 'page', '--ttl', '1m', '--expires-at', '2030-01-01T00:00:00Z'],
      env,
    );
    assert.equal(both.code, 2);
  });

  test('cancel by id: waiting, running, already cancelled, finished', async () => {
    const { id: running } = await client.enqueue('cancels', 't');
    // A long lease: each `sepp` run here takes seconds on a loaded machine.
    const [leased] = await client.reserve({ queues: ['cancels'], leaseMs: 600_000 });
    assert.equal(leased?.id, running);
    const { id: waiting } = await client.enqueue('cancels', 't');
    const { id: later } = await client.enqueue('cancels', 't', undefined, { delayMs: 60_000 });
    const human = await sepp(['cancel', later], env);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout.trim(), `cancelled ${later} (it was scheduled)`);
    const asked = await sepp(['cancel', running], env);
    assert.match(asked.stdout, /its worker was told to stop/);
    assert.equal((await client.getJob(later)).cancelledBy, 'key:ops');
    const again = cliJson<{ id: string; previousState: string; state: string }[]>(
      await sepp(['cancel', later, '--json'], env),
    );
    assert.deepEqual(again, [{ id: later, previousState: 'cancelled', state: 'cancelled' }]);
    const missing = await sepp(['cancel', '0190a4c2-0000-7000-8000-000000000000'], env);
    assert.equal(missing.code, 5);
    const neither = await sepp(['cancel'], env);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /name the jobs by id, or give --queue/);
    const producer = await sepp(['cancel', waiting], { ...env, SEPP_API_KEY: producerKey });
    assert.equal(producer.code, 4);
  });

  test('cancel --queue: a dry run counts, off a terminal --yes is required, the entry says via cli', async () => {
    for (let i = 0; i < 4; i++) await client.enqueue('bulk', i < 3 ? 'digest' : 'welcome');
    const dry = await sepp(['cancel', '--queue', 'bulk', '--type', 'digest', '--dry-run'], env);
    assert.equal(
      dry.stdout.trim(),
      '3 jobs of type digest in queue bulk (scheduled, ready or leased) would be cancelled',
    );
    const refused = await sepp(['cancel', '--queue', 'bulk', '--type', 'digest'], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /without --yes/);
    const done = cliJson<{ cancelled: number; cancelRequested: number; matched: number }>(
      await sepp(['cancel', '--queue', 'bulk', '--type', 'digest', '--yes', '--json'], env),
    );
    // `matched`: what the cancel matched and changed (the protocol counts it for a dry run only).
    assert.deepEqual([done.cancelled, done.cancelRequested, done.matched], [3, 0, 3]);
    const counts = (await client.listQueues()).find((q) => q.name === 'bulk')?.counts;
    assert.deepEqual([counts?.cancelled, counts?.ready], [3, 1]);
    const [entry] = (await client.listAuditEntries({ action: 'jobs.cancel', pageSize: 1 })).entries;
    assert.equal(entry?.actor, 'key:ops');
    assert.equal(entry?.details.via, 'cli');
    assert.equal(entry?.details.changed, 3);
  });

  test('update: one job by id; every scheduled job of a type counted (--dry-run), then run now', async () => {
    const { id } = await client.enqueue('updates', 'report', undefined, { delayMs: 3_600_000 });
    const human = await sepp(['update', id, '--priority', '7', '--run-now'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^updated ${id}: ready, priority 7`));
    for (let i = 0; i < 2; i++) await client.enqueue('updates', 'report', undefined, { delayMs: 3_600_000 });
    const dry = await sepp(
      ['update', '--queue', 'updates', '--type', 'report', '--run-now', '--dry-run'],
      env,
    );
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stdout.trim(), '2 jobs of type report in queue updates (scheduled) would be changed');
    const dryJson = cliJson<{ queue: string; matched: number }>(
      await sepp(['update', '--queue', 'updates', '--priority', '3', '--dry-run', '--json'], env),
    );
    assert.deepEqual(dryJson, { queue: 'updates', matched: 3 }, 'a priority: the ready job too');
    const refused = await sepp(['update', '--queue', 'updates', '--run-now'], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /without --yes/);
    // What the dry runs counted is still to change: they changed nothing.
    const bulk = cliJson<{ updated: number }>(
      await sepp(['update', '--queue', 'updates', '--type', 'report', '--run-now', '--yes', '--json'], env),
    );
    assert.equal(bulk.updated, 2);
    const nothing = await sepp(['update', id], env);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /give --priority, --run-now, --run-at, --delay or --new-group/);
    const grouped = await sepp(['update', id, '--new-group', 'acme'], env);
    assert.equal(grouped.code, 0, grouped.stderr);
    assert.match(grouped.stdout, /, group acme, /);
    const ungrouped = cliJson<{ group: string | null }[]>(
      await sepp(['update', id, '--new-group', '', '--json'], env),
    );
    assert.equal(ungrouped[0]?.group, null, "--new-group '' takes the job out of its group");
    const stray = await sepp(['cancel', id, '--group', 'acme'], env);
    assert.equal(stray.code, 2);
    assert.match(stray.stderr, /--group and --dry-run go with --queue/);
    const [leased] = await client.reserve({ queues: ['updates'], leaseMs: 600_000 });
    const running = await sepp(['update', leased!.id, '--priority', '1'], env);
    assert.equal(running.code, 1);
    assert.match(running.stderr, /running job cannot be changed/);
  });

  test('purge and dlq requeue/delete --all take --background: the operation begun, and how to follow it', async () => {
    const killAll = async () => {
      for (const job of await client.reserve({ queues: ['bg-cli'], maxJobs: 2 }))
        await client.nack(job, { error: 'boom', deadLetter: true });
    };
    await client.enqueueBatch([
      { queue: 'bg-cli', type: 't' },
      { queue: 'bg-cli', type: 't' },
    ]);
    await killAll();
    const requeue = await sepp(['dlq', 'requeue', 'bg-cli', '--all', '--background'], env);
    assert.equal(requeue.code, 0, requeue.stderr);
    const [line, follow] = requeue.stdout.trimEnd().split('\n');
    const id = /^(\S+) {2}requeue {2}running {2}0 of 2 changed$/.exec(line ?? '')?.[1] ?? '';
    assert.ok(id !== '', requeue.stdout);
    assert.equal(follow, `follow it: sepp bulk status ${id} (stop it: sepp bulk stop ${id})`);
    assert.equal((await ended(id)).changed, 2);

    await killAll();
    const deleted = cliJson<{ id: string; action: string; state: string; matched: number }>(
      await sepp(['dlq', 'delete', 'bg-cli', '--all', '--yes', '--background', '--json'], env),
    );
    assert.deepEqual([deleted.action, deleted.state, deleted.matched], ['delete', 'running', 2]);
    assert.equal((await ended(deleted.id)).changed, 2);
    const byId = await sepp(['dlq', 'requeue', 'bg-cli', deleted.id, '--background'], env);
    assert.equal(byId.code, 2);
    assert.match(byId.stderr, /--background goes with --all/);

    await client.enqueueBatch([
      { queue: 'bg-purged', type: 't' },
      { queue: 'bg-purged', type: 't', delayMs: 3_600_000 },
    ]);
    const purge = cliJson<{ id: string; action: string; state: string; matched: number }>(
      await sepp(['purge', 'bg-purged', '--yes', '--background', '--json'], env),
    );
    assert.deepEqual([purge.action, purge.state, purge.matched], ['delete', 'running', 2]);
    assert.equal((await ended(purge.id)).changed, 2);
  });

  test('cancel and update --queue take --background; chosen ids refuse it, --queue a one-job change', async () => {
    const enqueued = await client.enqueueBatch([
      { queue: 'bg-control', type: 'digest', delayMs: 3_600_000 },
      { queue: 'bg-control', type: 'digest', delayMs: 3_600_000 },
      { queue: 'bg-control', type: 'welcome', delayMs: 3_600_000 },
    ]);
    const update = await sepp(
      ['update', '--queue', 'bg-control', '--type', 'digest', '--priority', '8', '--yes', '--background'],
      env,
    );
    assert.equal(update.code, 0, update.stderr);
    const [line, follow] = update.stdout.trimEnd().split('\n');
    const id = /^(\S+) {2}update {2}running {2}0 of 2 changed$/.exec(line ?? '')?.[1] ?? '';
    assert.ok(id !== '', update.stdout);
    assert.equal(follow, `follow it: sepp bulk status ${id} (stop it: sepp bulk stop ${id})`);
    assert.equal((await ended(id)).changed, 2);
    const priorities = [];
    for (const job of enqueued) priorities.push(job.ok ? (await client.getJob(job.id)).priority : -1);
    assert.deepEqual(priorities, [8, 8, 0], 'the digests only');

    const cancel = cliJson<{ id: string; action: string; state: string; matched: number }>(
      await sepp(['cancel', '--queue', 'bg-control', '--yes', '--background', '--json'], env),
    );
    assert.deepEqual([cancel.action, cancel.state, cancel.matched], ['cancel', 'running', 3]);
    assert.equal((await ended(cancel.id)).changed, 3);
    const counts = (await client.listQueues()).find((q) => q.name === 'bg-control')?.counts;
    assert.deepEqual([counts?.cancelled, counts?.scheduled], [3, 0]);
    const [entry] = (await client.listAuditEntries({ action: 'jobs.cancel', pageSize: 1 })).entries;
    assert.equal(entry?.details.via, 'cli');

    for (const args of [
      ['cancel', cancel.id, '--background'],
      ['update', cancel.id, '--run-now', '--background'],
    ]) {
      const byId = await sepp(args, env);
      assert.equal(byId.code, 2, `sepp ${args.join(' ')}`);
      assert.match(byId.stderr, /--background goes with --queue: chosen ids change at once/);
    }
    // What changes one job at a time is refused with --queue in the flags' names, nothing sent.
    const waiting = await client.enqueue('bg-one-at-a-time', 't', undefined, { delayMs: 3_600_000 });
    for (const [flags, named] of [
      [['--delay', '5s'], '--delay'],
      [['--run-at', '2030-01-01T00:00:00Z', '--dry-run'], '--run-at'],
      [['--new-group', 'acme', '--priority', '3'], '--new-group'],
    ] as const) {
      const args = ['update', '--queue', 'bg-one-at-a-time', ...flags, '--yes'];
      const refused = await sepp(args, env);
      assert.equal(refused.code, 2, `sepp ${args.join(' ')}`);
      assert.equal(
        refused.stderr,
        `sepp: ${named} changes one job at a time: name the jobs by id (with --queue: --run-now or --priority)\n`,
      );
    }
    const job = await client.getJob(waiting.id);
    assert.deepEqual([job.priority, job.group, job.state], [0, null, 'scheduled'], 'nothing changed');
  });

  test('purge asks first; audit lists what was done, filtered and as JSON', async () => {
    for (let i = 0; i < 3; i++) await client.enqueue('purged', 't');
    assert.equal((await sepp(['purge', 'purged'], env)).code, 2);
    const purged = await sepp(['purge', 'purged', '--yes'], env);
    assert.equal(purged.stdout.trim(), 'deleted 3 ready and scheduled jobs of purged');

    const table = await sepp(['audit', '--target', 'queue:purged'], env);
    assert.equal(table.code, 0, table.stderr);
    const [header, row] = table.stdout.trim().split('\n');
    assert.match(header ?? '', /^TIME\s+ACTOR\s+VIA\s+ACTION\s+TARGET\s+DETAILS$/);
    assert.match(
      row ?? '',
      /^\S+\s+key:ops\s+cli\s+queue\.purge\s+queue:purged\s+queue=purged states=\["scheduled","ready"\] matched=3 changed=3 done=true/,
    );
    const entries = cliJson<{ action: string; details: { via: string } }[]>(
      await sepp(['audit', '--actor', 'key:ops', '--limit', '2', '--json'], env),
    );
    assert.equal(entries.length, 2);
    assert.ok(entries.every((e) => e.details.via === 'cli'));
    const producer = await sepp(['audit'], { ...env, SEPP_API_KEY: producerKey });
    assert.equal(producer.code, 4);
  });

  test("the SDK's auditEntries() walks every page, newest first, as listAuditEntries pages them", async () => {
    for (let i = 0; i < 3; i++) {
      await client.pauseQueue('audit-pages', { allowMissing: true });
      await client.resumeQueue('audit-pages');
    }
    const seen = [];
    for await (const entry of client.auditEntries({ target: 'queue:audit-pages', pageSize: 2 }))
      seen.push(entry);
    assert.deepEqual(
      seen.map((e) => e.action),
      ['queue.resume', 'queue.pause', 'queue.resume', 'queue.pause', 'queue.resume', 'queue.pause'],
    );
    const all = await client.listAuditEntries({ target: 'queue:audit-pages', pageSize: 100 });
    assert.deepEqual(
      seen.map((e) => e.id),
      all.entries.map((e) => e.id),
    );
  });
});
