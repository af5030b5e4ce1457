/**
 * GetServerInfo and the dashboard name the process that answered — its host name, an
 * instance id made at its start, its pid and the addresses it bound — so that servers
 * sharing one PostgreSQL behind a load balancer are told apart. A restart makes a new id.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import type { Overview } from '../../src/admin/api-types.ts';
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
