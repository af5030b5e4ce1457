/**
 * The open batches one API key may hold (limits.max_open_batches_per_key, issue 33): a key
 * at the limit is refused a new batch inside the write, other keys are not, a batch that
 * ends frees its place, and the count is read from the stored batches, so a restart keeps it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import { bytes, expectCode, withEngine } from '../helpers/engine.ts';

const limits = { ...defaultEngineLimits, maxOpenBatchesPerKey: 2 };
const member = { queue: 'rows', type: 'row', payload: bytes('{}') };

test('a key at max_open_batches_per_key is refused a new batch until one ends; others are not', async () => {
  await withEngine({ options: { limits } }, async ({ engine, reopen }) => {
    const first = await engine.createBatch({ owner: 'etl', jobs: [member], seal: true });
    await engine.createBatch({ owner: 'etl' });
    const refused = await expectCode(engine.createBatch({ owner: 'etl' }), 'resource_exhausted');
    assert.match(refused.message, /API key etl holds 2 batches not ended.*limits\.max_open_batches_per_key/);
    // Another key, and in-process callers (no owner), are not held by etl's batches.
    await engine.createBatch({ owner: 'billing' });
    await engine.createBatch({});
    await engine.createBatch({});

    // A restart reads the count from the stored batches.
    const reopened = await reopen();
    const again = reopened.engine;
    await expectCode(again.createBatch({ owner: 'etl' }), 'resource_exhausted');
    // The first batch ends with its member's ack: etl may create one more.
    const [leased] = await again.reserve({ queues: ['rows'], maxJobs: 1 });
    assert.equal(leased?.id, first.results[0]?.ok ? first.results[0].jobId : '');
    await again.ack({ jobId: leased!.id, attempt: leased!.attempt });
    assert.equal((await again.getBatch(first.batch.id, { limit: 0 })).batch.state, 'ended');
    await again.createBatch({ owner: 'etl' });
    await expectCode(again.createBatch({ owner: 'etl' }), 'resource_exhausted');
    return reopened;
  });
});
