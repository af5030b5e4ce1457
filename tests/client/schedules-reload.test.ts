/**
 * [[schedules]] follow the config file on a reload, with a real server on a
 * socket and the SDK (ReloadConfig, ListSchedules): the file's schedules are
 * added, changed and removed; schedules created over the API that the file
 * does not name stay; one the file now names is taken over by it. Each
 * change is audited (actor `config`) and logged, as at start.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const adminKey = 'sepp-secret-schedules-reload-admin-0123456789';
registerSecret('schedules reload admin key', adminKey);
const keysToml = `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${adminKey}"\n`;
const schedule = (name: string, cron: string) =>
  `[[schedules]]\nname = "${name}"\ncron = "${cron}"\nqueue = "reports"\ntype = "${name}"\n`;

describe('[[schedules]] on a config reload', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30));
  const lines: string[] = [];
  let t: TestServer;
  let admin: SeppClient;
  const listed = async () => (await admin.schedules.list()).map((s) => `${s.name} ${s.source}`);

  before(async () => {
    t = await startTestServer({
      clock,
      toml: keysToml + schedule('nightly', '30 2 * * *') + schedule('hourly', '0 * * * *'),
      logger: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) }),
    });
    admin = SeppClient.connect(t.address, { apiKey: adminKey });
  });
  after(async () => {
    await admin?.close();
    await t?.dispose();
  });

  test('added, changed and removed as the file says; API schedules stay, one the file names is taken over', async () => {
    const job = { queue: 'reports', type: 'adhoc', payload: Buffer.from('{}') };
    await admin.schedules.create({ name: 'adhoc', intervalMs: 60_000, job });
    await admin.schedules.create({ name: 'takeover', intervalMs: 60_000, job });
    await admin.schedules.pause('nightly');
    assert.deepEqual(await listed(), ['adhoc api', 'hourly config', 'nightly config', 'takeover api']);

    const configAudit = async () => (await t.server.engine.listAudit({ actor: 'config' })).items;
    const auditedAtStart = (await configAudit()).length;
    t.writeConfig(
      keysToml +
        schedule('nightly', '45 2 * * *') +
        schedule('weekly', '0 3 * * 1') +
        schedule('takeover', '0 4 * * *'),
    );
    const report = await admin.reloadConfig();
    assert.deepEqual([report.applied, report.problems, report.restartRequired], [true, [], []]);
    assert.ok(
      report.changed.includes('schedules (added weekly, takeover; removed hourly; changed nightly)'),
      report.changed.join('\n'),
    );
    assert.deepEqual(await listed(), ['adhoc api', 'nightly config', 'takeover config', 'weekly config']);
    const nightly = await admin.schedules.get('nightly');
    assert.equal(nightly.cron, '45 2 * * *');
    assert.equal(nightly.nextTick?.toISOString(), '2026-01-02T02:45:00.000Z');
    assert.equal(nightly.paused, true, "an operator's pause stays through a change of the definition");
    assert.equal((await admin.schedules.get('takeover')).cron, '0 4 * * *');

    // Newest first: the entries the reload wrote.
    const all = await configAudit();
    const audited = all
      .slice(0, all.length - auditedAtStart)
      .map((e) => `${e.action} ${e.target}`)
      .sort();
    assert.deepEqual(audited, [
      'schedule.create schedule:weekly',
      'schedule.delete schedule:hourly',
      'schedule.update schedule:nightly',
      'schedule.update schedule:takeover',
    ]);
    for (const event of ['schedule.added', 'schedule.updated', 'schedule.adopted', 'schedule.removed']) {
      assert.ok(
        lines.some((l) => l.includes(`"${event}"`)),
        `${event} is logged on a reload as at start`,
      );
    }

    // The file owns them now: changed there, not over the API.
    await assert.rejects(admin.schedules.delete('takeover'), (error: unknown) => {
      assert.ok(error instanceof SeppError);
      assert.equal(error.code, 'failed_precondition');
      assert.match(error.message, /delete it there and reload the config \(sepp config reload or SIGHUP/);
      return true;
    });
  });

  test('a file without [[schedules]] removes the config ones; the API ones stay', async () => {
    t.writeConfig(keysToml);
    const report = await admin.reloadConfig();
    assert.equal(report.applied, true);
    assert.ok(
      report.changed.includes('schedules (removed nightly, weekly, takeover)'),
      report.changed.join('\n'),
    );
    assert.deepEqual(await listed(), ['adhoc api']);
  });
});
