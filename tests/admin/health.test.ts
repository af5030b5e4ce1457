/**
 * GET /healthz and /readyz on the admin address: no login, tiny JSON, never
 * cached; /readyz says 503 with the reason when sepp cannot serve, and a real
 * server stops being ready the moment its shutdown begins.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Readiness } from '../../src/admin/index.ts';
import { openTestAdmin, TestClient } from '../helpers/admin.ts';
import { startTestServer } from '../helpers/server.ts';

test('/healthz and /readyz answer without a session, in a few bytes, uncached', async () => {
  let state: Readiness = { ready: true };
  const admin = await openTestAdmin({ deps: { readiness: () => state } });
  try {
    const client = new TestClient(admin.app);
    const health = await client.get<unknown>('/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    assert.equal(health.headers.get('cache-control'), 'no-store');
    const ready = await client.get<unknown>('/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
    const head = await client.request('HEAD', '/readyz');
    assert.equal(head.status, 200);

    state = { ready: false, reason: 'shutting down' };
    const notReady = await client.get<unknown>('/readyz');
    assert.equal(notReady.status, 503);
    assert.deepEqual(notReady.body, { status: 'not_ready', reason: 'shutting down' });
    assert.equal((await client.get('/healthz')).status, 200, 'alive while not ready');

    // The rest of the admin app still wants a login.
    assert.equal((await client.get('/api/v1/queues')).status, 401);
  } finally {
    admin.dispose();
  }
});

test('a real server is ready while it serves and not ready once shutdown begins', async () => {
  const t = await startTestServer();
  const base = t.metricsUrl.replace(/\/metrics$/, '');
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 200);
  assert.equal(await ready.text(), '{"status":"ready"}\n');
  assert.deepEqual(await t.server.readiness(), { ready: true });
  const stopping = t.dispose();
  assert.deepEqual(await t.server.readiness(), { ready: false, reason: 'shutting down' });
  await stopping;
});
