/**
 * The workflow gauges at /metrics (issue 33): jobs waiting on dependencies are
 * sepp_queue_depth{sepp_job_state="waiting"}, batches not ended are sepp_batches_open,
 * both from what the store holds at the scrape.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { testStoreKind } from '../helpers/test-store.ts';

let t: TestServer;
let client: SeppClient;
before(async () => {
  t = await startTestServer();
  client = SeppClient.connect(t.address);
});
after(async () => {
  await client.close();
  await t.dispose();
});

test('jobs waiting on dependencies and batches open, as the store holds them', async () => {
  const open = async () => sampleValue((await scrape(t.metricsUrl)).samples, 'sepp_batches_open');
  if (testStoreKind === 'postgres') {
    assert.equal(await open(), undefined, 'a store without batches has no series');
    return;
  }
  assert.equal(await open(), 0);
  const first = await client.enqueue('wm-a', 'a');
  await client.enqueue('wm-b', 'b', undefined, { dependsOn: [first.id] });
  const { batch } = await client.createBatch({ jobs: [{ queue: 'wm-c', type: 'c' }] });
  const { samples } = await scrape(t.metricsUrl);
  assert.equal(
    sampleValue(samples, 'sepp_queue_depth', { sepp_queue: 'wm-b', sepp_job_state: 'waiting' }),
    1,
  );
  assert.equal(sampleValue(samples, 'sepp_batches_open'), 1);
  await client.sealBatch(batch.id);
  assert.equal(await open(), 1, 'sealed, with a member pending');
  const [member] = await client.reserve({ queues: ['wm-c'] });
  await client.ack(member!);
  assert.equal(await open(), 0);
});
