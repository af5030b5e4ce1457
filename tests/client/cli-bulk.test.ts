/**
 * `sepp bulk` against a real server: count, act on everything a filter matches
 * in every queue (one server-side operation), list and show operations, and
 * the refusal of a filter without --queue or --all-queues; --request-key on a
 * run again (cancel --queue, dlq requeue --all) prints the same operation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cliJson, sepp } from '../helpers/cli.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

describe('sepp bulk', () => {
  const served = serverAndClient();

  async function deadLetters(queue: string, n: number, error: string): Promise<void> {
    await served.client.enqueueBatch(
      Array.from({ length: n }, () => ({ queue, type: 'mail', payload: '{}' })),
    );
    const leased = await served.client.reserve({ queues: [queue], maxJobs: n });
    for (const job of leased) await served.client.nack(job, { error, deadLetter: true });
  }

  test('sepp bulk: count, act on all matching in every queue, list; a filter needs --queue or --all-queues', async () => {
    await deadLetters('cli-a', 2, 'TLS handshake failed');
    await deadLetters('cli-b', 1, 'tls handshake failed');
    const env = { SEPP_SERVER: served.server.address };
    const dry = cliJson<{ matched: number; matchedAtLeast: boolean }>(
      await sepp(['bulk', 'requeue', '--all-queues', '--error', 'handshake', '--dry-run', '--json'], env),
    );
    assert.deepEqual(dry, { matched: 3, matchedAtLeast: false });
    const done = cliJson<{ id: string; state: string; changed: number }>(
      await sepp(['bulk', 'requeue', '--all-queues', '--error', 'handshake', '--yes', '--json'], env),
    );
    assert.deepEqual([done.state, done.changed], ['done', 3]);
    const listed = cliJson<{ id: string }[]>(await sepp(['bulk', 'list', '--json'], env));
    assert.ok(listed.some((o) => o.id === done.id));
    const status = await sepp(['bulk', 'status', done.id], env);
    assert.match(status.stdout, /requeue {2}done {2}3 of 3 changed/);
    const usage = await sepp(['bulk', 'delete', '--error', 'x', '--yes'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--queue NAME or --all-queues/);
  });

  test('--request-key: the same key again prints the operation the first run started; refusals', async () => {
    const queue = 'cli-keyed';
    await served.client.enqueueBatch(
      Array.from({ length: 3 }, () => ({ queue, type: 'mail', payload: '{}' })),
    );
    await deadLetters(queue, 2, 'refused');
    const env = { SEPP_SERVER: served.server.address };
    const cancel = ['cancel', '--queue', queue, '--yes', '--background', '--json'];
    const runs = [];
    for (let run = 0; run < 2; run++) {
      runs.push(cliJson<{ id: string }>(await sepp([...cancel, '--request-key', 'nightly-cancel-1'], env)));
    }
    assert.equal(runs[1]?.id, runs[0]?.id, 'the second run answers with the operation the first started');
    const requeue = [
      'dlq',
      'requeue',
      queue,
      '--all',
      '--background',
      '--json',
      '--request-key',
      'dlq:requeue.1',
    ];
    const requeued = [];
    for (let run = 0; run < 2; run++) requeued.push(cliJson<{ id: string }>(await sepp(requeue, env)));
    assert.equal(requeued[1]?.id, requeued[0]?.id);
    assert.notEqual(requeued[0]?.id, runs[0]?.id);
    // The key names one request: another filter under it is refused by the server.
    const other = await sepp([...cancel, '--type', 'other', '--request-key', 'nightly-cancel-1'], env);
    assert.equal(other.code, 2, other.stderr);
    assert.match(other.stderr, /another request/);
    // Refused before any call, naming the flag.
    const bad = await sepp([...cancel, '--request-key', 'not a key'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--request-key must be 1 to 128 letters/);
    const ids = await sepp(['cancel', runs[0]?.id ?? '', '--request-key', 'k1'], env);
    assert.equal(ids.code, 2);
    assert.match(ids.stderr, /--request-key goes with --queue/);
  });

  test('sepp dlq top-errors groups by class and first line; sepp bulk acts on a group; sepp job shows the class and stack', async () => {
    const queue = 'cli-top';
    await served.client.enqueueBatch(
      Array.from({ length: 3 }, () => ({ queue, type: 'mail', payload: '{}' })),
    );
    const leased = await served.client.reserve({ queues: [queue], maxJobs: 3 });
    for (const [i, job] of leased.entries()) {
      const error = i < 2 ? new RangeError(`port ${i} out of range\nsecond line`) : 'plain text';
      await served.client.nack(job, { error, deadLetter: true });
    }
    const env = { SEPP_SERVER: served.server.address };
    const shown = await sepp(['dlq', 'top-errors', queue], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^JOBS +CLASS +FIRST LINE/m);
    assert.match(shown.stdout, /^1 +RangeError +port 0 out of range/m);
    assert.match(shown.stdout, /^1 +- +plain text/m);
    const top = cliJson<{
      groups: { errorClass: string; firstLine: string; jobs: number }[];
      complete: boolean;
    }>(await sepp(['dlq', 'top-errors', queue, '--json'], env));
    assert.equal(top.groups.length, 3);
    assert.equal(top.complete, true);
    const job = await sepp(['job', leased[0]!.id], env);
    assert.match(job.stdout, /attempt 1 at .+ \[RangeError\]: port 0 out of range/);
    assert.match(job.stdout, /^ {4}RangeError: port 0 out of range$/m);
    assert.match(job.stdout, /^ {4}second line$/m);
    const group = [
      '--queue',
      queue,
      '--state',
      'dead',
      '--error-class',
      'RangeError',
      '--error-line',
      'port 1 out of range',
    ];
    const dry = cliJson<{ matched: number }>(
      await sepp(['bulk', 'delete', ...group, '--dry-run', '--json'], env),
    );
    assert.equal(dry.matched, 1);
    const done = cliJson<{ changed: number }>(
      await sepp(['bulk', 'delete', ...group, '--yes', '--json'], env),
    );
    assert.equal(done.changed, 1);
    const usage = await sepp(['bulk', 'delete', '--queue', queue, '--error-class', 'X', '--yes'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--error-class names a group with --error-line/);
  });
});
