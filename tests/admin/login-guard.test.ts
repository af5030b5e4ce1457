/**
 * Logins under attack (issue 14, items 11, 12 and 15): attempts are counted
 * before their password is checked, so a concurrent burst cannot slip past the
 * lockout; password checks are capped and queued fairly, with addresses that
 * have logged in before going first; a user name guessed from many addresses
 * is locked for new addresses; unknown names cost what users' names cost; a
 * typed name that is no user is never logged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultLoginPolicy } from '../../src/admin/login-guard.ts';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../src/admin/password.ts';
import type { AdminUser } from '../../src/admin/types.ts';
import {
  openTestAdmin,
  password,
  type TestAdmin,
  type TestAdminOptions,
  TestClient,
  testScrypt,
} from '../helpers/admin.ts';
import { registerSecret } from '../helpers/secret-log.ts';

/**
 * The password check, counted: which passwords started (in order), against which hashes, how many
 * ran at once. While `hold` is set, checks that start wait for it.
 */
function countedChecks() {
  const checks = {
    started: [] as string[],
    stored: [] as string[],
    running: 0,
    peak: 0,
    hold: undefined as Promise<void> | undefined,
  };
  const verify = async (given: string, stored: string): Promise<boolean> => {
    checks.started.push(given);
    checks.stored.push(stored);
    checks.running++;
    checks.peak = Math.max(checks.peak, checks.running);
    try {
      await checks.hold;
      return await verifyPassword(given, stored);
    } finally {
      checks.running--;
    }
  };
  return { checks, verify };
}

type Checks = ReturnType<typeof countedChecks>['checks'];

/** An admin app whose password checks are counted; disposed after `body`. */
async function withCountedChecks(
  body: (a: TestAdmin, checks: Checks) => Promise<void>,
  options: TestAdminOptions = {},
): Promise<void> {
  const { checks, verify } = countedChecks();
  const a = await openTestAdmin({ ...options, deps: { ...options.deps, verifyPassword: verify } });
  try {
    await body(a, checks);
  } finally {
    a.dispose();
  }
}

function clientAt(admin: TestAdmin, address: string): TestClient {
  const client = new TestClient(admin.app);
  client.env = { incoming: { socket: { remoteAddress: address } } };
  return client;
}

/** Turns the event loop until `done` holds (app.request does no I/O, so this takes a few turns). */
async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; !done(); turn++) {
    if (turn > 10_000) assert.fail('the condition never came true');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Makes checks that start from now on wait; returns the function that lets them go. */
function holdChecks(checks: Checks): () => void {
  const release = deferred();
  checks.hold = release.promise;
  checks.started.length = 0;
  return release.resolve;
}

/** `count` wrong logins at once, each from its own address `prefix.i` for its own unknown name. */
function wrongLogins(a: TestAdmin, prefix: string, count: number, given: string) {
  return Array.from({ length: count }, (_, i) => clientAt(a, `${prefix}.${i}`).login(`nobody-${i}`, given));
}

/** Counts the promises it tracks that have settled. */
function counter() {
  const state = {
    count: 0,
    track: <T>(promise: Promise<T>): Promise<T> =>
      promise.finally(() => {
        state.count++;
      }),
  };
  return state;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

test('a burst of 100 wrong logins and the right one: only the free attempts are checked, the right one is refused', async () => {
  // The throttle alone (no cap on checks per address): the 5 free failures and the one that locks.
  const loginPolicy = {
    ...defaultLoginPolicy,
    checks: { maxRunning: 2, maxWaiting: 1000, maxPerClient: 1000 },
  };
  await withCountedChecks(
    async (a, checks) => {
      const client = clientAt(a, '10.0.0.1');
      const wrong = Array.from({ length: 100 }, (_, i) => client.login('operator', `wrong-${i}`));
      const replies = await Promise.all([...wrong, client.login('operator')]);
      assert.equal(checks.started.length, 6, 'checked: the 5 free failures and the sixth');
      assert.equal(replies.filter((r) => r.status === 401).length, 6);
      assert.equal(replies.filter((r) => r.status === 429).length, 95);
      const last = replies[100];
      assert.equal(last?.status, 429, 'the right password is refused while the client is locked out');
      assert.match(last?.body.error?.message ?? '', /too many failed logins; try again in 1 s/);
      assert.ok(!checks.started.includes(password), 'the right password was never checked');
      a.t.clock.advance(1000);
      assert.equal((await client.login('operator')).status, 200, 'after the lockout the user gets in');
    },
    { deps: { loginPolicy } },
  );
});

test('with the default policy the same burst checks at most 4 passwords (the per-address cap)', async () => {
  await withCountedChecks(async (a, checks) => {
    const client = clientAt(a, '10.0.0.1');
    // Checks wait until every refusal is out, so none can finish early and make room for another.
    const release = deferred();
    checks.hold = release.promise;
    const answered = counter();
    const replies = Promise.all(
      [
        ...Array.from({ length: 100 }, (_, i) => client.login('operator', `wrong-${i}`)),
        client.login('operator'),
      ].map(answered.track),
    );
    await until(() => answered.count === 101 - defaultLoginPolicy.checks.maxPerClient);
    release.resolve();
    const all = await replies;
    assert.equal(checks.started.length, defaultLoginPolicy.checks.maxPerClient);
    assert.ok(!checks.started.includes(password));
    assert.equal(all[100]?.status, 429);
    assert.match(all[100]?.body.error?.message ?? '', /too many logins are being checked at once/);
    assert.equal(all[100]?.headers.get('retry-after'), '1');
    assert.ok(checks.peak <= defaultLoginPolicy.checks.maxRunning, `peak ${checks.peak}`);
  });
});

test('password checks are capped: 100 addresses at once never run more than 2 checks; beyond the waiting lane, refused', async () => {
  // The default lane holds 1024; a short one shows what happens when it is full.
  const checksPolicy = { ...defaultLoginPolicy.checks, maxWaiting: 64 };
  await withCountedChecks(
    async (a, checks) => {
      const { maxRunning, maxWaiting } = checksPolicy;
      const release = deferred();
      checks.hold = release.promise;
      const answered = counter();
      const pending = Promise.all(
        // Distinct names too, so that no lockout refuses any: only the cap does.
        Array.from({ length: 100 }, (_, i) => clientAt(a, `10.1.0.${i}`).login(`nobody-${i}`, 'wrong')).map(
          answered.track,
        ),
      );
      await until(() => answered.count === 100 - maxRunning - maxWaiting);
      assert.deepEqual(a.loginGuard.checks(), { running: maxRunning, waiting: maxWaiting });
      release.resolve();
      const replies = await pending;
      assert.ok(checks.peak <= maxRunning, `peak ${checks.peak}`);
      assert.equal(checks.started.length, maxRunning + maxWaiting);
      assert.equal(replies.filter((r) => r.status === 401).length, checks.started.length);
      const refused = replies.filter((r) => r.status === 429);
      assert.equal(refused.length, 100 - checks.started.length);
      for (const r of refused) assert.match(r.body.error?.message ?? '', /too many logins are being checked/);
      assert.equal(defaultLoginPolicy.checks.maxRunning, 2);
    },
    { deps: { loginPolicy: { ...defaultLoginPolicy, checks: checksPolicy } } },
  );
});

test('during a flood of wrong logins, an address that logged in before is checked next; a new one waits its turn', async () => {
  await withCountedChecks(async (a, checks) => {
    const usual = clientAt(a, '10.0.0.7');
    assert.equal((await usual.login('admin')).status, 200);
    const release = holdChecks(checks);
    const flood = wrongLogins(a, '10.2.0', 60, 'wrong');
    await until(() => a.loginGuard.checks().waiting === 58);
    const mine = usual.login('admin');
    await until(() => a.loginGuard.checks().waiting === 59);
    const stranger = clientAt(a, '10.3.0.1').login('viewer');
    await until(() => a.loginGuard.checks().waiting === 60);
    release();
    const [admin, viewer] = await Promise.all([mine, stranger, ...flood]);
    assert.equal(admin?.status, 200);
    assert.equal(viewer?.status, 200);
    const { maxRunning } = defaultLoginPolicy.checks;
    // Only the checks already running came before the known address's.
    assert.equal(checks.started.indexOf(password), maxRunning, checks.started.join(' '));
    // The flood's addresses were new too: the stranger waited behind their first attempts.
    assert.equal(checks.started.lastIndexOf(password), 60 + 1);
  });
});

test('during a flood from addresses that have failed before, a new address is checked next', async () => {
  await withCountedChecks(async (a, checks) => {
    // Twenty addresses fail once each: they are no longer new.
    for (const reply of await Promise.all(wrongLogins(a, '10.9.0', 20, 'wrong')))
      assert.equal(reply.status, 401);
    const release = holdChecks(checks);
    const flood = wrongLogins(a, '10.9.0', 20, 'wrong-again');
    await until(() => a.loginGuard.checks().waiting === 18);
    const newcomer = clientAt(a, '10.9.1.1').login('viewer');
    await until(() => a.loginGuard.checks().waiting === 19);
    release();
    const [viewer] = await Promise.all([newcomer, ...flood]);
    assert.equal(viewer?.status, 200);
    assert.equal(
      checks.started.indexOf(password),
      defaultLoginPolicy.checks.maxRunning,
      checks.started.join(' '),
    );
  });
});

test('one user name guessed from many addresses is locked for new addresses, not for one the user logged in from', async () => {
  await withCountedChecks(async (a, checks) => {
    const usual = clientAt(a, '10.0.0.9');
    assert.equal((await usual.login('operator')).status, 200);
    const free = defaultLoginPolicy.perUser.freeFailures;
    // One guess per address: no address reaches its own limit.
    for (let i = 0; i <= free; i++) {
      assert.equal((await clientAt(a, `10.4.0.${i}`).login('operator', 'wrong')).status, 401, `guess ${i}`);
    }
    const checked = checks.started.length;
    const locked = await clientAt(a, '10.4.1.1').login('operator');
    assert.equal(locked.status, 429, 'the right password from a new address is refused');
    assert.match(locked.body.error?.message ?? '', /too many failed logins/);
    assert.equal(checks.started.length, checked, 'and not checked');
    assert.equal((await clientAt(a, '10.4.1.2').login('viewer')).status, 200, 'other users are not affected');
    assert.equal((await usual.login('operator')).status, 200, 'the usual address still gets in');
  });
});

test('unknown user names are checked with the scrypt settings of some user, the same for the same name', async () => {
  const users: AdminUser[] = await Promise.all(
    (['viewer', 'operator', 'admin'] as const).map(async (role, i) => ({
      name: role,
      role,
      // Settings told apart by r at the lowest ln: the property is whose settings a check
      // takes, and 45 checks at ln=10..12 (r=8) cost ~8× the CPU of these.
      passwordHash: await hashPassword(password, { ...testScrypt, r: 1 + i }),
    })),
  );
  const costOf = (stored: string | undefined) => parsePasswordHash(stored ?? '')?.r;
  await withCountedChecks(
    async (a, checks) => {
      const seen = new Map<string, number | undefined>();
      for (let i = 0; i < 40; i++) {
        // Each from its own address, so that no lockout gets in the way.
        assert.equal((await clientAt(a, `10.5.0.${i}`).login(`nobody-${i}`, 'x')).status, 401);
        seen.set(`nobody-${i}`, costOf(checks.stored.at(-1)));
      }
      const costs = new Set(seen.values());
      assert.ok(costs.size >= 2, `unknown names all cost r=${[...costs]}: the first user's settings`);
      for (const cost of costs) assert.ok([1, 2, 3].includes(cost ?? 0), `r=${cost}`);
      for (let i = 0; i < 5; i++) {
        await clientAt(a, `10.6.0.${i}`).login(`nobody-${i}`, 'y');
        assert.equal(costOf(checks.stored.at(-1)), seen.get(`nobody-${i}`), 'the same name, the same cost');
      }
    },
    { users },
  );
});

test('a failed login logs and audits no typed user name that is not a user (it may be a password)', async () => {
  const lines: string[] = [];
  const a = await openTestAdmin({
    deps: {
      log: { log: (level, message, fields) => lines.push(JSON.stringify({ level, message, ...fields })) },
    },
  });
  const typed = 'Tr0ub4dor&3-in-the-wrong-field';
  registerSecret('a password typed as a user name', typed);
  try {
    const client = clientAt(a, '10.7.0.1');
    assert.equal((await client.login(typed, 'x')).status, 401);
    assert.equal((await client.login(typed, 'y')).status, 401);
    assert.equal((await client.login('operator', 'wrong')).status, 401);
    // The failures' audit entries are written without being awaited; a login's is awaited, after them.
    assert.equal((await clientAt(a, '10.7.0.2').login('viewer')).status, 200);
    const failed = lines.filter((l) => l.includes('admin.login_failed'));
    assert.equal(failed.length, 3);
    for (const line of failed) assert.ok(!line.includes(typed), line);
    const [first, second, known] = failed.map((l) => JSON.parse(l) as Record<string, string>);
    assert.equal(first?.user, '(unknown)');
    assert.match(first?.name_tag ?? '', /^[0-9a-f]{12}$/);
    assert.equal(second?.name_tag, first?.name_tag, 'one name, one tag: repeated guesses can be told apart');
    assert.equal(known?.user, 'operator', 'a real user name is not secret');
    const audit = (await a.t.engine.listAudit({ action: 'session.login_failed' })).items;
    assert.equal(audit.length, 3);
    assert.equal(lines.filter((l) => l.includes(typed)).length, 0);
    assert.doesNotMatch(JSON.stringify(audit), /Tr0ub4dor/);
    assert.ok(audit.some((e) => e.actor === '(unknown)' && e.target === 'user:(unknown)'));
  } finally {
    a.dispose();
  }
});

test('the login route refuses a body over 4 KiB before reading it', async () => {
  const a = await openTestAdmin();
  try {
    const client = clientAt(a, '10.8.0.1');
    const reply = await client.post('/api/v1/session', { user: 'operator', password: 'p'.repeat(5000) });
    assert.equal(reply.status, 413);
    assert.equal(reply.body.error?.code, 'payload_too_large');
    assert.match(reply.body.error?.message ?? '', /larger than 4096 bytes/);
    assert.equal((await client.login('operator')).status, 200, 'an ordinary login still fits');
  } finally {
    a.dispose();
  }
});
