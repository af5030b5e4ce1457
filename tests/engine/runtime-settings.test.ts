/**
 * Run-time overrides of queue settings in the engine: each change is one
 * transaction with its audit entry (old and new value, both sources); checks
 * across settings see every change made before them, even in the same group
 * commit; a reload's new file layer is checked against the overrides; the
 * overrides are read back at start; derived values (whether any queue keeps
 * completed jobs) follow every change.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { queueSettingsChecker } from '../../src/config/index.ts';
import type { EngineDeps } from '../../src/engine/engine.ts';
import { defaultQueueSettings } from '../../src/engine/settings.ts';
import { loadToml } from '../config/helpers.ts';
import { expectCode, job, until, withEngine } from '../helpers/engine.ts';

const audit = { actor: 'alice', action: 'queue.settings.set', target: 'queue:q' };
const deps: Partial<EngineDeps> = { checkQueueSettings: queueSettingsChecker(loadToml('')) };

test('a change is audited with every old and new value and its source, in its own transaction', async () => {
  await withEngine({ deps, options: { queues: { q: { maxAttempts: 7 } } } }, async ({ engine }) => {
    const info = await engine.changeQueueSettings(
      'q',
      { set: { maxAttempts: 9, backoffBaseMs: 2000 } },
      audit,
    );
    assert.equal(info.settings.maxAttempts, 9);
    assert.equal(info.settings.backoff.baseMs, 2000);
    assert.equal(info.settingSources.maxAttempts, 'override');
    assert.equal(info.fileSettings.maxAttempts, 7);
    const [entry] = (await engine.listAudit({ action: 'queue.settings.set' })).items;
    assert.deepEqual(entry?.details.changes, {
      max_attempts: { from: 7, fromSource: 'queue', to: 9, toSource: 'override' },
      backoff_base_ms: { from: 1000, fromSource: 'default', to: 2000, toSource: 'override' },
    });

    await engine.changeQueueSettings('q', { reset: 'all' }, { ...audit, action: 'queue.settings.reset' });
    const [reset] = (await engine.listAudit({ action: 'queue.settings.reset' })).items;
    assert.deepEqual(reset?.details.changes, {
      max_attempts: { from: 9, fromSource: 'override', to: 7, toSource: 'queue' },
      backoff_base_ms: { from: 2000, fromSource: 'override', to: 1000, toSource: 'default' },
    });

    // Refused changes write nothing, not even an audit entry.
    const before = (await engine.listAudit({})).items.length;
    await expectCode(engine.changeQueueSettings('nope', { set: { maxAttempts: 2 } }, audit), 'not_found');
    await expectCode(engine.changeQueueSettings('q', {}, audit), 'invalid_argument');
    const clash = await expectCode(
      engine.changeQueueSettings('q', { set: { defaultLeaseMs: 13 * 3_600_000 } }, audit),
      'invalid_argument',
    );
    assert.match(clash.message, /queues\.q\.default_lease_ms: .* is longer than max_lease_ms/);
    assert.equal((await engine.listAudit({})).items.length, before);
  });
});

test('two changes in the same group commit are checked against each other', async () => {
  await withEngine({ deps, options: { queues: { q: {} } } }, async ({ engine }) => {
    // Each is valid against the file alone (max lease 12h, default lease 30s); together they clash.
    const results = await Promise.allSettled([
      engine.changeQueueSettings('q', { set: { defaultLeaseMs: 2 * 3_600_000 } }, audit),
      engine.changeQueueSettings('q', { set: { maxLeaseMs: 3_600_000 } }, audit),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
    );
    const [settings] = (await engine.listQueues()).map((q) => q.settings);
    assert.equal(settings?.defaultLeaseMs, 2 * 3_600_000);
    assert.equal(settings?.maxLeaseMs, defaultQueueSettings.maxLeaseMs);
  });
});

test('a reload in the same group commit as a change: the change is checked against the new file', async () => {
  await withEngine({ deps, options: { queues: { q: {} } } }, async ({ engine }) => {
    const file = { ...engine.options, queues: { q: { maxLeaseMs: 3_600_000 } } };
    const results = await Promise.allSettled([
      engine.reconfigureQueues(file),
      engine.changeQueueSettings('q', { set: { defaultLeaseMs: 2 * 3_600_000 } }, audit),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
    );
    // And a reload that clashes with an override in force is refused inside its transaction.
    await engine.changeQueueSettings('q', { set: { defaultLeaseMs: 50 * 60_000 } }, audit);
    await expectCode(
      engine.reconfigureQueues({ ...engine.options, queues: { q: { maxLeaseMs: 30 * 60_000 } } }),
      'failed_precondition',
    );
    assert.equal(engine.options.queues.q?.maxLeaseMs, 3_600_000);
  });
});

test('overrides are read back at start; whether acks keep jobs follows every change', async () => {
  await withEngine({ deps }, async (t) => {
    await t.engine.enqueue(job('q'));
    const ackOne = async (engine: typeof t.engine) => {
      await engine.enqueue(job('q'));
      const [leased] = await engine.reserve({ queues: ['q'], maxJobs: 1 });
      assert.ok(leased);
      await engine.ack({ jobId: leased.id, attempt: leased.attempt });
      return (await engine.listQueues())[0]?.counts.completed;
    };
    assert.equal(await ackOne(t.engine), 0, 'no queue keeps completed jobs: acks delete');
    await t.engine.changeQueueSettings('q', { set: { completedRetentionMs: 60_000 } }, audit);
    assert.equal(await ackOne(t.engine), 1, 'the override makes acks keep the job');
    const reopened = await t.reopen();
    assert.equal((await reopened.engine.listQueues())[0]?.settingSources.completedRetentionMs, 'override');
    assert.equal(await ackOne(reopened.engine), 2, 'and it holds after a restart');
    await reopened.engine.changeQueueSettings('q', { reset: ['completedRetentionMs'] }, audit);
    assert.equal(await ackOne(reopened.engine), 2, 'a reset deletes on ack again');
    return reopened;
  });
});

test('flow-control limits are settings like any other: overridden, checked like the file, and a raised limit frees throttled reserves at once', async () => {
  await withEngine({ deps, options: { queues: { q: { maxLeased: 1 } } } }, async ({ engine }) => {
    await engine.enqueueBatch([job('q'), job('q'), job('q')]);
    assert.equal(
      (await engine.reserve({ queues: ['q'], maxJobs: 3 })).length,
      1,
      'max_leased = 1 from the file',
    );
    const waiting = engine.reserve({ queues: ['q'], maxJobs: 2, waitMs: 3_600_000 });
    await until(engine, async () => (await engine.listQueues())[0]?.throttledWorkers === 1);

    const info = await engine.changeQueueSettings('q', { set: { maxLeased: 3, rateLimitLeases: 50 } }, audit);
    assert.equal(info.settingSources.maxLeased, 'override');
    assert.equal(info.fileSettings.maxLeased, 1);
    assert.deepEqual(info.settings.rateLimit, { leases: 50, periodMs: 1000, burst: 50 });
    assert.equal(
      (await waiting).length,
      2,
      'the throttled reserve is woken by the change, not by a lease ending',
    );

    const burst = await expectCode(
      engine.changeQueueSettings('q', { set: { rateLimitLeases: 0, rateLimitBurst: 5 } }, audit),
      'invalid_argument',
    );
    assert.match(burst.message, /queues\.q\.rate_limit_burst: is 5 but rate_limit_leases is 0/);
    await engine.changeQueueSettings('q', { reset: ['maxLeased'] }, audit);
    assert.equal((await engine.listQueues())[0]?.settings.maxLeased, 1);
  });
});
