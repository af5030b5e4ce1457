/**
 * The queue registry's settings views (src/engine/queue-registry.ts): a queue that is neither
 * declared nor existing is not cached, but its last view is remembered so that the jobs of one
 * flow or batch into a new queue resolve it once; a run-time override or a config reload must
 * still show at once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueRegistry } from '../../src/engine/queue-registry.ts';
import { defaultEngineOptions, defaultQueueSettings } from '../../src/engine/settings.ts';

test('a new queue’s view is resolved once for many jobs, and follows overrides and reloads', () => {
  const options = defaultEngineOptions();
  const registry = new QueueRegistry(options);
  const first = registry.viewOf('fresh');
  assert.equal(registry.viewOf('fresh'), first, 'the same view again, not a new one per job');
  assert.equal(first.settings.maxAttempts, defaultQueueSettings.maxAttempts);

  // Another new queue takes the one remembered place; the first is resolved again, equal.
  const other = registry.viewOf('other');
  assert.notEqual(other, first);
  assert.deepEqual(registry.viewOf('fresh'), first);

  registry.setOverrides('fresh', { maxAttempts: 9 });
  assert.equal(registry.viewOf('fresh').settings.maxAttempts, 9, 'an override shows at once');
  registry.setOverrides('fresh', {});
  assert.equal(registry.viewOf('fresh').settings.maxAttempts, defaultQueueSettings.maxAttempts);

  registry.setFileSettings({
    ...options,
    queueDefaults: { ...options.queueDefaults, maxAttempts: 3 },
  });
  assert.equal(registry.viewOf('fresh').settings.maxAttempts, 3, 'a reload shows at once');
});
