/**
 * Session caps are per user (issue 14, item 13): logging in often ends only
 * your own oldest sessions. Before, one cap of 10,000 for everybody meant any
 * viewer could log everyone else out by logging in 10,000 times.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxAnonymousSessions, SessionStore } from '../../src/admin/sessions.ts';
import { loggedIn, openTestAdmin } from '../helpers/admin.ts';

test('a user logging in ten thousand times ends only their own oldest sessions', () => {
  let nowMs = 1_000_000;
  const store = new SessionStore(60 * 60_000, () => nowMs, 10);
  const admin = store.create('admin', 'admin');
  for (let i = 0; i < 10_001; i++) {
    store.create('viewer', 'viewer');
    nowMs++;
  }
  assert.equal(store.get(admin.id)?.user, 'admin', "the admin's session survives");
  assert.equal(store.countOf('viewer'), 10);
  assert.equal(store.size, 11);
});

test('at the cap, the oldest session of that user ends; expiry, logout and removal keep the count right', () => {
  let nowMs = 0;
  const store = new SessionStore(1000, () => nowMs, 3);
  const first = store.create('alice', 'viewer');
  const rest = [store.create('alice', 'viewer'), store.create('alice', 'viewer')];
  store.create('alice', 'viewer');
  assert.equal(store.get(first.id), undefined, 'the oldest ended');
  assert.ok(rest.every((s) => store.get(s.id) !== undefined));
  store.delete(rest[0]?.id);
  assert.equal(store.countOf('alice'), 2);
  nowMs = 1000;
  assert.equal(store.get(rest[1]?.id), undefined, 'expired');
  store.create('bob', 'viewer');
  assert.equal(store.countOf('alice'), 0, 'expired sessions are swept from the count too');
  store.deleteUser('bob');
  assert.equal(store.size, 0);
});

test('without login, anonymous sessions have a cap of their own, far above the per-user one', () => {
  const store = new SessionStore(60_000, () => 0, 2);
  const browser = store.create('anonymous', 'admin');
  for (let i = 0; i < maxAnonymousSessions - 1; i++) store.create('anonymous', 'admin');
  assert.ok(store.get(browser.id) !== undefined);
  store.create('anonymous', 'admin');
  assert.equal(store.get(browser.id), undefined);
  assert.equal(store.countOf('anonymous'), maxAnonymousSessions);
});

test('over HTTP: a viewer at admin.max_sessions_per_user logs only their own oldest session out', async () => {
  const a = await openTestAdmin({ deps: { maxSessionsPerUser: 2 } });
  try {
    const admin = await loggedIn(a, 'admin');
    const oldest = await loggedIn(a, 'viewer');
    const middle = await loggedIn(a, 'viewer');
    const newest = await loggedIn(a, 'viewer');
    assert.equal((await oldest.get('/api/v1/queues')).status, 401);
    assert.equal((await middle.get('/api/v1/queues')).status, 200);
    assert.equal((await newest.get('/api/v1/queues')).status, 200);
    assert.equal((await admin.get('/api/v1/queues')).status, 200);
  } finally {
    a.dispose();
  }
});
