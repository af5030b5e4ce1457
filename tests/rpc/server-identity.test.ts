/**
 * GetServerInfo and the dashboard name the process that answered — its host name, an
 * instance id made at its start, its pid and the addresses it bound — so that servers
 * sharing one PostgreSQL behind a load balancer are told apart. A restart makes a new id.
 * Only to the callers that run the servers: an admin key for every queue, a console operator;
 * so is where the store is (any other caller is told its kind alone).
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import type { Overview } from '../../src/admin/api-types.ts';
import { type StoreDescription, storeKindOnly } from '../../src/store/store.ts';
import { credentials, keys, keysToml, metadataFor } from '../helpers/access-table.ts';
import { loggedIn, openTestAdmin } from '../helpers/admin.ts';
import { runCli } from '../helpers/cli.ts';
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

// Tasks wf18 and small19a: least privilege. The machine's name, pid and addresses, and where the
// store is (host, database, schema, signals, replication, bounds), go to the callers that run the
// servers — an admin key for every queue, an operator or admin in the console — and to no
// producer, worker or key scoped to queues (of any role), nor a console viewer: they learn the
// store's kind alone. The SQLite store has nothing of the kind to hide, so the store describes
// itself as a PostgreSQL store would (what the rule filters is the description, whatever the store).
const postgresLike: StoreDescription = {
  kind: 'postgres',
  host: 'db.internal:5432',
  database: 'jobs',
  schema: 'sepp',
  signalsConnected: true,
  replication: 'synchronous',
  standbys: 1,
  poolSize: 10,
  maxWaitingReads: 1000,
  maxWaitingReadsPerKey: 100,
  statementTimeoutMs: 30_000,
};
/** GetServerInfo's `store` to a key that may not see where it is: the kind, the rest empty as for SQLite. */
const kindAlone = {
  kind: 'postgres',
  host: '',
  database: '',
  schema: '',
  signalsConnected: false,
  replication: '',
  standbys: 0,
  poolSize: 0,
  maxWaitingReads: 0,
  maxWaitingReadsPerKey: 0,
  statementTimeoutMs: 0,
};

test('the identity and where the store is go to an admin key for every queue, to no other key; in the console from operator up', async () => {
  const t = await startTestServer({ toml: keysToml });
  try {
    t.server.engine.store.describe = () => postgresLike;
    const shown: Record<string, { identity: boolean; store: 'where' | 'kind' }> = {};
    for (const credential of credentials.filter((c) => c.role !== null)) {
      const info = await call(t.client, t.client.getServerInfo, {}, metadataFor(credential));
      assert.ok(info.version !== '', credential.name);
      if (info.identity !== undefined) assert.equal(info.identity.pid, process.pid, credential.name);
      const where = isDeepStrictEqual(info.store, postgresLike);
      if (!where) assert.deepEqual(info.store, kindAlone, credential.name);
      shown[credential.name] = { identity: info.identity !== undefined, store: where ? 'where' : 'kind' };
    }
    const operators = { identity: true, store: 'where' };
    const others = { identity: false, store: 'kind' };
    assert.deepEqual(shown, {
      'producer key': others,
      'worker key': others,
      'admin key': operators,
      'admin key (configured as sha256)': operators,
      'producer key scoped to the queues': others,
      'worker key scoped to the queues': others,
      'admin key scoped to the queues': others,
      'worker key scoped elsewhere': others,
      'admin key scoped elsewhere': others,
    });
    // `sepp status` with a producer key names the store's kind, nothing of where it is or its
    // bounds (nor the instance); with the admin key, all of it (docs/postgres.md).
    const status = async (key: string) => {
      const run = await runCli(['status'], { env: { SEPP_SERVER: t.address, SEPP_API_KEY: key } });
      assert.equal(run.code, 0, run.stderr);
      return run.stdout;
    };
    const producer = await status(keys.producer);
    assert.match(producer, /^store {7}postgres \(where it is: shown to an admin key for every queue\)$/m);
    assert.doesNotMatch(producer, /db\.internal|^bounds|^instance/m);
    const admin = await status(keys.admin);
    assert.match(admin, /^store {7}postgres db\.internal:5432 database jobs schema sepp; /m);
    assert.match(admin, /^bounds {6}store\.pool_size 10 /m);
    assert.match(admin, /^instance {4}/m);
  } finally {
    await t.dispose();
  }
  const admin = await openTestAdmin();
  try {
    admin.t.engine.store.describe = () => postgresLike;
    const seen: Record<string, unknown> = {};
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      const { status, body } = await (await loggedIn(admin, role)).get<Overview>('/api/v1/overview');
      assert.equal(status, 200);
      seen[role] = { identity: body.server.identity?.hostName ?? null, store: body.server.store };
    }
    assert.deepEqual(seen, {
      viewer: { identity: null, store: storeKindOnly('postgres') },
      operator: { identity: 'test-host', store: postgresLike },
      admin: { identity: 'test-host', store: postgresLike },
    });
  } finally {
    admin.dispose();
  }
});
