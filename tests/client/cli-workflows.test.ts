/**
 * The workflow commands as a user runs them (issue 33): `sepp enqueue --depends-on`,
 * `sepp flow show ID`, `sepp batch show ID`, and `sepp flow cancel`, `sepp batch cancel`,
 * `sepp batch seal`, human and --json output, against a real server (the commands
 * in-process, tests/helpers/cli.ts).
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { cliJson, sepp } from '../helpers/cli.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { until } from './helpers.ts';

describe('workflow CLI', () => {
  let env: Record<string, string>;

  const served = serverAndClient();
  before(() => {
    env = { SEPP_SERVER: served.server.address };
  });

  test('enqueue --depends-on: the job waits; comma lists and repeats; the policy', async () => {
    const a = await served.client.enqueue('cw-a', 'extract');
    const b = await served.client.enqueue('cw-a', 'extract');
    const run = await sepp(['enqueue', 'cw-load', 'load', '--depends-on', `${a.id},${b.id}`], env);
    assert.equal(run.code, 0, run.stderr);
    const id = /^enqueued (\S+) on cw-load after (\S+), (\S+)$/.exec(run.stdout.trim());
    assert.ok(id, run.stdout);
    assert.deepEqual([id[2], id[3]], [a.id, b.id]);
    const waiting = await served.client.getJob(id[1]!);
    assert.equal(waiting.state, 'waiting');
    assert.deepEqual(
      waiting.dependencies.map((l) => l.id),
      [a.id, b.id],
    );
    const repeated = cliJson<{ id: string }>(
      await sepp(
        [
          'enqueue',
          'cw-load',
          'cleanup',
          '--depends-on',
          a.id,
          '--depends-on',
          b.id,
          '--on-dependency-failure',
          'run',
          '-o',
          'json',
        ],
        env,
      ),
    );
    assert.equal((await served.client.getJob(repeated.id)).dependencies.length, 2);
    const unknown = await sepp(
      ['enqueue', 'cw-load', 'load', '--depends-on', '01900000-0000-7000-8000-000000000000'],
      env,
    );
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /does not exist/);
    const lonePolicy = await sepp(['enqueue', 'cw-load', 'load', '--on-dependency-failure', 'run'], env);
    assert.equal(lonePolicy.code, 2, 'a usage error');
    assert.match(lonePolicy.stderr, /--on-dependency-failure needs --depends-on/);
  });

  test('flow show: every job of the flow with its state and what it waits on; --json', async () => {
    const { Flow } = await import('../../clients/typescript/src/index.ts');
    const ids = await served.client.enqueueFlow(
      new Flow()
        .add('extract', { queue: 'cw-flow', type: 'extract' })
        .add('transform', { queue: 'cw-flow', type: 'transform', after: ['extract'] })
        .add('load', { queue: 'cw-flow', type: 'load', after: ['transform'] }),
    );
    const human = await sepp(['flow', 'show', ids.load!.id], env);
    assert.equal(human.code, 0, human.stderr);
    const lines = human.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+QUEUE\s+TYPE\s+STATE\s+WAITS ON$/);
    assert.match(
      lines[1]!,
      new RegExp(`^${ids.extract!.id}\\s+extract\\s+cw-flow\\s+extract\\s+ready\\s+-$`),
    );
    assert.match(lines[2]!, /\s+transform\s+cw-flow\s+transform\s+waiting\s+extract$/);
    // A name is kept with its job, so the job nothing waits on has its name too.
    assert.match(lines[3]!, /\s+load\s+cw-flow\s+load\s+waiting\s+transform$/);
    assert.equal(lines[4], '3 jobs: 1 ready, 2 waiting');
    const job = await sepp(['job', ids.transform!.id], env);
    assert.match(job.stdout, /^depends on\s+extract \(ready\)$/m);
    assert.match(job.stdout, new RegExp(`^dependents\\s+${ids.load!.id} \\(waiting\\)$`, 'm'));
    const json = cliJson<{
      jobs: { id: string; state: string; name: string | null }[];
      edges: unknown[];
      truncated: boolean;
    }>(await sepp(['flow', 'show', ids.extract!.id, '--json'], env));
    assert.deepEqual(
      json.jobs.map((j) => [j.id, j.name]),
      [
        [ids.extract!.id, 'extract'],
        [ids.transform!.id, 'transform'],
        [ids.load!.id, 'load'],
      ],
    );
    assert.equal(json.edges.length, 2);
    assert.equal(json.truncated, false);
    const missing = await sepp(['flow', 'show', '01900000-0000-7000-8000-000000000000'], env);
    assert.notEqual(missing.code, 0);
    // A finished flow's jobs are swept: the message says why the id names nothing.
    assert.match(missing.stderr, /does not exist, so it names no flow: .*completed_retention_ms/);
  });

  test('flow cancel: asks (--yes off a terminal), cancels what has not ended, --json', async () => {
    const { Flow } = await import('../../clients/typescript/src/index.ts');
    const ids = await served.client.enqueueFlow(
      new Flow()
        .add('a', { queue: 'cw-cancel', type: 'a' })
        .add('b', { queue: 'cw-cancel', type: 'b', after: ['a'] })
        .add('c', { queue: 'cw-cancel', type: 'c', after: ['b'] }),
    );
    const unasked = await sepp(['flow', 'cancel', ids.c!.id], env);
    assert.equal(unasked.code, 2, 'off a terminal it needs --yes');
    assert.match(unasked.stderr, /refusing to cancel the flow of .* without --yes/);
    assert.equal((await served.client.getJob(ids.a!.id)).state, 'ready', 'nothing was cancelled');
    const human = await sepp(['flow', 'cancel', ids.c!.id, '--yes'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout.trim(), `cancelled 3 jobs of the flow of ${ids.c!.id}`);
    for (const name of ['a', 'b', 'c'])
      assert.equal((await served.client.getJob(ids[name]!.id)).state, 'cancelled');
    const again = cliJson<{ jobId: string; cancelled: number; cancelRequested: number }>(
      await sepp(['flow', 'cancel', ids.a!.id, '--yes', '--json'], env),
    );
    assert.deepEqual(again, { jobId: ids.a!.id, cancelled: 0, cancelRequested: 0 });
  });

  test('batch cancel and seal: an open batch stays open until sealed, then ends', async () => {
    const { batch } = await served.client.createBatch({
      onComplete: { queue: 'cw-bdone', type: 'done' },
      jobs: [
        { queue: 'cw-bmembers', type: 'm' },
        { queue: 'cw-bmembers', type: 'm' },
      ],
    });
    const unasked = await sepp(['batch', 'cancel', batch.id], env);
    assert.equal(unasked.code, 2);
    assert.match(unasked.stderr, /refusing to cancel batch .* without --yes/);
    const cancelled = await sepp(['batch', 'cancel', batch.id, '-y'], env);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(
      cancelled.stdout.trim(),
      `cancelled 2 jobs of batch ${batch.id}; the batch is open, and ends once sealed (sepp batch seal ${batch.id})`,
    );
    const sealed = await sepp(['batch', 'seal', batch.id], env);
    assert.equal(sealed.code, 0, sealed.stderr);
    assert.equal(sealed.stdout.trim(), `batch ${batch.id} is ended: 0 completed, 0 dead, 2 cancelled`);
    const info = (await served.client.getBatch(batch.id)).batch;
    assert.equal(info.state, 'ended');
    assert.ok(info.completeJobId !== null, 'its on-complete job was enqueued');

    const open = await served.client.createBatch({ jobs: [{ queue: 'cw-bmembers', type: 'm' }] });
    const json = cliJson<{ state: string; pending: number }>(
      await sepp(['batch', 'seal', open.batch.id, '--json'], env),
    );
    assert.deepEqual([json.state, json.pending], ['sealed', 1]);
    const human = await sepp(['batch', 'seal', open.batch.id], env);
    assert.equal(
      human.stdout.trim(),
      `sealed batch ${open.batch.id}: it ends when its 1 pending member has ended`,
    );
    const viaJson = cliJson<{ batchId: string; cancelled: number }>(
      await sepp(['batch', 'cancel', open.batch.id, '--yes', '-o', 'json'], env),
    );
    assert.deepEqual([viaJson.batchId, viaJson.cancelled], [open.batch.id, 1]);
    assert.equal((await served.client.getBatch(open.batch.id)).batch.state, 'ended');
  });

  test('batch show: state, counts, completion jobs and members; --json', async () => {
    const { batch, results } = await served.client.createBatch({
      onComplete: { queue: 'cw-done', type: 'done' },
      onDeath: { queue: 'cw-dead', type: 'page' },
      jobs: [
        { queue: 'cw-members', type: 'm' },
        { queue: 'cw-members', type: 'm' },
      ],
      seal: true,
    });
    const [leased] = await served.client.reserve({ queues: ['cw-members'] });
    await served.client.ack(leased!);
    const human = await sepp(['batch', 'show', batch.id], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^state\s+sealed$/m);
    assert.match(human.stdout, /^members\s+2: 1 pending, 1 completed, 0 dead, 0 cancelled$/m);
    assert.match(human.stdout, /^on complete\s+when it ends$/m);
    assert.match(human.stdout, /^on death\s+when a member dies$/m);
    assert.match(human.stdout, /^#\s+JOB\s+ENDED AS\s+STATE NOW$/m);
    const json = cliJson<{
      state: string;
      pending: number;
      memberList: { jobId: string; memberState: string }[];
    }>(await sepp(['batch', 'show', batch.id, '--json'], env));
    assert.deepEqual([json.state, json.pending], ['sealed', 1]);
    assert.deepEqual(
      json.memberList.map((m) => m.jobId),
      results.map((r) => (r.ok ? r.id : '')),
    );
    // A member of an open batch dies: the on_death job and the member are shown, and
    // `sepp events` tells the first death.
    const open = await served.client.createBatch({
      onDeath: { queue: 'cw-dead', type: 'page' },
      jobs: [{ queue: 'cw-dying', type: 'm' }],
    });
    const events = sepp(
      ['events', '--job', open.batch.id, '--kind', 'batch_first_death', '--count', '1'],
      env,
    );
    await until(
      () => served.server.server.engine.eventBacklog.subscribers >= 1,
      'sepp events subscribes',
      2_000_000,
    );
    const [dying] = await served.client.reserve({ queues: ['cw-dying'] });
    await served.client.nack(dying!, { error: 'boom', deadLetter: true });
    const told = await events;
    assert.equal(told.code, 0, told.stderr);
    assert.match(
      told.stdout.trim(),
      new RegExp(
        ` batch_first_death +cw-dead/page +${open.batch.id} +batch: job ${dying!.id} died first, 0 pending$`,
      ),
    );
    const { batch: died } = await served.client.getBatch(open.batch.id);
    const after = await sepp(['batch', 'show', open.batch.id], env);
    assert.match(after.stdout, new RegExp(`^on death\\s+${died.deathJobId}$`, 'm'));
    assert.match(after.stdout, new RegExp(`^first dead\\s+${dying!.id}$`, 'm'));
    const bad = await sepp(['batch', 'show', 'nope'], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /batch_id/);
  });

  test('batch list: newest first, --state, pages and --all; --json', async () => {
    const older = (await served.client.createBatch({})).batch.id;
    const newer = (await served.client.createBatch({})).batch.id;
    const human = await sepp(['batch', 'list', '--state', 'open'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^ID\s+STATE\s+OWNER\s+CREATED AT\s+MEMBERS\s+PENDING\s+ENDED AT$/m);
    const lines = human.stdout.split('\n');
    const at = (id: string) => lines.findIndex((line) => line.startsWith(id));
    assert.ok(at(newer) > 0 && at(newer) < at(older), 'newest first');
    assert.match(lines[at(newer)]!, /\sopen\s+anonymous\s/);
    const page = cliJson<{ batches: { id: string; state: string }[]; nextPageToken: string | null }>(
      await sepp(['batch', 'list', '--state', 'open', '--page-size', '1', '--json'], env),
    );
    assert.deepEqual(
      page.batches.map((b) => b.id),
      [newer],
    );
    assert.ok(page.nextPageToken !== null);
    const next = await sepp(
      ['batch', 'list', '--state', 'open', '--page-size', '1', '--page-token', page.nextPageToken],
      env,
    );
    assert.match(next.stdout, new RegExp(`^${older}\\s`, 'm'));
    const first = await sepp(['batch', 'list', '--state', 'open', '--page-size', '1'], env);
    assert.match(first.stdout, new RegExp(`^\\(more: --page-token ${page.nextPageToken}\\)$`, 'm'));
    const all = cliJson<{ batches: { id: string; state: string }[]; nextPageToken: null }>(
      await sepp(['batch', 'list', '--all', '--json'], env),
    );
    const ids = all.batches.map((b) => b.id);
    assert.ok(
      ids.indexOf(newer) < ids.indexOf(older) && ids.indexOf(newer) >= 0,
      'every state, newest first',
    );
    assert.ok(all.batches.some((b) => b.state === 'sealed'));
    assert.equal(all.nextPageToken, null);
    const bad = await sepp(['batch', 'list', '--state', 'done'], env);
    assert.equal(bad.code, 2, 'a usage error');
  });
});
