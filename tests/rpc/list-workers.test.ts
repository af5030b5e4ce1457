/**
 * The worker registry end to end: an SDK Worker on its Work stream is listed
 * from its subscribe until it closes, a Reserve caller after its call, each
 * with the leases it holds (ListWorkers over gRPC, the SDK's listWorkers);
 * releasing a lease ends it as its expiry would, audited, and the worker's
 * ack is then refused as a lost lease.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseLostError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { deferred, until } from '../client/helpers.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const clock = new FakeClock(Date.UTC(2026, 5, 1));

const served = serverAndClient({ clock });

test('a Worker is listed while its Work stream is open, with the jobs it holds', async () => {
  const started = deferred();
  const release = deferred();
  const worker = served.client.worker({
    queues: ['mail'],
    workerId: 'mailer-1',
    concurrency: 2,
    handlers: {
      send: async () => {
        started.resolve();
        await release.promise;
      },
    },
  });
  await served.client.enqueue('mail', 'send', Buffer.from('{}'));
  await started.promise;
  clock.advance(1500);
  const listed = await served.client.listWorkers();
  const mine = listed.filter((w) => w.workerId === 'mailer-1');
  assert.equal(mine.length, 1, `one entry for the Worker's streams: ${JSON.stringify(listed)}`);
  assert.ok(mine[0]!.connections >= 1);
  assert.equal(mine[0]!.transport, 'work_stream');
  assert.deepEqual(mine[0]!.queues, ['mail']);
  assert.equal(mine[0]!.jobsHeld, 1);
  assert.equal(clock.nowMs() - mine[0]!.oldestLeaseAtMs!, 1500, 'held for as long as the clock moved');
  assert.match(mine[0]!.address, /127\.0\.0\.1:\d+/);
  assert.deepEqual(
    [mine[0]!.completedRecent, mine[0]!.failedRecent, mine[0]!.recentWindowMs],
    [0, 0, 900_000],
  );
  release.resolve();
  // The ack is counted with the worker: its done/failed over the last 15 minutes (issue 36).
  await until(
    async () =>
      (await served.client.listWorkers()).some((w) => w.workerId === 'mailer-1' && w.completedRecent === 1),
    'the ack counted',
  );
  await worker.close();
  await until(
    async () => !(await served.server.server.engine.listWorkers()).some((w) => w.workerId === 'mailer-1'),
    'the stream to end',
  );
  assert.deepEqual(
    (await served.client.listWorkers()).filter((w) => w.workerId === 'mailer-1'),
    [],
    'a closed stream is no longer listed',
  );
});

test('a Reserve caller is listed after its call and forgotten 5 minutes after its last', async () => {
  const { id } = await served.client.enqueue('hooks', 'post', Buffer.from('{}'));
  const [job] = await served.client.reserve({ queues: ['hooks'], workerId: 'hooker', leaseMs: 3_600_000 });
  assert.equal(job?.id, id);
  const [listed] = (await served.client.listWorkers()).filter((w) => w.workerId === 'hooker');
  assert.equal(listed?.transport, 'reserve');
  assert.equal(listed?.jobsHeld, 1);

  // Released by an operator: the lease ends as its expiry would, audited in the same transaction.
  const result = await served.server.server.engine.releaseLease(id, {
    actor: 'ops',
    action: 'worker.release_lease',
    target: `job:${id}`,
  });
  assert.deepEqual(result, { previousState: 'leased', state: 'ready' });
  const detail = await served.server.server.engine.getJob(id);
  assert.equal(detail.state, 'ready');
  assert.equal(detail.errors.at(-1)?.error, 'lease released by ops');
  const [entry] = (await served.server.server.engine.listAudit({ action: 'worker.release_lease' })).items;
  assert.equal(entry?.target, `job:${id}`);
  assert.deepEqual(entry?.details, {
    jobId: id,
    queue: 'hooks',
    attempt: 1,
    previousState: 'leased',
    state: 'ready',
  });
  await assert.rejects(served.client.ack(job!), LeaseLostError, "the worker's ack is refused");
  await assert.rejects(
    served.server.server.engine.releaseLease(id),
    /is ready, not leased: there is no lease to release/,
    'only a leased job has a lease to release',
  );
  assert.equal((await served.client.listWorkers()).find((w) => w.workerId === 'hooker')?.jobsHeld, 0);

  clock.advance(5 * 60_000 + 1);
  assert.deepEqual(
    (await served.client.listWorkers()).filter((w) => w.workerId === 'hooker'),
    [],
    'a Reserve caller that stopped calling is forgotten',
  );
  assert.deepEqual(await served.server.server.engine.counterMismatches(), []);
});

test('the last attempt of a released lease goes to the dead letters as lease_expired', async () => {
  const { id } = await served.client.enqueue('once', 'post', Buffer.from('{}'), { maxAttempts: 1 });
  const [job] = await served.client.reserve({ queues: ['once'], workerId: 'w' });
  assert.equal(job?.id, id);
  assert.deepEqual(await served.server.server.engine.releaseLease(id), {
    previousState: 'leased',
    state: 'dead',
  });
  assert.equal((await served.server.server.engine.getJob(id)).deadReason, 'lease_expired');
  assert.deepEqual(await served.server.server.engine.counterMismatches(), []);
});
