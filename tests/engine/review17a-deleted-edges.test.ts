/**
 * review17a (a finding, mended): a job cancelled while its dependency ran keeps that edge
 * pending, shown `completed` once the dependency completes (dependencies/shown.ts). A bulk
 * delete of the completed dependency passed its delete on as a failure (release.ts
 * `releaseEnded`: `failed` is every outcome but `completed`), and `failToEnded` rewrote
 * that edge to `failed`: GetJob then said the dependency failed, though it completed. Now the
 * delete of a completed job resolves that edge `completed` (release.ts `passDeletionOn`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytes, withEngine } from '../helpers/engine.ts';

test('deleting a completed dependency leaves its edges saying it completed', async () => {
  await withEngine(
    { options: { queues: { 'de-a': { completedRetentionMs: 60_000 } } } },
    async ({ engine }) => {
      const flow = await engine.enqueueFlow([
        { name: 'a', queue: 'de-a', type: 'a', payload: bytes('x') },
        { name: 'b', queue: 'de-b', type: 'b', payload: bytes('x'), after: ['a'] },
      ]);
      assert.ok(flow.committed);
      const [a, b] = flow.jobs.map((j) => j.jobId);
      await engine.cancel(b!);
      const [leased] = await engine.reserve({ queues: ['de-a'], maxJobs: 1, leaseMs: 60_000 });
      assert.equal(leased?.id, a);
      await engine.ack({ jobId: leased!.id, attempt: leased!.attempt });
      const edge = async () => (await engine.getJob(b!)).dependencies?.map((l) => l.edge);
      assert.deepEqual(await edge(), ['completed'], 'before the delete');
      await engine.runBulk({ action: 'delete', filter: { queue: 'de-a', states: ['completed'] } });
      assert.deepEqual(await edge(), ['completed'], 'after the delete of the completed dependency');
    },
  );
});
