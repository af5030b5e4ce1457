/**
 * The workflow gauges at /metrics (issue 33): jobs waiting on dependencies are
 * sepp_queue_depth{sepp_job_state="waiting"}, batches not ended are sepp_batches_open,
 * both from what the store holds at the scrape.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const served = serverAndClient();

test('jobs waiting on dependencies and batches open, as the store holds them', async () => {
  const open = async () => sampleValue((await scrape(served.server.metricsUrl)).samples, 'sepp_batches_open');
  assert.equal(await open(), 0);
  const first = await served.client.enqueue('wm-a', 'a');
  await served.client.enqueue('wm-b', 'b', undefined, { dependsOn: [first.id] });
  const { batch } = await served.client.createBatch({ jobs: [{ queue: 'wm-c', type: 'c' }] });
  const { samples } = await scrape(served.server.metricsUrl);
  assert.equal(
    sampleValue(samples, 'sepp_queue_depth', { sepp_queue: 'wm-b', sepp_job_state: 'waiting' }),
    1,
  );
  assert.equal(sampleValue(samples, 'sepp_batches_open'), 1);
  await served.client.sealBatch(batch.id);
  assert.equal(await open(), 1, 'sealed, with a member pending');
  const [member] = await served.client.reserve({ queues: ['wm-c'] });
  await served.client.ack(member!);
  assert.equal(await open(), 0);
});
