/**
 * Who may call what: every route × every role × every kind of credential, CSRF
 * refusals, session expiry on the fake clock, login throttling, and login-off mode.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Access, honoPath, roleRank } from '../../src/admin/route-spec.ts';
import type { AdminRole } from '../../src/admin/types.ts';
import {
  enc,
  loggedIn,
  openTestAdmin,
  password,
  type TestAdmin,
  TestClient,
  testUsers,
} from '../helpers/admin.ts';

let admin: TestAdmin;
let jobId: string;

before(async () => {
  admin = await openTestAdmin();
  ({ jobId } = await admin.t.engine.enqueue({ queue: 'emails', type: 'welcome', payload: enc('{}') }));
});
after(() => admin.dispose());

function concretePath(path: string): string {
  return path
    .replace('{queue}', 'emails')
    .replace('{id}', jobId)
    .replace('{key}', 'some-key')
    .replace('{name}', 'no-such-schedule');
}

/**
 * The role each route needs, written out from docs/admin.md's role table (not
 * read from the route declarations under test): viewer sees, operator changes
 * jobs and queues and reads the audit log, admin purges, deletes all dead
 * letters and reads the configuration.
 */
const expectedAccess: Readonly<Record<string, Access>> = {
  'GET /api/openapi.json': 'public',
  'GET /api/v1/session': 'public',
  'POST /api/v1/session': 'public',
  'DELETE /api/v1/session': 'viewer',
  'GET /api/v1/overview': 'viewer',
  'GET /api/v1/history': 'viewer',
  'GET /api/v1/schedules/{name}/runs': 'viewer',
  'GET /api/v1/queues': 'viewer',
  'GET /api/v1/queues/{queue}': 'viewer',
  'GET /api/v1/queues/{queue}/push': 'viewer',
  'POST /api/v1/queues/{queue}/pause': 'operator',
  'POST /api/v1/queues/{queue}/resume': 'operator',
  'POST /api/v1/queues/{queue}/purge': 'admin',
  'DELETE /api/v1/queues/{queue}': 'admin',
  'POST /api/v1/queues/{queue}/settings': 'admin',
  'GET /api/v1/queues/{queue}/jobs': 'viewer',
  'POST /api/v1/queues/{queue}/jobs': 'operator',
  'GET /api/v1/queues/{queue}/idempotency-keys/{key}': 'viewer',
  'GET /api/v1/jobs': 'viewer',
  'GET /api/v1/search': 'viewer',
  'GET /api/v1/workers': 'viewer',
  'POST /api/v1/jobs/{id}/release-lease': 'operator',
  'GET /api/v1/jobs/{id}': 'viewer',
  'POST /api/v1/jobs/{id}/cancel': 'operator',
  'POST /api/v1/jobs/{id}/requeue': 'operator',
  'POST /api/v1/jobs/{id}/dead-letter': 'operator',
  'POST /api/v1/jobs/{id}/update': 'operator',
  'GET /api/v1/jobs/{id}/flow': 'viewer',
  'POST /api/v1/jobs/{id}/flow/cancel': 'operator',
  'GET /api/v1/batches': 'viewer',
  'GET /api/v1/batches/{id}': 'viewer',
  'POST /api/v1/batches/{id}/cancel': 'operator',
  'POST /api/v1/queues/{queue}/jobs/cancel': 'operator',
  'POST /api/v1/queues/{queue}/jobs/update': 'operator',
  'POST /api/v1/bulk/cancel': 'operator',
  'POST /api/v1/bulk/update': 'operator',
  'POST /api/v1/bulk/requeue': 'operator',
  'POST /api/v1/bulk/delete': 'admin',
  'POST /api/v1/bulk/selected/requeue': 'operator',
  'POST /api/v1/bulk/selected/cancel': 'operator',
  'POST /api/v1/bulk/selected/dead-letter': 'operator',
  'POST /api/v1/bulk/selected/delete': 'operator',
  'GET /api/v1/bulk-operations': 'viewer',
  'GET /api/v1/jobs-count': 'viewer',
  'GET /api/v1/bulk-operations/{id}': 'viewer',
  'POST /api/v1/bulk-operations/{id}/cancel': 'operator',
  'GET /api/v1/queues/{queue}/dead-letters': 'viewer',
  'GET /api/v1/queues/{queue}/top-errors': 'viewer',
  'GET /api/v1/queues/{queue}/dead-letters/{jobId}/waiting': 'viewer',
  'POST /api/v1/queues/{queue}/dead-letters/requeue': 'operator',
  'POST /api/v1/queues/{queue}/dead-letters/delete': 'operator',
  'POST /api/v1/queues/{queue}/dead-letters/requeue-all': 'operator',
  'POST /api/v1/queues/{queue}/dead-letters/delete-all': 'admin',
  'GET /api/v1/schedules': 'viewer',
  'GET /api/v1/schedules/{name}': 'viewer',
  'POST /api/v1/schedules/{name}/pause': 'operator',
  'POST /api/v1/schedules/{name}/resume': 'operator',
  'POST /api/v1/schedules/{name}/trigger': 'operator',
  'GET /api/v1/audit': 'operator',
  'GET /api/v1/config': 'admin',
};

type Credential = 'none' | 'forged cookie' | AdminRole;
const credentials: Credential[] = ['none', 'forged cookie', 'viewer', 'operator', 'admin'];

async function clientFor(credential: Credential): Promise<TestClient> {
  if (credential !== 'none' && credential !== 'forged cookie') return loggedIn(admin, credential);
  const client = new TestClient(admin.app);
  // A cookie of the right shape that no login issued.
  if (credential === 'forged cookie') client.cookie = `sepp_session=${'A'.repeat(43)}`;
  return client;
}

test('the table names every route the app serves under /api, and nothing else', () => {
  const served = admin.app.routes
    .filter((r) => r.path.startsWith('/api/') && !r.path.includes('*') && r.method !== 'ALL')
    .map((r) => `${r.method} ${r.path}`);
  const tabled = Object.keys(expectedAccess).map((route) => {
    const [method, path] = route.split(' ');
    return `${method} ${honoPath(path!)}`;
  });
  assert.deepEqual([...new Set(served)].sort(), tabled.sort());
});

test('every route enforces its role for every credential', async () => {
  const outcomes: string[] = [];
  for (const [route, access] of Object.entries(expectedAccess)) {
    const [method, path] = route.split(' ') as [string, string];
    for (const credential of credentials) {
      const client = await clientFor(credential);
      const reply = await client.request(method, concretePath(path), method === 'GET' ? undefined : {});
      let expected: 'allowed' | 401 | 403;
      if (access === 'public') expected = 'allowed';
      else if (credential === 'none' || credential === 'forged cookie') expected = 401;
      else expected = roleRank[credential] >= roleRank[access] ? 'allowed' : 403;
      const got = reply.status === 401 || reply.status === 403 ? reply.status : 'allowed';
      if (got !== expected) {
        outcomes.push(
          `${route} as ${credential}: expected ${expected}, got ${reply.status} ${JSON.stringify(reply.body)}`,
        );
      }
      if (got !== 'allowed') {
        assert.equal(reply.body.error?.code, got === 401 ? 'unauthenticated' : 'permission_denied');
      }
    }
  }
  assert.deepEqual(outcomes, []);
});

test('mutations from another origin, or without the CSRF token, are refused', async () => {
  const operator = await loggedIn(admin, 'operator');
  const path = '/api/v1/queues/emails/pause';
  const refused = async (headers: Record<string, string>, why: RegExp) => {
    const reply = await operator.request('POST', path, {}, headers);
    assert.equal(reply.status, 403, JSON.stringify(reply.body));
    assert.equal(reply.body.error?.code, 'permission_denied');
    assert.match(reply.body.error?.message ?? '', why);
  };
  await refused({ origin: 'https://evil.example' }, /cross-origin/);
  await refused({ origin: 'null' }, /cross-origin/);
  await refused({ 'sec-fetch-site': 'cross-site' }, /cross-site/);
  await refused({ 'sec-fetch-site': 'same-site' }, /cross-site/);
  await refused({ 'x-csrf-token': '' }, /X-CSRF-Token/);
  await refused({ 'x-csrf-token': 'x'.repeat(43) }, /X-CSRF-Token/);
  // A token from another session does not work either.
  const other = await loggedIn(admin, 'operator');
  await refused({ 'x-csrf-token': other.csrfToken! }, /X-CSRF-Token/);

  // Same origin with its token: allowed (also with no Origin at all, as curl sends).
  assert.equal((await operator.request('POST', path, {}, { 'sec-fetch-site': 'same-origin' })).status, 200);
  assert.equal(
    (await operator.request('POST', '/api/v1/queues/emails/resume', {}, { origin: '' })).status,
    200,
  );
});

test('login is same-origin only and JSON only', async () => {
  const client = new TestClient(admin.app);
  const cross = await client.request(
    'POST',
    '/api/v1/session',
    { user: 'admin', password },
    { origin: 'https://evil.example' },
  );
  assert.equal(cross.status, 403);
  const form = await client.request(
    'POST',
    '/api/v1/session',
    `user=admin&password=${encodeURIComponent(password)}`,
    {
      'content-type': 'application/x-www-form-urlencoded',
    },
  );
  assert.equal(form.status, 400);
  assert.equal(client.cookie, undefined);
});

test('the session cookie is HttpOnly and SameSite=Strict, Secure and __Host- under TLS', async () => {
  const plain = await new TestClient(admin.app).request('POST', '/api/v1/session', {
    user: 'viewer',
    password,
  });
  const cookie = plain.headers.get('set-cookie') ?? '';
  assert.match(cookie, /^sepp_session=[A-Za-z0-9_-]{43};/);
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Strict/);
  assert.doesNotMatch(cookie, /Secure/);
  assert.doesNotMatch(JSON.stringify(plain.body), /sepp_session|\$scrypt/);

  const tlsAdmin = await openTestAdmin({ tls: true });
  try {
    const client = new TestClient(tlsAdmin.app);
    client.origin = 'https://localhost';
    const reply = await client.login('viewer');
    assert.equal(reply.status, 200);
    assert.match(
      reply.headers.get('set-cookie') ?? '',
      /^__Host-sepp_session=.*; Path=\/; HttpOnly; Secure; SameSite=Strict/,
    );
    assert.match(reply.headers.get('strict-transport-security') ?? '', /max-age=/);
  } finally {
    tlsAdmin.dispose();
  }
});

test('a session expires after its TTL; logout ends it at once', async () => {
  const shortAdmin = await openTestAdmin({ sessionTtlMs: 60_000 });
  try {
    const viewer = await loggedIn(shortAdmin, 'viewer');
    assert.equal((await viewer.get('/api/v1/queues')).status, 200);
    shortAdmin.t.clock.advance(59_999);
    assert.equal((await viewer.get('/api/v1/queues')).status, 200);
    shortAdmin.t.clock.advance(1);
    const expired = await viewer.get('/api/v1/queues');
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error?.code, 'unauthenticated');
    assert.deepEqual((await viewer.get('/api/v1/session')).body.authenticated, false);

    const other = await loggedIn(shortAdmin, 'viewer');
    const cookie = other.cookie;
    assert.equal((await other.request('DELETE', '/api/v1/session')).status, 200);
    other.cookie = cookie; // replaying the old cookie does not bring the session back
    assert.equal((await other.get('/api/v1/queues')).status, 401);
    const actions = (await shortAdmin.t.engine.listAudit({})).items.map((e) => e.action);
    assert.deepEqual(actions.slice(0, 2), ['session.logout', 'session.login']);
  } finally {
    shortAdmin.dispose();
  }
});

test('a user removed from the config loses access; a demoted one loses the role', async () => {
  const users = [...(await testUsers())];
  const a = await openTestAdmin({ users });
  try {
    const operator = await loggedIn(a, 'operator');
    const index = users.findIndex((u) => u.name === 'operator');
    users[index] = { ...users[index]!, role: 'viewer' };
    assert.equal((await operator.post('/api/v1/queues/emails/pause')).status, 403);
    users.splice(index, 1);
    assert.equal((await operator.get('/api/v1/queues')).status, 401);
  } finally {
    a.dispose();
  }
});

test('failed logins lock the client out for a growing time; a success clears the count', async () => {
  const a = await openTestAdmin();
  try {
    const client = new TestClient(a.app);
    for (let i = 0; i < 5; i++) {
      const reply = await client.login('operator', 'wrong');
      assert.equal(reply.status, 401);
      assert.equal(reply.body.error?.message, 'wrong user name or password');
    }
    // The sixth failure starts a 1 s lockout; then even the right password is refused unchecked.
    assert.equal((await client.login('operator', 'wrong')).status, 401);
    const locked = await client.login('operator');
    assert.equal(locked.status, 429);
    assert.equal(locked.body.error?.code, 'resource_exhausted');
    assert.equal(locked.headers.get('retry-after'), '1');
    a.t.clock.advance(1000);
    assert.equal((await client.login('operator', 'wrong')).status, 401);
    const longer = await client.login('operator');
    assert.equal(longer.headers.get('retry-after'), '2');
    // Another user from the same client is not locked (until the per-client limit).
    assert.equal((await client.login('viewer')).status, 200);
    // Another client is not locked.
    const elsewhere = new TestClient(a.app);
    elsewhere.env = { incoming: { socket: { remoteAddress: '10.9.9.9' } } };
    assert.equal((await elsewhere.login('operator')).status, 200);
    a.t.clock.advance(2000);
    assert.equal((await client.login('operator')).status, 200);
    assert.equal((await client.login('operator', 'wrong')).status, 401);
    assert.equal((await client.login('operator')).status, 200, 'the success cleared the count');

    const failed = (await a.t.engine.listAudit({ action: 'session.login_failed' })).items;
    assert.ok(failed.length >= 6);
    assert.deepEqual(failed[0]?.details, { client: '10.0.0.1' });
    assert.doesNotMatch(JSON.stringify(failed), /wrong|correct horse/);
  } finally {
    a.dispose();
  }
});

test('one client guessing many user names is locked out too', async () => {
  const a = await openTestAdmin();
  try {
    const client = new TestClient(a.app);
    for (let i = 0; i < 21; i++) assert.equal((await client.login(`user${i}`, 'x')).status, 401);
    assert.equal((await client.login('admin')).status, 429);
  } finally {
    a.dispose();
  }
});

test('login off (loopback, no users): anonymous admin, still CSRF-protected, loopback Host only', async () => {
  const a = await openTestAdmin({ open: true });
  try {
    const client = new TestClient(a.app);
    assert.equal((await client.get('/api/v1/queues')).status, 200);
    const noSession = await client.post('/api/v1/queues/emails/pause');
    assert.equal(noSession.status, 403);
    const session = await client.refreshSession();
    assert.deepEqual(
      { ...session.body, csrfToken: typeof session.body.csrfToken },
      {
        authenticated: true,
        open: true,
        user: 'anonymous',
        role: 'admin',
        csrfToken: 'string',
        expiresAtMs: session.body.expiresAtMs,
      },
    );
    await a.t.engine.enqueue({ queue: 'emails', type: 't', payload: enc('x') });
    assert.equal((await client.post('/api/v1/queues/emails/pause')).status, 200);
    assert.equal((await a.t.engine.listAudit({})).items[0]?.actor, 'anonymous');
    assert.equal(
      (await client.request('POST', '/api/v1/queues/emails/resume', {}, { origin: 'http://evil.example' }))
        .status,
      403,
    );
    const rebinding = await client.request('GET', '/api/v1/queues', undefined, { host: 'evil.example' });
    assert.equal(rebinding.status, 403);
    assert.equal(
      (await client.request('GET', '/api/v1/queues', undefined, { host: '127.0.0.1:9465' })).status,
      200,
    );
    assert.equal((await client.login('admin')).status, 409);
  } finally {
    a.dispose();
  }
  const insecure = await openTestAdmin({ open: true, deps: { openToAnyHost: true } });
  try {
    const client = new TestClient(insecure.app);
    assert.equal(
      (await client.request('GET', '/api/v1/queues', undefined, { host: 'sepp.internal:9465' })).status,
      200,
    );
  } finally {
    insecure.dispose();
  }
});
