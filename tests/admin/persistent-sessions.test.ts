/**
 * Admin sessions live in the database (hashed, with their expiry): they
 * survive a restart and a reload, so a rolling restart logs nobody out; a
 * user removed from the config by a reload, or given another password (by a
 * reload or while the server was down), loses their sessions at once (in
 * memory and on disk), and a demotion shows in the session info at once; a
 * logout is on disk before it is answered; the database never holds a usable
 * cookie nor a CSRF token (issue 29, items 7 and 13).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SessionInfo } from '../../src/admin/api-types.ts';
import { hashPassword } from '../../src/admin/password.ts';
import { storedSessions } from '../../src/admin/stored-sessions.ts';
import { password, testScrypt } from '../helpers/admin.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const user = (name: string, role: string, hash: string) =>
  `[[admin.users]]\nname = "${name}"\nrole = "${role}"\npassword_hash = "${hash}"\n`;

/** Logs in over HTTP as a script would; returns the Cookie header to send. */
async function logIn(t: TestServer, name: string): Promise<string> {
  const response = await fetch(`${adminUrl(t)}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: name, password }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const cookie = response.headers.get('set-cookie')?.split(';')[0] ?? '';
  assert.ok(cookie.startsWith('sepp_session='));
  return cookie;
}

/** GET /api/v1/session with this cookie. */
async function sessionInfo(t: TestServer, cookie: string): Promise<SessionInfo> {
  const response = await fetch(`${adminUrl(t)}/api/v1/session`, { headers: { cookie } });
  assert.equal(response.status, 200);
  return (await response.json()) as SessionInfo;
}

/** The text of the database files (the WAL too): what a copy of the data directory shows. */
function databaseText(t: TestServer): string {
  return ['sepp.db', 'sepp.db-wal']
    .map((f) => {
      try {
        return readFileSync(join(t.dataDir, f)).toString('latin1');
      } catch {
        return '';
      }
    })
    .join('');
}

const adminUrl = (t: TestServer) => `http://127.0.0.1:${t.server.adminPort}`;
const statusWith = async (t: TestServer, cookie: string) =>
  (await fetch(`${adminUrl(t)}/api/v1/queues`, { headers: { cookie } })).status;

describe('admin sessions on disk', () => {
  let t: TestServer;
  let hash: string;
  before(async () => {
    hash = await hashPassword(password, testScrypt);
    t = await startTestServer({ toml: user('alice', 'admin', hash) + user('bob', 'viewer', hash) });
  });
  after(() => t.dispose());

  test('a session survives a restart and a reload; the database holds only its hash', async () => {
    const alice = await logIn(t, 'alice');
    const id = alice.slice('sepp_session='.length);
    t = await t.restart();
    assert.equal(await statusWith(t, alice), 200, 'still logged in after a restart');
    const report = await t.server.reload({ actor: 'test' });
    assert.deepEqual(report.problems, []);
    assert.equal(await statusWith(t, alice), 200, 'still logged in after a reload');

    // The server runs on the system clock: what is live now is live to it.
    const rows = await storedSessions(t.server.engine.store, () => Date.now()).live();
    assert.ok(rows.some((r) => r.user === 'alice'));
    assert.ok(rows.every((r) => r.idSha256 !== id));
    assert.ok(!databaseText(t).includes(id), 'the cookie is nowhere in the database files');
  });

  test('the CSRF token is stored as a hash, and the same token works again after a restart', async () => {
    const alice = await logIn(t, 'alice');
    const { csrfToken } = await sessionInfo(t, alice);
    assert.ok(csrfToken !== null && csrfToken.length >= 32);
    assert.ok(!databaseText(t).includes(csrfToken), 'the token is nowhere in the database files');
    const rows = await storedSessions(t.server.engine.store, () => Date.now()).live();
    assert.ok(rows.every((r) => r.csrfSha256 !== csrfToken));
    t = await t.restart();
    assert.equal((await sessionInfo(t, alice)).csrfToken, csrfToken, 'handed out again after a restart');
    const pause = (token: string) =>
      fetch(`${adminUrl(t)}/api/v1/queues/q1/pause`, {
        method: 'POST',
        headers: { cookie: alice, 'x-csrf-token': token, origin: adminUrl(t) },
      });
    // One character changed (to another one: a token that ends in A must not stay itself).
    const wrongToken = `${csrfToken.slice(0, -1)}${csrfToken.endsWith('A') ? 'B' : 'A'}`;
    assert.equal((await pause(wrongToken)).status, 403, 'a wrong token is refused');
    const paused = await pause(csrfToken);
    assert.notEqual(paused.status, 403, await paused.clone().text());
  });

  test("a password change by a reload ends that user's sessions; a demotion shows at once", async () => {
    const alice = await logIn(t, 'alice');
    const bob = await logIn(t, 'bob');
    const newHash = await hashPassword('another password', testScrypt);
    t.writeConfig(user('alice', 'viewer', hash) + user('bob', 'viewer', newHash));
    const report = await t.server.reload({ actor: 'test' });
    assert.deepEqual(report.problems, []);
    assert.equal(await statusWith(t, bob), 401, "bob's session ended with his old password");
    const stored = await storedSessions(t.server.engine.store, () => Date.now()).live();
    assert.ok(!stored.some((r) => r.user === 'bob'), 'and is gone from disk');
    const info = await sessionInfo(t, alice);
    assert.equal(info.role, 'viewer', 'the session info says what the config says now');
    assert.equal(await statusWith(t, alice), 200, "alice's password did not change: she stays");
    t.writeConfig(user('alice', 'admin', hash) + user('bob', 'viewer', hash));
    // Raising a role takes an explicit request (tests/security/reload-rights.test.ts).
    assert.equal((await t.server.reload({ actor: 'test', allowSecurityDowngrade: true })).applied, true);
    assert.equal((await sessionInfo(t, alice)).role, 'admin');
  });

  test("a password changed while the server was down ends that user's sessions at the start", async () => {
    const bob = await logIn(t, 'bob');
    const alice = await logIn(t, 'alice');
    t.writeConfig(
      user('alice', 'admin', hash) + user('bob', 'viewer', await hashPassword('new', testScrypt)),
    );
    t = await t.restart();
    assert.equal(await statusWith(t, bob), 401);
    assert.equal(await statusWith(t, alice), 200);
    const stored = await storedSessions(t.server.engine.store, () => Date.now()).live();
    assert.ok(!stored.some((r) => r.user === 'bob'));
    t.writeConfig(user('alice', 'admin', hash) + user('bob', 'viewer', hash));
    await t.server.reload({ actor: 'test' });
  });

  test('a user removed by a reload loses their sessions at once, and the others keep theirs', async () => {
    const alice = await logIn(t, 'alice');
    const bob = await logIn(t, 'bob');
    t.writeConfig(user('alice', 'admin', hash));
    const report = await t.server.reload({ actor: 'test' });
    assert.ok(report.changed.includes('admin.users (removed bob)'), report.changed.join());
    assert.equal(await statusWith(t, bob), 401, "bob's session ended");
    assert.equal(await statusWith(t, alice), 200);
    const stored = await storedSessions(t.server.engine.store, () => Date.now()).live();
    assert.ok(!stored.some((r) => r.user === 'bob'), 'and is gone from disk');
    t.writeConfig(user('alice', 'admin', hash) + user('bob', 'viewer', hash));
    await t.server.reload({ actor: 'test' });
    assert.equal(await statusWith(t, bob), 401, 'adding the user back does not revive the session');
    assert.equal(await statusWith(t, await logIn(t, 'bob')), 200, 'a new user logs in after a reload');
  });

  test('a logout is on disk, so a restart does not bring the session back', async () => {
    const alice = await logIn(t, 'alice');
    const session = await (
      await fetch(`${adminUrl(t)}/api/v1/session`, { headers: { cookie: alice } })
    ).json();
    const out = await fetch(`${adminUrl(t)}/api/v1/session`, {
      method: 'DELETE',
      headers: { cookie: alice, 'x-csrf-token': (session as { csrfToken: string }).csrfToken },
    });
    assert.equal(out.status, 200);
    t = await t.restart();
    assert.equal(await statusWith(t, alice), 401);
  });
});
