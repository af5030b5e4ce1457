/**
 * A reload never gives a key or a user more than it had without being asked (attack7):
 * a file cut at a line boundary parses, and the `queues = [...]` line written last in a
 * key's table is the line a cut drops, which made a tenant's admin key an admin key for
 * every queue on the next SIGHUP. Raising a key's or a user's role, or widening a key's
 * queues, is refused like any downgrade unless the request allows it; narrowing applies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { apiKeyToml } from '../helpers/access-table.ts';
import { bearer, call, startTestServer, statusOf, type TestServer, testJob } from '../helpers/server.ts';

const keys = {
  ops: 'sepp-secret-reload-rights-ops-0123456789',
  tenant: 'sepp-secret-reload-rights-tenant-0123456789',
  feeder: 'sepp-secret-reload-rights-feeder-0123456789',
};
const passwordHash =
  '$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA';
const user = (role: string) =>
  `[[admin.users]]\nname = "alice"\nrole = "${role}"\npassword_hash = "${passwordHash}"\n`;
const file = (
  o: { tenantQueues?: readonly string[]; feederRole?: 'producer' | 'admin'; userRole?: string } = {},
) =>
  user(o.userRole ?? 'viewer') +
  apiKeyToml('ops', 'admin', keys.ops) +
  apiKeyToml('feeder', o.feederRole ?? 'producer', keys.feeder) +
  apiKeyToml('tenant', 'admin', keys.tenant, o.tenantQueues);

const audits = { actor: '', action: '', target: '', pageSize: 1, pageToken: '' };

interface LogLine {
  level: string;
  event: string;
  [field: string]: unknown;
}

describe('a reload never widens a key or a user silently', () => {
  let t: TestServer;
  let otherJob: string;
  const lines: LogLine[] = [];
  const tenantReadsOther = () =>
    statusOf(call(t.client, t.client.getJob, { jobId: otherJob }, bearer(keys.tenant)));
  const lastAudit = async () => (await t.server.engine.listAudit({ action: 'config.reload' })).items[0];

  before(async () => {
    t = await startTestServer({
      toml: file({ tenantQueues: ['tenant-a.*'] }),
      logger: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(JSON.parse(line)) }),
    });
    otherJob = (await call(t.client, t.client.enqueue, { job: testJob('tenant-b.jobs') }, bearer(keys.ops)))
      .jobId;
    assert.equal(await tenantReadsOther(), status.NOT_FOUND, 'scoped: another tenant’s job is not found');
  });
  after(() => t.dispose());

  test('a file cut before a key’s queues line is refused on SIGHUP: the tenant key stays scoped', async () => {
    const text = file({ tenantQueues: ['tenant-a.*'] });
    t.writeConfig(text.slice(0, text.lastIndexOf('queues = ')));
    const from = lines.length;
    const report = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.equal(report.applied, false);
    const problem = report.problems.find((p) => p.key === 'grpc.api_keys');
    assert.match(problem?.message ?? '', /API key tenant .*queues go from \["tenant-a\.\*"\] to every queue/);
    assert.equal(await tenantReadsOther(), status.NOT_FOUND);
    assert.equal(lines.slice(from).find((l) => l.event === 'config.reload_refused')?.level, 'error');
    assert.equal((await lastAudit())?.details.result, 'refused');
    // A pattern added widens too; one taken away narrows, and applies.
    t.writeConfig(file({ tenantQueues: ['tenant-a.*', 'tenant-b.*'] }));
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, false);
    t.writeConfig(file({ tenantQueues: ['tenant-a.jobs'] }));
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);
  });

  test('a role raised is refused without the flag and applied, logged and audited with it', async () => {
    t.writeConfig(file({ tenantQueues: ['tenant-a.jobs'], feederRole: 'admin', userRole: 'admin' }));
    const refused = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.equal(refused.applied, false);
    const messages = refused.problems.map((p) => `${p.key}: ${p.message}`).join('\n');
    assert.match(messages, /grpc\.api_keys: API key feeder .*role goes from producer to admin/);
    assert.match(messages, /admin\.users: admin user alice .*role goes from viewer to admin/);
    assert.equal(
      await statusOf(call(t.client, t.client.listAuditEntries, audits, bearer(keys.feeder))),
      status.PERMISSION_DENIED,
    );

    const from = lines.length;
    const report = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
    assert.equal(report.applied, true);
    const expected = [
      'grpc.api_keys (feeder: its role goes from producer to admin)',
      'admin.users (alice: its role goes from viewer to admin)',
    ];
    assert.deepEqual((await lastAudit())?.details.securityDowngrades, expected);
    const warned = lines.slice(from).find((l) => l.event === 'config.security_downgraded');
    assert.equal(warned?.settings, expected.join(', '));
    assert.equal(
      await statusOf(call(t.client, t.client.listAuditEntries, audits, bearer(keys.feeder))),
      status.OK,
    );

    // Lowering them back needs no flag.
    t.writeConfig(file({ tenantQueues: ['tenant-a.jobs'] }));
    const lowered = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.deepEqual(lowered.problems, []);
    assert.equal(lowered.applied, true);
  });
});

describe('a reload never widens what producers may enqueue silently', () => {
  // strict_queues and a queue's allowed_types, each written last in its table: the lines a cut drops.
  const queues = (
    o: { strict?: boolean; mailTypes?: string; defaultTypes?: string; proxies?: string } = {},
  ) =>
    apiKeyToml('ops', 'admin', keys.ops) +
    `[admin]\ntrusted_proxies = ${o.proxies ?? '["10.0.0.1/32"]'}\n` +
    `[queue_defaults]\nallowed_types = ${o.defaultTypes ?? '["ping"]'}\n` +
    `[queues.mail]\nallowed_types = ${o.mailTypes ?? '["send"]'}\n` +
    `[engine]\nstrict_queues = ${o.strict ?? true}\n`;
  let t: TestServer;
  const enqueue = (queue: string, type: string) =>
    statusOf(call(t.client, t.client.enqueue, { job: { ...testJob(queue), type } }, bearer(keys.ops)));

  before(async () => {
    t = await startTestServer({ toml: queues() });
  });
  after(() => t.dispose());

  test('strict_queues dropped or a queue’s allowed_types widened is refused on SIGHUP, applied with the flag', async () => {
    const text = queues();
    t.writeConfig(text.slice(0, text.lastIndexOf('strict_queues')));
    let report = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.equal(report.applied, false);
    assert.match(
      report.problems.map((p) => `${p.key}: ${p.message}`).join('\n'),
      /engine\.strict_queues: engine\.strict_queues would go from true to false: a producer could enqueue to a queue of any name/,
    );
    assert.equal(await enqueue('undeclared', 'ping'), status.NOT_FOUND, 'still strict');

    // The mail queue's allowed_types line dropped: it takes [queue_defaults]' types; a type added widens too.
    for (const mailTypes of ['["ping"]', '["send", "ping"]', '[]']) {
      t.writeConfig(queues({ mailTypes }));
      report = await t.server.reload({ actor: 'signal:SIGHUP' });
      assert.equal(report.applied, false, mailTypes);
      assert.equal(report.problems[0]?.key, 'queues.mail.allowed_types');
    }
    assert.match(
      report.problems[0]?.message ?? '',
      /from \["send"\] to any type: a producer could enqueue to queue mail/,
    );
    assert.equal(await enqueue('mail', 'ping'), status.FAILED_PRECONDITION, 'still only "send"');
    // Narrowing, and a queue added, apply.
    t.writeConfig(`${queues({ mailTypes: '["send"]', defaultTypes: '["ping"]' })}[queues.extra]\n`);
    assert.deepEqual((await t.server.reload({ actor: 'signal:SIGHUP' })).problems, []);

    t.writeConfig(queues({ strict: false, mailTypes: '[]' }));
    const lowered = [
      'engine.strict_queues (from true to false)',
      'queues.mail.allowed_types (from ["send"] to any type)',
    ];
    // The SDK's answer names what the file lowers: refused without the flag, a dry run with it.
    const sdk = SeppClient.connect(t.address, { apiKey: keys.ops });
    try {
      const refused = await sdk.reloadConfig({ dryRun: true });
      assert.deepEqual(
        [refused.problems.map((p) => p.key), refused.securityDowngrades],
        [['engine.strict_queues', 'queues.mail.allowed_types'], lowered],
      );
      const dry = await sdk.reloadConfig({ dryRun: true, allowSecurityDowngrade: true });
      assert.deepEqual([dry.applied, dry.problems, dry.securityDowngrades], [false, [], lowered]);
    } finally {
      await sdk.close();
    }
    report = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
    assert.equal(report.applied, true);
    assert.deepEqual(report.securityDowngrades, lowered);
    const audit = (await t.server.engine.listAudit({ action: 'config.reload' })).items[0];
    assert.deepEqual(audit?.details.securityDowngrades, lowered);
    assert.equal(await enqueue('mail', 'ping'), status.OK);
    assert.equal(await enqueue('undeclared', 'ping'), status.OK);
  });

  test('with undeclared queues open, [queue_defaults]’ allowed_types widened, a proxy trusted, a wider queue added are refused', async () => {
    t.writeConfig(queues({ strict: false, mailTypes: '[]', defaultTypes: '[]', proxies: '["10.0.0.0/8"]' }));
    const report = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.equal(report.applied, false);
    assert.deepEqual(
      report.problems.map((p) => p.key),
      ['queue_defaults.allowed_types', 'admin.trusted_proxies'],
    );
    assert.match(
      report.problems[1]?.message ?? '',
      /a client connecting from 10\.0\.0\.0\/8 could name any address/,
    );
    // Fewer proxies trusted narrows: it applies.
    t.writeConfig(queues({ strict: false, mailTypes: '[]', proxies: '[]' }));
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);

    // A queue the file adds took jobs undeclared, with [queue_defaults]' types: wider ones are refused.
    const adding = (types: string) =>
      `${queues({ strict: false, mailTypes: '[]', proxies: '[]' })}[queues.extra]\nallowed_types = ${types}\n`;
    for (const types of ['["ping", "send"]', '[]']) {
      t.writeConfig(adding(types));
      const added = await t.server.reload({ actor: 'signal:SIGHUP' });
      assert.equal(added.applied, false, types);
      assert.deepEqual(
        added.problems.map((p) => p.key),
        ['queues.extra.allowed_types'],
      );
    }
    assert.deepEqual((await t.server.reload({ actor: 'test', dryRun: true })).securityDowngrades, [
      'queues.extra.allowed_types (from ["ping"] to any type)',
    ]);
    t.writeConfig(adding('["ping", "send"]'));
    assert.match(
      (await t.server.reload({ actor: 'signal:SIGHUP' })).problems[0]?.message ?? '',
      /from \["ping"\] to \["ping","send"\] \(undeclared, it takes \[queue_defaults\]' types, strict_queues being off\): a producer could enqueue to queue extra a job type/,
    );
    assert.equal(await enqueue('extra', 'send'), status.FAILED_PRECONDITION, 'still only "ping"');
    // Within them it applies.
    t.writeConfig(adding('["ping"]'));
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);
  });
});
