/**
 * Schedules over gRPC with the SDK (`client.schedules`), against the real
 * server on the engine's fake clock: create, upsert, get with next runs,
 * list, pause, resume, trigger, delete; the errors each refusal gets; config
 * schedules closed to API changes; ticks delivered to a worker; audit
 * entries with the key's name; the tick metrics; and the config's schedules
 * reconciled (and logged) when the server starts again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { createLogger, type Logger } from '../../src/telemetry/logger.ts';
import { barrier } from '../helpers/engine.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const adminKey = 'sepp-secret-schedules-admin-0123456789';
const producerKey = 'sepp-secret-schedules-producer-0123456789';
registerSecret('schedules test admin key', adminKey);
registerSecret('schedules test producer key', producerKey);

const keysToml = `
[[grpc.api_keys]]
name = "ops"
role = "admin"
key = "${adminKey}"

[[grpc.api_keys]]
name = "billing"
role = "producer"
key = "${producerKey}"
`;
const configSchedule = (cron: string) => `
[[schedules]]
name = "from-config"
cron = "${cron}"
queue = "reports"
type = "nightly"
payload = '{"kind": "daily"}'
content_type = "application/json"
`;

/** A logger that keeps each line's event and fields. */
function recordingLogger(lines: { event: string; fields: Record<string, unknown> }[]): Logger {
  return createLogger({
    level: 'debug',
    format: 'json',
    write: (line) => {
      const { event, ...fields } = JSON.parse(line) as { event: string } & Record<string, unknown>;
      lines.push({ event, fields });
    },
  });
}

async function expectError(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof SeppError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, message);
    return true;
  });
}

describe('schedules over gRPC', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30));
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-schedules-'));
  const lines: { event: string; fields: Record<string, unknown> }[] = [];
  let t: TestServer;
  let admin: SeppClient;
  let producer: SeppClient;
  const tick = async (ms: number) => {
    clock.advance(ms);
    await barrier(t.server.engine);
  };

  before(async () => {
    t = await startTestServer({
      clock,
      dataDir,
      toml: keysToml + configSchedule('0 3 * * *'),
      logger: recordingLogger(lines),
    });
    admin = SeppClient.connect(t.address, { apiKey: adminKey });
    producer = SeppClient.connect(t.address, { apiKey: producerKey });
  });
  after(async () => {
    await admin.close();
    await producer.close();
    await t.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the config schedule is there from the start, logged as added', async () => {
    const [fromConfig] = await producer.schedules.list();
    assert.equal(fromConfig?.name, 'from-config');
    assert.equal(fromConfig?.source, 'config');
    assert.deepEqual(fromConfig?.nextRuns, [new Date(Date.UTC(2026, 0, 2, 3))]);
    assert.equal(fromConfig?.job.payload, null, 'listings leave payloads out');
    assert.equal(fromConfig?.job.payloadBytes, 17);
    assert.ok(lines.some((l) => l.event === 'schedule.added' && l.fields.schedule === 'from-config'));
  });

  test('create, get with next runs, upsert; a second create is ALREADY_EXISTS', async () => {
    const created = await admin.schedules.create({
      name: 'every-minute',
      cron: '* * * * *',
      job: {
        queue: 'reports',
        type: 'minutely',
        json: { n: 1 },
        priority: 4,
        metadata: { team: 'ops' },
        executionTimeoutMs: 120_000,
      },
      overlap: 'skip',
    });
    assert.equal(created.job.executionTimeoutMs, 120_000);
    assert.equal(created.source, 'api');
    assert.equal(created.nextTick?.toISOString(), '2026-01-01T10:01:00.000Z');
    assert.equal(created.overlap, 'skip');
    assert.equal(created.misfire, 'run_latest');
    const got = await producer.schedules.get('every-minute', { nextRuns: 3 });
    assert.deepEqual(
      got.nextRuns.map((d) => d.toISOString()),
      ['10:01', '10:02', '10:03'].map((m) => `2026-01-01T${m}:00.000Z`),
    );
    assert.equal(got.job.payload?.toString(), '{"n":1}');
    assert.equal(got.job.contentType, 'application/json');
    assert.deepEqual(got.job.metadata, { team: 'ops' });
    assert.equal(got.job.executionTimeoutMs, 120_000);
    await expectError(
      admin.schedules.create({
        name: 'every-minute',
        cron: '* * * * *',
        job: { queue: 'reports', type: 'x' },
      }),
      'already_exists',
      /schedule every-minute already exists/,
    );
    const upserted = await admin.schedules.upsert({
      name: 'interval',
      intervalMs: 90_000,
      job: { queue: 'reports', type: 'sync' },
    });
    assert.equal(upserted.created, true);
    assert.equal(upserted.schedule.intervalMs, 90_000);
    const again = await admin.schedules.upsert({
      name: 'interval',
      intervalMs: 90_000,
      job: { queue: 'reports', type: 'sync2' },
    });
    assert.equal(again.created, false);
    assert.equal(again.schedule.job.type, 'sync2');
    assert.equal(
      again.schedule.nextTick?.getTime(),
      upserted.schedule.nextTick?.getTime(),
      'same timing, same next tick',
    );
    await expectError(
      admin.schedules.update({ name: 'missing', cron: '* * * * *', job: { queue: 'reports', type: 'x' } }),
      'not_found',
      /schedule missing does not exist/,
    );
  });

  test('a bad definition is INVALID_ARGUMENT naming the field; a producer key may read but not change', async () => {
    const job = { queue: 'reports', type: 'x' };
    await expectError(
      admin.schedules.create({ name: 'bad', cron: '61 * * * *', job }),
      'invalid_argument',
      /^cron: /,
    );
    await expectError(
      admin.schedules.create({ name: 'bad', cron: '* * * * *', timezone: 'Nowhere/Else', job }),
      'invalid_argument',
      /^timezone: "Nowhere\/Else" is not an IANA timezone/,
    );
    await expectError(
      admin.schedules.create({ name: 'bad', cron: '* * * * *', job: { queue: 'no spaces', type: 'x' } }),
      'invalid_argument',
      /^template\.queue: /,
    );
    await expectError(
      admin.schedules.create({ name: 'bad', cron: '* * * * *', job, misfire: 'never' as 'skip' }),
      'invalid_argument',
      /^misfire: "never" is not one of run_latest, skip, catch_up/,
    );
    await expectError(
      producer.schedules.create({ name: 'bad', cron: '* * * * *', job }),
      'permission_denied',
      /API key billing has role producer, which may not call CreateSchedule/,
    );
    assert.equal(
      (await producer.schedules.list()).some((s) => s.name === 'bad'),
      false,
    );
  });

  test('a config schedule cannot be changed or deleted over gRPC: FAILED_PRECONDITION says why', async () => {
    const reason = /declared in the config file \(\[\[schedules\]\] in sepp\.toml\), so it cannot be/;
    await expectError(
      admin.schedules.upsert({
        name: 'from-config',
        cron: '0 4 * * *',
        job: { queue: 'reports', type: 'nightly' },
      }),
      'failed_precondition',
      reason,
    );
    await expectError(admin.schedules.delete('from-config'), 'failed_precondition', reason);
    assert.equal((await admin.schedules.pause('from-config')).paused, true);
    assert.equal((await admin.schedules.resume('from-config')).paused, false);
  });

  test('ticks reach a worker with the tick key; trigger, pause, resume and delete; all audited', async () => {
    await tick(30_000); // 10:01
    const [leased] = await admin.reserve({ queues: ['reports'], maxJobs: 10, leaseMs: 600_000 });
    assert.equal(leased?.type, 'minutely');
    assert.equal(leased?.idempotencyKey, 'schedule:every-minute:2026-01-01T10:01:00.000Z');
    assert.deepEqual(leased?.json(), { n: 1 });
    assert.equal(leased?.priority, 4);
    await tick(60_000); // 10:02: the 10:01 job is leased, overlap skip
    const skipped = await admin.schedules.get('every-minute');
    assert.equal(skipped.lastOutcome, 'skipped_overlap');
    assert.equal(skipped.ticksEnqueued, 1);
    assert.equal(skipped.ticksSkipped, 1);

    const triggered = await admin.schedules.trigger('interval');
    assert.equal(
      (await admin.getJob(triggered.id)).idempotencyKey,
      'schedule:interval:manual:2026-01-01T10:02:00.000Z',
    );
    // Its run history over gRPC (issue 36): newest first, the trigger with its job.
    const [latest] = await admin.schedules.runs('interval');
    assert.deepEqual([latest?.outcome, latest?.tick, latest?.jobId], ['triggered', null, triggered.id]);
    assert.equal((await admin.schedules.pause('every-minute')).paused, true);
    assert.equal((await admin.schedules.resume('every-minute')).paused, false);
    await admin.schedules.delete('interval');
    await expectError(admin.schedules.get('interval'), 'not_found', /schedule interval does not exist/);

    const audit = (await t.server.engine.listAudit({ actor: 'key:ops' })).items.map(
      (e) => `${e.action} ${e.target}`,
    );
    for (const entry of [
      'schedule.create schedule:every-minute',
      'schedule.update schedule:interval',
      'schedule.pause schedule:from-config',
      'schedule.trigger schedule:interval',
      'schedule.delete schedule:interval',
    ]) {
      assert.ok(audit.includes(entry), `${entry} in ${audit.join(', ')}`);
    }
  });

  test('metrics count ticks enqueued and skipped, by schedule and reason', async () => {
    const { samples } = await scrape(t.metricsUrl);
    assert.equal(
      sampleValue(samples, 'sepp_schedule_ticks_enqueued_total', { sepp_schedule: 'every-minute' }),
      1,
    );
    assert.equal(
      sampleValue(samples, 'sepp_schedule_ticks_skipped_total', {
        sepp_schedule: 'every-minute',
        sepp_schedule_skip_reason: 'overlap',
      }),
      1,
    );
  });

  test('after a restart: API schedules are still there, a changed config schedule is updated and logged', async () => {
    await t.server.shutdown();
    lines.length = 0;
    const restarted = await startTestServer({
      clock,
      dataDir,
      toml: keysToml + configSchedule('0 4 * * *'),
      logger: recordingLogger(lines),
    });
    t = restarted;
    await admin.close();
    admin = SeppClient.connect(t.address, { apiKey: adminKey });
    const names = (await admin.schedules.list()).map((s) => [s.name, s.source]);
    assert.deepEqual(names, [
      ['every-minute', 'api'],
      ['from-config', 'config'],
    ]);
    assert.equal(
      (await admin.schedules.get('from-config')).nextTick?.toISOString(),
      '2026-01-02T04:00:00.000Z',
    );
    assert.ok(lines.some((l) => l.event === 'schedule.updated' && l.fields.schedule === 'from-config'));
  });
});
