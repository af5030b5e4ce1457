/** What a key's `queues` patterns allow (config/queue-scope.ts): whole names, `*` for any run of characters. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueScope } from '../../src/config/index.ts';

test('a pattern matches whole names; * is any run of characters, none included; . is a dot', () => {
  const scope = new QueueScope(['billing-*', 'emails', '*.eu', 'a*b*c']);
  const allowed = ['billing-eu', 'billing-', 'emails', 'tenant.eu', '.eu', 'abc', 'a-b-c', 'aXbYc'];
  const refused = ['old-billing-eu', 'billing', 'emails-2', 'xemails', 'tenantXeu', 'ab', 'a-b-cd', ''];
  for (const name of allowed) assert.ok(scope.allows(name), name);
  for (const name of refused) assert.ok(!scope.allows(name), name);
  assert.equal(scope.describe(), 'billing-*, emails, *.eu, a*b*c');
});

test('* alone allows every queue', () => {
  const scope = new QueueScope(['*']);
  for (const name of ['a', 'billing-eu', 'x:y.z']) assert.ok(scope.allows(name), name);
});
