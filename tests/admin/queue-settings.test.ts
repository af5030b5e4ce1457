/**
 * POST /api/v1/queues/{queue}/settings: an admin changes a queue's settings
 * from the UI. Each bad value gets exactly the message the config file would
 * get for it (same key, same words); a request with any bad value changes
 * nothing; a good one shows the new value with its source and the file's
 * value, and is in the audit log with the old and new values.
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
  const queue = admin.t.engine.listQueues()[0];
  assert.equal(queue?.settings.maxDepth, 0, 'the valid max_depth beside each bad value was not applied');
  assert.equal(admin.t.engine.listAudit({ action: 'queue.settings.set' }).items.length, 0);
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
  });
  assert.equal(setting('backoff_base_ms')?.text, '2s');
  assert.equal(setting('allowed_types')?.text, '["welcome"]');
  assert.equal(setting('max_lease_ms')?.source, 'default');

  const [entry] = admin.t.engine.listAudit({ action: 'queue.settings.set' }).items;
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
  const [resetEntry] = admin.t.engine.listAudit({ action: 'queue.settings.reset' }).items;
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
