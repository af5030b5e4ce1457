/**
 * Job control meets job groups (issues 17 and 20), through the real server and
 * the real SDK on both transports: UpdateJob moves a waiting job to another
 * group (or out of its group) and flow control serves it under the new one at
 * once — group_max_leased, the queue's first group, a reserve held back by a
 * group limit; a leased job's group cannot change; bulk cancel and run-now
 * filtered by group touch only that group's jobs; the audit entries name the
 * group.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type JobChanges, SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { until } from '../client/helpers.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const toml = `
[queues.tenants]
group_max_leased = 1

[queues.fresh]
group_max_leased = 1

[queues.waiting]
group_max_leased = 1
`;

const hour = 3_600_000;

async function refusal(promise: Promise<unknown>): Promise<SeppError> {
  return promise.then(
    () => assert.fail('the call succeeded'),
    (error: unknown) => {
      assert.ok(error instanceof SeppError, String(error));
      return error;
    },
  );
}

for (const transport of ['stream', 'unary'] as const) {
  describe(`job groups and job control (${transport})`, () => {
    const clock = new FakeClock(Date.UTC(2026, 3, 1));

    const served = serverAndClient({ clock, toml }, { transport });

    test('a waiting job moved to another group is leased under it (group_max_leased = 1)', async () => {
      const first = await served.client.enqueueJson('tenants', 'w', {}, { group: 'acme' });
      const second = await served.client.enqueueJson('tenants', 'w', {}, { group: 'acme' });
      const leased = await served.client.reserve({ queues: ['tenants'], maxJobs: 10 });
      assert.deepEqual(
        leased.map((j) => j.id),
        [first.id],
        'acme is at its limit: its second job waits',
      );
      assert.equal((await served.client.reserve({ queues: ['tenants'], maxJobs: 10 })).length, 0);

      const moved = await served.client.updateJob(second.id, { group: 'globex' });
      assert.equal(moved.group, 'globex');
      assert.equal(moved.state, 'ready');
      const next = await served.client.reserve({ queues: ['tenants'], maxJobs: 10 });
      assert.deepEqual(
        next.map((j) => [j.id, j.group]),
        [[second.id, 'globex']],
        'globex has no lease yet: the moved job goes now',
      );

      // A running job's group cannot change: FAILED_PRECONDITION, the job as it was.
      const error = await refusal(served.client.updateJob(first.id, { group: 'globex' }));
      assert.equal(error.code, 'failed_precondition');
      assert.match(error.message, /is leased/);
      assert.equal((await served.client.getJob(first.id)).group, 'acme');
      for (const j of [...leased, ...next]) await served.client.ack(j);

      const audit = await served.client.listAuditEntries({ target: `job:${second.id}` });
      assert.equal(audit.entries[0]?.action, 'job.update');
      assert.equal(audit.entries[0]?.details.group, 'globex');
      assert.equal(audit.entries[0]?.details.previousGroup, 'acme');
    });

    test('the first group of a queue turns its limits on; null takes a job out of its group', async () => {
      const a = await served.client.enqueueJson('fresh', 'w', {}, { delayMs: hour });
      const b = await served.client.enqueueJson('fresh', 'w', {}, { delayMs: hour });
      const c = await served.client.enqueueJson('fresh', 'w', {});
      for (const job of [a, b]) {
        const moved = await served.client.updateJob(job.id, { group: 'solo', runNow: true });
        assert.deepEqual([moved.group, moved.state], ['solo', 'ready']);
      }
      const out = await served.client.updateJob(c.id, { group: null });
      assert.equal(out.group, null);
      const leased = await served.client.reserve({ queues: ['fresh'], maxJobs: 10 });
      assert.equal(leased.length, 2, 'the ungrouped job and one of group solo (group_max_leased = 1)');
      assert.deepEqual(leased.map((j) => j.group ?? '-').sort(), ['-', 'solo']);
      for (const j of leased) await served.client.ack(j);
      const last = await served.client.reserve({ queues: ['fresh'], maxJobs: 10 });
      assert.equal(last.length, 1);
      if (last[0]) await served.client.ack(last[0]);
    });

    test('a reserve held back by a group limit is woken when a job moves to a free group', async () => {
      const first = await served.client.enqueueJson('waiting', 'w', {}, { group: 'busy' });
      const second = await served.client.enqueueJson('waiting', 'w', {}, { group: 'busy' });
      const [held] = await served.client.reserve({ queues: ['waiting'] });
      assert.equal(held?.id, first.id);
      const waiting = served.client.reserve({ queues: ['waiting'], waitMs: 60_000 });
      // The long-poll is registered (and throttled by busy's limit) before the move.
      await until(
        async () =>
          (await served.server.server.engine.listQueues()).find((q) => q.name === 'waiting')
            ?.throttledWorkers === 1,
        'the reserve waits, throttled',
      );
      await served.client.updateJob(second.id, { group: 'idle' });
      const [woken] = await waiting;
      assert.equal(woken?.id, second.id, 'the waiting reserve got the moved job without any time passing');
      if (held) await served.client.ack(held);
      if (woken) await served.client.ack(woken);
    });

    test('bulk cancel and run-now by group touch only that group, and the audit names it', async () => {
      const queue = `bulk-${transport}`;
      const running = await served.client.enqueueJson(queue, 'w', {}, { group: 'acme' });
      const [lease] = await served.client.reserve({ queues: [queue] });
      assert.equal(lease?.id, running.id);
      const ids = async (group: string | undefined, n: number, delayMs = 0) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const options = { ...(group === undefined ? {} : { group }), ...(delayMs > 0 ? { delayMs } : {}) };
          out.push((await served.client.enqueueJson(queue, 'w', {}, options)).id);
        }
        return out;
      };
      const acmeReady = await ids('acme', 2);
      const acmeLater = await ids('acme', 2, hour);
      const globexLater = await ids('globex', 2, hour);
      const globexReady = await ids('globex', 1);
      const none = await ids(undefined, 1, hour);

      const ranNow = await served.client.updateJobs({ queue, group: 'acme' }, { runNow: true });
      assert.equal(ranNow, 2, 'the scheduled jobs of acme only');
      for (const id of acmeLater) assert.equal((await served.client.getJob(id)).state, 'ready');
      for (const id of [...globexLater, ...none])
        assert.equal((await served.client.getJob(id)).state, 'scheduled');

      const dry = await served.client.cancelJobs({ queue, group: 'acme' }, { dryRun: true });
      assert.equal(dry.matched, 5, '4 ready and 1 leased of acme');
      const done = await served.client.cancelJobs({ queue, group: 'acme' });
      assert.deepEqual([done.cancelled, done.cancelRequested], [4, 1]);
      for (const id of [...acmeReady, ...acmeLater])
        assert.equal((await served.client.getJob(id)).state, 'cancelled');
      for (const id of [...globexLater, ...none])
        assert.equal((await served.client.getJob(id)).state, 'scheduled');
      assert.equal((await served.client.getJob(globexReady[0]!)).state, 'ready');

      const audit = await served.client.listAuditEntries({ target: `queue:${queue}` });
      const cancel = audit.entries.find((e) => e.action === 'jobs.cancel');
      const update = audit.entries.find((e) => e.action === 'jobs.update');
      assert.equal(cancel?.details.group, 'acme');
      assert.equal(update?.details.group, 'acme');

      // The group rules of enqueue, and a group changes one job at a time.
      const bad = await refusal(served.client.cancelJobs({ queue, group: 'no spaces' }));
      assert.equal(bad.code, 'invalid_argument');
      assert.match(bad.message, /group "no spaces" may use only/);
      // The SDK's types take no group in bulk (BulkChanges): a JobChanges, or JavaScript, gets here.
      const oneJobChange: JobChanges = { group: 'x' };
      const bulk = await refusal(served.client.updateJobs({ queue }, oneJobChange));
      assert.equal(bulk.code, 'invalid_argument');
      assert.match(bulk.message, /one job at a time/);
      const badChange = await refusal(served.client.updateJob(globexReady[0]!, { group: 'a b' }));
      assert.equal(badChange.code, 'invalid_argument');
    });
  });
}
