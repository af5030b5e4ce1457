/**
 * What a worker or a producer wrote reaches the operator's terminal through the CLI: a job's
 * error in `sepp dlq list` and `sepp job`, an event's in `sepp events`. Control characters in
 * it (ANSI escapes that recolour, clear or retitle the terminal, a carriage return that writes
 * over a line) are shown as their \u escapes, never sent to the terminal (a table cell shows a
 * carriage return as a space); --json stays JSON. JSON nested too deep to write out again (it
 * parses, JSON.stringify overflows the stack) is shown as its text instead of ending the command.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JobResult, SeppClient } from '../../clients/typescript/src/index.ts';
import { cliJson, sepp } from '../helpers/cli.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A title change, a clear screen, a carriage return over the line, an 8-bit CSI and a bell. */
const hostile = 'bad\u001b]0;pwned\u0007\u001b[2J\rok \u009b31m red\u007f';
/** Any C0 control but the line break and the tab, DEL, or a C1 control. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

let t: TestServer;
let client: SeppClient;
let env: Record<string, string>;
before(async () => {
  t = await startTestServer();
  client = SeppClient.connect(t.address);
  env = { SEPP_SERVER: t.address };
});
after(async () => {
  await client.close();
  await t.dispose();
});

test('a job’s error with control characters is shown escaped by dlq list, job and events', {
  timeout: 30_000,
}, async () => {
  // The server keeps events while someone subscribes: `sepp events --from-oldest` below reads them.
  const keeper = client.events({ queues: ['ctl'] });
  await keeper.caughtUp;
  const { id } = await client.enqueue('ctl', 'send', 'x', { maxAttempts: 1 });
  const [job] = await client.reserve({ queues: ['ctl'], maxJobs: 1 });
  assert.equal(job?.id, id);
  await client.nack(job, { error: hostile, deadLetter: true });

  for (const args of [
    ['dlq', 'list', 'ctl'],
    ['job', id],
    ['events', '--queue', 'ctl', '--from-oldest', '--count', '3'],
  ]) {
    const run = await sepp(args, env);
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stdout, control, `sepp ${args.join(' ')} wrote a control character`);
    assert.match(
      run.stdout,
      /bad\\u001b\]0;pwned\\u0007\\u001b\[2J(\\u000d| )ok \\u009b31m red\\u007f/,
      args.join(' '),
    );
  }
  // Scripts get the error as it is, in valid JSON.
  const listed = cliJson<{ lastError: string }[]>(await sepp(['dlq', 'list', 'ctl', '--json'], env));
  assert.equal(listed[0]?.lastError, hostile);
  const events = await sepp(['events', '--queue', 'ctl', '--from-oldest', '--count', '3', '--json'], env);
  assert.doesNotMatch(events.stdout, control);
  const dead = events.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { kind: string; error?: string })
    .find((e) => e.kind === 'dead_lettered');
  assert.equal(dead?.error, hostile);
  keeper.close();
});

test('JSON nested too deep to write out again is shown as its text by job and events (attack7)', {
  timeout: 30_000,
}, async () => {
  const keeper = client.events({ queues: ['deep'] });
  await keeper.caughtUp;
  // 100,000 nested arrays: JSON.parse reads them, JSON.stringify overflows the stack.
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const { id } = await client.enqueue('deep', 't', Buffer.from(deep), { contentType: 'application/json' });
  type Shown = { payloadEncoding: string; payload: string; resultEncoding: string; result: string };
  const leased = await sepp(['job', id], env);
  assert.equal(leased.code, 0, leased.stderr);
  assert.match(leased.stdout, /\[\[\[\[/);
  const payload = cliJson<Shown>(await sepp(['job', id, '--json'], env));
  assert.deepEqual([payload.payloadEncoding, payload.payload], ['text', deep]);

  const [job] = await client.reserve({ queues: ['deep'], maxJobs: 1 });
  assert.equal(job?.id, id);
  const result = deep.slice(0, 30_000) + deep.slice(-30_000);
  await client.ack(job, { result: new JobResult(result, 'application/json') });
  for (const args of [
    ['job', id],
    ['events', '--queue', 'deep', '--from-oldest', '--count', '3'],
  ]) {
    const run = await sepp(args, env);
    assert.equal(run.code, 0, `sepp ${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stdout, /result.*\[\[\[\[/s, args.join(' '));
  }
  const done = cliJson<Shown>(await sepp(['job', id, '--json'], env));
  assert.deepEqual([done.resultEncoding, done.result], ['text', result]);
  keeper.close();
});
