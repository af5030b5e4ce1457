/**
 * POST /api/v1/queues/{queue}/settings: an admin changes a queue's settings
 * from the UI. Each bad value gets exactly the message the config file would
 * get for it (same key, same words); a request with any bad value changes
 * nothing; a good one shows the new value with its source and the file's
 * value, and is in the audit log with the old and new values. Each value
 * says what it does where the number does not (a 0 that means "no limit", a
 * burst derived from the rate).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { formatProblem, queueSettingsChecker } from '../../src/config/index.ts';
import { loadToml, problemsOf } from '../config/helpers.ts';
import { enc, type Loose, loggedIn, openTestAdmin, type TestAdmin } from '../helpers/admin.ts';

let admin: TestAdmin;
before(async () => {
  admin = await openTestAdmin({
    engine: {
      deps: { checkQueueSettings: queueSettingsChecker(loadToml('')) },
      options: { queues: { emails: { maxAttempts: 7 } } },
    },
  });
  await admin.t.engine.enqueue({ queue: 'emails', type: 'welcome', payload: enc('{}') });
});
after(() => admin.dispose());

interface SettingValue {
  key: string;
  value: unknown;
  text: string;
  source: string;
  fileValue: unknown;
  fileText: string;
  meaning: string | null;
  derivedFrom: string | null;
}
type QueueBody = Loose & { settingValues: SettingValue[] };

/** Bad values as the form sends them, and the same values written in [queues.emails]. */
const badValues: readonly { form: Record<string, unknown>; toml: string }[] = [
  { form: { max_attempts: '0' }, toml: 'max_attempts = 0' },
  { form: { max_attempts: 'ten' }, toml: 'max_attempts = "ten"' },
  { form: { backoff_base_ms: '1h30m' }, toml: 'backoff_base_ms = "1h30m"' },
  { form: { max_payload_bytes: '5MB' }, toml: 'max_payload_bytes = "5MB"' },
  { form: { backoff_jitter: '1.5' }, toml: 'backoff_jitter = 1.5' },
  { form: { allowed_types: '["send", "send"]' }, toml: 'allowed_types = ["send", "send"]' },
  { form: { allowed_types: ['no spaces'] }, toml: 'allowed_types = ["no spaces"]' },
  { form: { default_lease_ms: '13h' }, toml: 'default_lease_ms = "13h"' },
  { form: { backoff_cap_ms: '100ms' }, toml: 'backoff_cap_ms = "100ms"' },
  { form: { max_atempts: '3' }, toml: 'max_atempts = 3' },
];

test('every bad value gets the config file message, and changes nothing', async () => {
  const client = await loggedIn(admin, 'admin');
  const wrong: string[] = [];
  for (const { form, toml } of badValues) {
    const expected = problemsOf(`[queues.emails]\n${toml}\n`).map(formatProblem).join('; ');
    const reply = await client.post('/api/v1/queues/emails/settings', { set: { max_depth: '5', ...form } });
    if (reply.status !== 400 || reply.body.error?.message !== expected) {
      wrong.push(`${JSON.stringify(form)}: ${reply.status} ${reply.body.error?.message}\n  want ${expected}`);
    }
  }
  assert.deepEqual(wrong, []);
  const queue = (await admin.t.engine.listQueues())[0];
  assert.equal(queue?.settings.maxDepth, 0, 'the valid max_depth beside each bad value was not applied');
  assert.equal((await admin.t.engine.listAudit({ action: 'queue.settings.set' })).items.length, 0);
});

test('issue 36: text that is no number is not told to drop quotes it does not have', async () => {
  const client = await loggedIn(admin, 'admin');
  const reply = await client.post('/api/v1/queues/emails/settings', {
    set: { max_attempts: 'abc', backoff_jitter: 'half' },
  });
  assert.equal(reply.status, 400);
  const message = reply.body.error?.message ?? '';
  assert.doesNotMatch(message, /without quotes/, message);
  assert.match(
    message,
    /queues\.emails\.max_attempts: "abc" is not a whole number; set a number between 1 and/,
  );
  assert.match(message, /queues\.emails\.backoff_jitter: "half" is not a number/);
  // In the file, a quoted number still gets the advice; quoted text does not.
  assert.deepEqual(
    problemsOf('[queues.emails]\nmax_attempts = "12"\nmax_depth = "lots"\n').map(formatProblem),
    [
      'queues.emails.max_attempts: "12" is a string; write 12 without quotes',
      'queues.emails.max_depth: "lots" is not a whole number; set a number between 0 and 9007199254740991',
    ],
  );
});

test('a good change shows value, source and file value, and is audited with old and new values', async () => {
  const client = await loggedIn(admin, 'admin');
  const reply = await client.post<QueueBody>('/api/v1/queues/emails/settings', {
    set: { max_attempts: '10', backoff_base_ms: '2s', allowed_types: '["welcome"]' },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const setting = (key: string) => reply.body.settingValues.find((s) => s.key === key);
  assert.deepEqual(setting('max_attempts'), {
    key: 'max_attempts',
    value: 10,
    text: '10',
    source: 'override',
    fileValue: 7,
    fileText: '7',
    meaning: null,
    derivedFrom: null,
  });
  assert.equal(setting('backoff_base_ms')?.text, '2s');
  assert.equal(setting('allowed_types')?.text, '["welcome"]');
  assert.equal(setting('max_lease_ms')?.source, 'default');

  const [entry] = (await admin.t.engine.listAudit({ action: 'queue.settings.set' })).items;
  assert.equal(entry?.actor, 'admin');
  assert.equal(entry?.target, 'queue:emails');
  assert.deepEqual((entry?.details.changes as Record<string, unknown> | undefined)?.max_attempts, {
    from: 7,
    fromSource: 'queue',
    to: 10,
    toSource: 'override',
  });

  const reset = await client.post<QueueBody>('/api/v1/queues/emails/settings', { reset: ['max_attempts'] });
  assert.equal(reset.status, 200);
  assert.equal(reset.body.settingValues.find((s) => s.key === 'max_attempts')?.source, 'queue');
  const [resetEntry] = (await admin.t.engine.listAudit({ action: 'queue.settings.reset' })).items;
  assert.deepEqual((resetEntry?.details.changes as Record<string, unknown> | undefined)?.max_attempts, {
    from: 10,
    fromSource: 'override',
    to: 7,
    toSource: 'queue',
  });
});

test('malformed bodies and unknown queues are refused with a message that says what to send', async () => {
  const client = await loggedIn(admin, 'admin');
  const cases: [string, unknown, number, RegExp][] = [
    ['/api/v1/queues/emails/settings', {}, 400, /name settings to change \(set\) or to give back/],
    ['/api/v1/queues/emails/settings', { set: [1] }, 400, /set must be an object/],
    ['/api/v1/queues/emails/settings', { reset: 'max_attempts' }, 400, /reset must be a list/],
    ['/api/v1/queues/nope/settings', { set: { max_attempts: '3' } }, 404, /queue nope does not exist/],
  ];
  for (const [path, body, status, message] of cases) {
    const reply = await client.post(path, body);
    assert.equal(reply.status, status, JSON.stringify(body));
    assert.match(reply.body.error?.message ?? '', message);
  }
});

test('each value says what it does where the number does not: what 0 means, a burst derived from the rate', async () => {
  const client = await loggedIn(admin, 'admin');
  const settings = async () => {
    const reply = await client.get<QueueBody>('/api/v1/queues/emails');
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return new Map(reply.body.settingValues.map((s) => [s.key, s]));
  };
  const pick = (s: SettingValue | undefined) => [s?.text, s?.meaning, s?.derivedFrom, s?.source];
  // The test before left allowed_types = ["welcome"] as an override.
  let reply = await client.post('/api/v1/queues/emails/settings', { reset: ['allowed_types'] });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  let now = await settings();
  assert.deepEqual(pick(now.get('max_depth')), ['0', 'no limit', null, 'default']);
  assert.deepEqual(pick(now.get('completed_retention_ms')), [
    '0ms',
    'not kept: deleted on ack',
    null,
    'default',
  ]);
  assert.equal(now.get('allowed_types')?.meaning, 'any type');
  assert.equal(now.get('rate_limit_burst')?.meaning, 'unused: no rate limit');
  assert.deepEqual(pick(now.get('dead_retention_ms')), ['14d', null, null, 'default']);

  // With a rate and no burst of its own, the burst is the rate's leases: derived, not a default.
  reply = await client.post('/api/v1/queues/emails/settings', { set: { rate_limit_leases: '10' } });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  now = await settings();
  const derived = ['10', '= rate_limit_leases (derived)', 'rate_limit_leases'];
  assert.deepEqual(pick(now.get('rate_limit_burst')), [...derived, 'default']);
  assert.equal(now.get('rate_limit_period_ms')?.meaning, null);
  // A burst of 0 set as an override is derived too; a burst of its own is not.
  reply = await client.post('/api/v1/queues/emails/settings', { set: { rate_limit_burst: '0' } });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.deepEqual(pick((await settings()).get('rate_limit_burst')), [...derived, 'override']);
  reply = await client.post('/api/v1/queues/emails/settings', { set: { rate_limit_burst: '4' } });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.deepEqual(pick((await settings()).get('rate_limit_burst')), ['4', null, null, 'override']);
  reply = await client.post('/api/v1/queues/emails/settings', {
    reset: ['rate_limit_leases', 'rate_limit_burst'],
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
});
