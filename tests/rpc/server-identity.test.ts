/**
 * GetServerInfo and the dashboard name the process that answered — its host name, an
 * instance id made at its start, its pid and the addresses it bound — so that servers
 * sharing one PostgreSQL behind a load balancer are told apart. A restart makes a new id.
 * Only to the callers that run the servers: an admin key for every queue, a console operator.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import type { Overview } from '../../src/admin/api-types.ts';
import { credentials, keysToml, metadataFor } from '../helpers/access-table.ts';
import { loggedIn, openTestAdmin } from '../helpers/admin.ts';
import { call, startTestServer } from '../helpers/server.ts';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('GetServerInfo and the overview name the process: host, instance id, pid, the addresses bound', async () => {
  const servers = await Promise.all([startTestServer(), startTestServer()]);
  const [a, b] = servers;
  try {
    const identityOf = async (t: typeof a) => (await call(t.client, t.client.getServerInfo, {})).identity;
    const [first, second] = [await identityOf(a), await identityOf(b)];
    assert.ok(first !== undefined && second !== undefined);
    assert.match(first.instanceId, uuid);
    assert.notEqual(first.instanceId, second.instanceId, 'two processes, two ids');
    assert.equal(first.hostName, hostname());
    assert.equal(first.pid, process.pid);
    assert.equal(first.grpcAddress, a.address);
    assert.equal(`http://${first.adminAddress}/metrics`, a.metricsUrl);
    assert.equal(first.httpAddress, '', 'the HTTP API is off');
    // The dashboard's Server card reads the same from the overview.
    const overview = (await (
      await fetch(a.metricsUrl.replace(/\/metrics$/, '/api/v1/overview'))
    ).json()) as Overview;
    assert.deepEqual(overview.server.identity, { ...first, httpAddress: null });
    // A restart is another process as far as a caller can tell: a new id, the same address.
    servers[0] = await a.restartOnSamePort();
    const again = await identityOf(servers[0]);
    assert.notEqual(again?.instanceId, first.instanceId);
    assert.equal(again?.grpcAddress, first.grpcAddress);
  } finally {
    await Promise.allSettled(servers.map((t) => t.dispose()));
  }
});

// Task wf18: least privilege. The machine's name, pid and addresses go to the callers that run
// the servers — an admin key for every queue, an operator or admin in the console — and to no
// producer, worker or key scoped to queues (of any role), nor a console viewer.
test('the identity is shown to an admin key for every queue, to no other key; in the console from operator up', async () => {
  const t = await startTestServer({ toml: keysToml });
  try {
    const shown: Record<string, boolean> = {};
    for (const credential of credentials.filter((c) => c.role !== null)) {
      const info = await call(t.client, t.client.getServerInfo, {}, metadataFor(credential));
      assert.ok(info.version !== '', credential.name);
      shown[credential.name] = info.identity !== undefined;
      if (info.identity !== undefined) assert.equal(info.identity.pid, process.pid, credential.name);
    }
    assert.deepEqual(shown, {
      'producer key': false,
      'worker key': false,
      'admin key': true,
      'admin key (configured as sha256)': true,
      'producer key scoped to the queues': false,
      'worker key scoped to the queues': false,
      'admin key scoped to the queues': false,
      'worker key scoped elsewhere': false,
      'admin key scoped elsewhere': false,
    });
  } finally {
    await t.dispose();
  }
  const admin = await openTestAdmin();
  try {
    const identities: Record<string, unknown> = {};
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const { status, body } = await (await loggedIn(admin, role)).get<Overview>('/api/v1/overview');
      assert.equal(status, 200);
      identities[role] = body.server.identity?.hostName ?? null;
    }
    assert.deepEqual(identities, { viewer: null, operator: 'test-host', admin: 'test-host' });
  } finally {
    admin.dispose();
  }
});
