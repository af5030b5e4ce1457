/**
 * The outcome commands as a user runs them (in-process, tests/helpers/cli.ts) against
 * a real server: `sepp job ID` with progress and result, `sepp job ID --wait`
 * (completed, dead, timed out; and a job deleted on its ack before the wait
 * began) and `sepp events` (lines and --json).
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { buildCli, DryRunAccepted } from '../../src/cli/parser.ts';
import { runSepp as sepp, testIo } from '../helpers/cli.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { until } from './helpers.ts';

/** What the real parser makes of `args`, without running the command. */
async function parsed(args: string[]): Promise<Readonly<Record<string, unknown>>> {
  try {
    await buildCli(args, testIo(), { dryRun: true }).parseAsync(args);
  } catch (error) {
    if (error instanceof DryRunAccepted) return error.argv;
    throw error;
  }
  throw new Error(`${args.join(' ')} ran instead of stopping in the dry run`);
}

test('sepp events keeps every --queue, --job and --kind given; --count keeps its last, like other flags', async () => {
  const argv = await parsed([
    'events',
    '--queue',
    'a',
    '--queue',
    'b',
    '--job',
    '01a2365f-985c-7000-b7f9-d57e51622832',
    '--kind',
    'completed',
    '--kind',
    'leased',
    '--count',
    '1',
    '--count',
    '2',
  ]);
  assert.deepEqual(
    [argv.queue, argv.job, argv.kind, argv.count],
    [['a', 'b'], ['01a2365f-985c-7000-b7f9-d57e51622832'], ['completed', 'leased'], 2],
  );
});

describe('operator CLI: results, progress, waiting and events', () => {
  let env: Record<string, string>;

  const served = serverAndClient({ toml: '[queues.kept]\ncompleted_retention_ms = "1h"\n' });
  before(() => {
    env = { SEPP_SERVER: served.server.address };
  });

  test('sepp job shows progress while leased and the result once completed', async () => {
    const { id } = await served.client.enqueue('kept', 'report');
    const [leased] = await served.client.reserve({ queues: ['kept'] });
    assert.ok(leased);
    await served.client.reportProgress(leased, { percent: 40, data: { step: 'render' } });
    const running = await sepp(['job', id], env);
    assert.equal(running.code, 0, running.stderr);
    assert.match(running.stdout, /^progress +40% \{"step":"render"\} \(at \d{4}-/m);
    await served.client.ack(leased, { result: { pages: 12 } });
    const done = await sepp(['job', id], env);
    assert.match(done.stdout, /^result +12 bytes, application\/json\n {2}\{\n {4}"pages": 12\n {2}\}/m);
    const scripted = JSON.parse((await sepp(['job', id, '--json'], env)).stdout) as Record<string, unknown>;
    assert.deepEqual(
      [scripted.state, scripted.result, scripted.resultEncoding, scripted.resultBytes],
      ['completed', { pages: 12 }, 'json', 12],
    );
  });

  test('sepp job --wait: completed (exit 0), dead (exit 1), timed out (exit 6)', async () => {
    const { id } = await served.client.enqueue('waited', 'w');
    const waiting = sepp(['job', id, '--wait', '--json'], env);
    await until(
      () => served.server.server.engine.eventBacklog.subscribers > 0,
      'the CLI to subscribe',
      2_000_000,
    );
    const [leased] = await served.client.reserve({ queues: ['waited'] });
    await served.client.ack(leased!, { result: 'done and dusted' });
    const run = await waiting;
    assert.equal(run.code, 0, run.stderr);
    const outcome = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.deepEqual([outcome.id, outcome.state, outcome.result], [id, 'completed', 'done and dusted']);

    const failing = await served.client.enqueue('kept', 'w', '', { maxAttempts: 1 });
    const [lease] = await served.client.reserve({ queues: ['kept'] });
    await served.client.nack(lease!, { error: 'the printer is on fire' });
    const dead = await sepp(['job', failing.id, '--wait'], env);
    assert.equal(dead.code, 1);
    assert.match(dead.stdout, /is dead \(attempts_exhausted\) since .*: the printer is on fire/);

    const slow = await served.client.enqueue('kept', 'w', '', { delayMs: 3_600_000 });
    const timedOut = await sepp(['job', slow.id, '--wait', '--timeout-ms', '300'], env);
    assert.equal(timedOut.code, 6, timedOut.stderr);
    assert.match(timedOut.stderr, /did not finish within 300 ms; it is scheduled/);
    const misuse = await sepp(['job', slow.id, '--timeout-ms', '300'], env);
    assert.equal(misuse.code, 2);
    assert.match(misuse.stderr, /--timeout-ms goes with --wait/);
  });

  test('sepp events: one line per event as it is committed; --json one object per line', async () => {
    const lines = sepp(['events', '--queue', 'watched', '--count', '3'], env);
    const json = sepp(['events', '--queue', 'watched', '--kind', 'completed', '--json', '--count', '1'], env);
    await until(
      () => served.server.server.engine.eventBacklog.subscribers >= 2,
      'both to subscribe',
      2_000_000,
    );
    const { id } = await served.client.enqueue('watched', 'mail');
    await served.client.enqueue('elsewhere', 'mail');
    const [leased] = await served.client.reserve({ queues: ['watched'] });
    await served.client.ack(leased!, { result: { sent: true } });
    const human = await lines;
    assert.equal(human.code, 0, human.stderr);
    const rows = human.stdout.trim().split('\n');
    assert.equal(rows.length, 3);
    assert.match(rows[0]!, new RegExp(`^\\d{4}-\\S+ +enqueued +watched/mail +${id} +ready$`));
    assert.match(rows[1]!, new RegExp(`leased +watched/mail +${id} +attempt 1`));
    assert.match(rows[2]!, /completed +watched\/mail .* attempt 1, result \{"sent":true\}$/);
    const scripted = await json;
    assert.equal(scripted.code, 0, scripted.stderr);
    const event = JSON.parse(scripted.stdout.trim()) as Record<string, unknown>;
    assert.deepEqual([event.kind, event.jobId, event.result], ['completed', id, { sent: true }]);

    // From the oldest kept event: the same three, replayed.
    const replay = await sepp(
      ['events', '--queue', 'watched', '--from-oldest', '--count', '3', '-o', 'json'],
      env,
    );
    assert.deepEqual(
      replay.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { kind: string }).kind),
      ['enqueued', 'leased', 'completed'],
    );
    const nobody = await sepp(['events', '--server', '127.0.0.1:1'], env);
    assert.equal(nobody.code, 3, nobody.stderr);
    assert.match(nobody.stderr, /cannot reach sepp at 127\.0\.0\.1:1/);
    const bad = await sepp(['events', '--kind', 'finished'], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Invalid values|finished/);
  });
});

describe('sepp job on a job deleted as it finished (no retention, nobody subscribed)', () => {
  let env: Record<string, string>;

  // No resume window: no event of the job is recorded, only the outcome the server keeps.
  const served = serverAndClient({ toml: '[limits]\nevent_resume_window_ms = 0\n' });
  before(() => {
    env = { SEPP_SERVER: served.server.address };
  });

  test('sepp job ID --wait answers with the outcome; sepp job ID says it was deleted on completion', async () => {
    const { id } = await served.client.enqueueJson('plain', 'report', { big: 'input' });
    const [leased] = await served.client.reserve({ queues: ['plain'] });
    assert.equal(served.server.server.engine.eventBacklog.recording, false);
    await served.client.ack(leased!, { result: { pages: 12 } });

    const waited = await sepp(['job', id, '--wait', '--json'], env);
    assert.equal(waited.code, 0, waited.stderr);
    const outcome = JSON.parse(waited.stdout) as Record<string, unknown>;
    assert.deepEqual([outcome.id, outcome.state, outcome.result], [id, 'completed', { pages: 12 }]);

    const shown = await sepp(['job', id], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^note +deleted on completion \(its queue keeps no completed jobs\)/m);
    assert.doesNotMatch(shown.stdout, /^payload|input/m);
    assert.match(shown.stdout, /^result +12 bytes, application\/json\n {2}\{\n {4}"pages": 12/m);
    const scripted = JSON.parse((await sepp(['job', id, '--json'], env)).stdout) as Record<string, unknown>;
    assert.deepEqual(
      [scripted.state, scripted.outcomeOnly, scripted.payloadBytes, scripted.enqueuedAt],
      ['completed', true, 0, null],
    );
  });
});
