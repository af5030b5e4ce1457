/**
 * Per-queue metrics are bounded (issue 29, item 3): past the first 200 queues,
 * every queue is reported as `sepp_queue="(other)"`, its counts added up, so
 * a flood of queue names cannot grow `/metrics` (docs/observability.md).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { scrape } from '../helpers/prometheus.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.dispose());

test('250 queues: 200 keep their own series, 50 share "(other)", and the totals still add up', async () => {
  const names = Array.from({ length: 250 }, (_, i) => `q${String(i).padStart(3, '0')}`);
  // Two jobs per queue, in one batch: one event per queue and outcome.
  await call(t.client, t.client.enqueueBatch, {
    jobs: names.flatMap((queue) => [testJob(queue), testJob(queue)]),
  });
  const { samples } = await scrape(t.metricsUrl);
  const depth = samples.filter((s) => s.name === 'sepp_queue_depth' && s.labels.sepp_job_state === 'ready');
  const labels = new Set(depth.map((s) => s.labels.sepp_queue));
  assert.equal(labels.size, 201, '200 queues and (other)');
  assert.ok(labels.has('(other)'));
  assert.equal(
    depth.reduce((sum, s) => sum + s.value, 0),
    500,
    'every ready job is counted once',
  );
  assert.equal(depth.find((s) => s.labels.sepp_queue === '(other)')?.value, 100, '50 queues × 2 jobs');
  const enqueued = samples.filter((s) => s.name === 'sepp_jobs_enqueued_total');
  assert.ok(new Set(enqueued.map((s) => s.labels.sepp_queue)).size <= 201);
  assert.equal(
    enqueued.reduce((sum, s) => sum + s.value, 0),
    500,
  );
});
