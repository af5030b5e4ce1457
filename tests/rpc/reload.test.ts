/**
 * Reloading the config file while the server runs (what SIGHUP and
 * ReloadConfig do; tests/client/reload-cli.test.ts sends the real signal): new and
 * revoked API keys (an open Work stream of a revoked key ends with
 * UNAUTHENTICATED), queue settings from the file under the run-time
 * overrides, the log level, the /metrics token; a bad file is refused whole
 * with the messages of a start and the server keeps its configuration;
 * [[schedules]] added; what needs a restart is named and keeps its running value.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { DurabilityMode } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { checkConfigFile, formatProblem } from '../../src/config/index.ts';
import { createLogger, type LogLevel } from '../../src/telemetry/logger.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const keys = {
  ops: 'sepp-secret-reload-ops-0123456789',
  oldWorker: 'sepp-secret-reload-old-worker-0123456789',
  newWorker: 'sepp-secret-reload-new-worker-0123456789',
  metrics: 'sepp-secret-reload-metrics-0123456789',
};
const key = (name: string, role: string, value: string) =>
  `[[grpc.api_keys]]\nname = "${name}"\nrole = "${role}"\nkey = "${value}"\n`;
const withKey = (value: string) => {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${value}`);
  return metadata;
};
const reserveRequest = {
  queues: ['r'],
  maxJobs: 1,
  leaseDurationMs: 0,
  waitTimeoutMs: 0,
  workerId: '',
  maxResponseBytes: 0,
};
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (e: ServiceError) => e.code,
  );

describe('config reload', () => {
  let t: TestServer;
  const lines: string[] = [];
  const levels: LogLevel[] = [];
  const base = `${key('ops', 'admin', keys.ops)}[queues.r]\nmax_attempts = 4\n`;

  before(async () => {
    t = await startTestServer({
      toml: base + key('worker-old', 'worker', keys.oldWorker),
      logger: createLogger({ level: 'debug', format: 'json', write: (l) => lines.push(l) }),
      setLogLevel: (level) => levels.push(level),
    });
  });
  after(() => t.dispose());

  test('a new key works and a revoked one stops, ending its open Work stream with UNAUTHENTICATED', async () => {
    const work = t.client.work(withKey(keys.oldWorker)) as ClientDuplexStream<WorkRequest, WorkResponse>;
    const ended = new Promise<ServiceError>((resolve) => work.on('error', resolve));
    const pushed = new Promise<void>((resolve) => work.once('data', () => resolve()));
    work.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['r'], leaseDurationMs: 0, workerId: '', batchResponses: false },
      },
    });
    work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 10 } } });
    await call(t.client, t.client.enqueue, { job: testJob('r') }, withKey(keys.ops));
    await pushed; // the stream is open and authorized
    assert.equal(
      await codeOf(call(t.client, t.client.reserve, reserveRequest, withKey(keys.newWorker))),
      status.UNAUTHENTICATED,
    );

    t.writeConfig(base + key('worker-new', 'worker', keys.newWorker));
    const report = await t.server.reload({ actor: 'test' });
    assert.equal(report.applied, true);
    assert.deepEqual(report.problems, []);
    assert.ok(
      report.changed.includes('grpc.api_keys (added worker-new; removed worker-old)'),
      report.changed.join(),
    );

    // A generous hang guard: the stream ends as the reload applies.
    const error = await Promise.race([
      ended,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the stream of the revoked key stayed open')), 20_000).unref(),
      ),
    ]);
    assert.equal(error.code, status.UNAUTHENTICATED);
    assert.equal(
      await codeOf(call(t.client, t.client.reserve, reserveRequest, withKey(keys.oldWorker))),
      status.UNAUTHENTICATED,
    );
    assert.equal(
      await codeOf(call(t.client, t.client.reserve, reserveRequest, withKey(keys.newWorker))),
      status.OK,
    );
    const entry = (await t.server.engine.listAudit({ action: 'config.reload' })).items[0];
    assert.equal(entry?.actor, 'test');
    assert.ok(lines.some((l) => l.includes('"config.reloaded"') && l.includes('removed worker-old')));
  });

  test('a bad file is refused as a whole, with the messages of a start; the server keeps its configuration', async () => {
    const good = base + key('worker-new', 'worker', keys.newWorker);
    // A valid new key next to two problems: none of it may apply.
    const bad = `${good}${key('extra', 'admin', 'sepp-secret-reload-extra-0123456789')}[queues.r2]\nmax_attempts = 0\nbogus = 1\n`;
    t.writeConfig(bad);
    const expected = checkConfigFile(t.configFile);
    assert.equal(expected.ok, false);
    const report = await t.server.reload({ actor: 'test' });
    assert.equal(report.applied, false);
    assert.deepEqual(
      report.problems.map(formatProblem),
      !expected.ok ? expected.problems.map(formatProblem) : [],
    );
    assert.ok(
      report.problems.some(
        (p) => p.key === 'queues.r2.max_attempts' && /below the minimum 1/.test(p.message),
      ),
    );
    const refused = lines.find((l) => l.includes('"config.reload_refused"'));
    assert.ok(refused?.includes('queues.r2.max_attempts'), refused);
    assert.equal(
      await codeOf(
        call(t.client, t.client.getServerInfo, {}, withKey('sepp-secret-reload-extra-0123456789')),
      ),
      status.UNAUTHENTICATED,
      'nothing of the refused file applies',
    );
    assert.equal(
      await codeOf(call(t.client, t.client.reserve, reserveRequest, withKey(keys.newWorker))),
      status.OK,
    );
    t.writeConfig(good);
  });

  test('queue settings from the file apply to the next job, under the run-time overrides', async () => {
    const ops = withKey(keys.ops);
    const maxAttemptsOfNext = async (queue: string) => {
      const { jobId } = await call(t.client, t.client.enqueue, { job: testJob(queue) }, ops);
      return (await call(t.client, t.client.getJob, { jobId }, ops)).job?.maxAttempts;
    };
    assert.equal(await maxAttemptsOfNext('r'), 4);
    await call(t.client, t.client.enqueue, { job: testJob('o') }, ops);
    await call(t.client, t.client.setQueueSettings, { queue: 'o', settings: { max_attempts: '2' } }, ops);
    t.writeConfig(
      `${key('ops', 'admin', keys.ops)}[queues.r]\nmax_attempts = 9\n[queues.o]\nmax_attempts = 7\n[queues.fresh]\n`,
    );
    const report = await t.server.reload({ actor: 'test' });
    assert.deepEqual(report.problems, []);
    assert.ok(report.changed.includes('queues.r.max_attempts'), report.changed.join());
    assert.ok(report.changed.includes('queues.fresh (declared)'), report.changed.join());
    assert.equal(await maxAttemptsOfNext('r'), 9);
    assert.equal(await maxAttemptsOfNext('o'), 2, 'the override stays on top of the file');
    const listed = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' }, ops);
    assert.ok(
      listed.queues.some((q) => q.name === 'fresh'),
      'a newly declared queue exists',
    );
    const o = listed.queues.find((q) => q.name === 'o')?.settingValues.find((s) => s.key === 'max_attempts');
    assert.equal(o?.fileValueJson, '7');
  });

  test('a file that clashes with a run-time override is refused, naming the override and how to reset it', async () => {
    const ops = withKey(keys.ops);
    await call(
      t.client,
      t.client.setQueueSettings,
      { queue: 'o', settings: { default_lease_ms: '2h' } },
      ops,
    );
    t.writeConfig(`${key('ops', 'admin', keys.ops)}[queues.o]\nmax_lease_ms = "1h"\n`);
    const report = await t.server.reload({ actor: 'test' });
    assert.equal(report.applied, false);
    const [problem] = report.problems;
    assert.equal(problem?.key, 'queues.o.default_lease_ms');
    assert.match(problem?.message ?? '', /longer than max_lease_ms .*sepp queue reset o/);
  });

  test('log level and /metrics token apply; what needs a restart is named and keeps its running value', async () => {
    t.writeConfig(
      `[server]\nlog_level = "debug"\ndurability = "relaxed"\n[grpc]\nkeepalive_ms = "5s"\nkeepalive_timeout_ms = "3s"\n${key('ops', 'admin', keys.ops)}[telemetry]\nmetrics_token = "${keys.metrics}"\n`,
    );
    const report = await t.server.reload({ actor: 'test' });
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.restartRequired, [
      'server.durability',
      'grpc.keepalive_ms',
      'grpc.keepalive_timeout_ms',
    ]);
    assert.ok(report.changed.includes('server.log_level'));
    assert.deepEqual(levels.at(-1), 'debug');
    const info = await call(t.client, t.client.getServerInfo, {}, withKey(keys.ops));
    assert.equal(info.durability, DurabilityMode.FULL, 'durability keeps its running value');
    assert.equal(t.server.config().server.durability, 'full');
    assert.equal(t.server.config().grpc.keepaliveMs, 30_000, 'the pings keep their running interval');
    assert.deepEqual(
      [info.limits?.keepaliveMs, info.limits?.keepaliveTimeoutMs],
      [30_000, 20_000],
      'GetServerInfo reports the keepalive in effect, not the file',
    );
    assert.equal((await fetch(t.metricsUrl)).status, 401, '/metrics now needs the token');
    const scraped = await fetch(t.metricsUrl, { headers: { authorization: `Bearer ${keys.metrics}` } });
    assert.equal(scraped.status, 200);
    assert.ok(lines.some((l) => l.includes('"config.restart_required"') && l.includes('server.durability')));

    // Taking the token away lowers security: refused unless asked for (reload-security.test.ts has the rest).
    t.writeConfig(`${key('ops', 'admin', keys.ops)}[server]\nlog_level = "debug"\n`);
    const refused = await t.server.reload({ actor: 'test' });
    assert.deepEqual(
      refused.problems.map((p) => p.key),
      ['telemetry.metrics_token'],
    );
    assert.equal((await fetch(t.metricsUrl)).status, 401, 'the token still holds');
    const allowed = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
    assert.deepEqual(allowed.problems, []);
    assert.equal((await fetch(t.metricsUrl)).status, 200);
  });

  test('telemetry settings apply: a new OTLP endpoint and service name get the next spans', async () => {
    const receiver = await startOtlpReceiver();
    try {
      t.writeConfig(
        `${key('ops', 'admin', keys.ops)}[server]\nlog_level = "debug"\n[telemetry]\notlp_endpoint = "${receiver.endpoint}"\nservice_name = "reloaded"\n`,
      );
      const report = await t.server.reload({ actor: 'test' });
      assert.deepEqual(report.restartRequired, [], 'telemetry needs no restart');
      assert.ok(report.changed.includes('telemetry.otlp_endpoint'), report.changed.join());
      await call(t.client, t.client.getServerInfo, {}, withKey(keys.ops));
      await t.server.telemetry.flush();
      const span = receiver.spans.find((s) => s.name === 'sepp.v1.QueueService/GetServerInfo');
      assert.equal(span?.service, 'reloaded');
      assert.ok(receiver.paths.includes('/v1/metrics'), 'metrics are pushed there too');
    } finally {
      // Back to no endpoint while the receiver still answers: the exporters stop with a last
      // export that succeeds, instead of retrying a closed port for seconds after the file's tests.
      t.writeConfig(`${key('ops', 'admin', keys.ops)}[server]\nlog_level = "debug"\n`);
      await t.server.reload({ actor: 'test' });
      await receiver.close();
    }
  });

  test("[[schedules]] apply: a reload adds the file's schedules, names them as changed and logs each", async () => {
    t.writeConfig(
      `${key('ops', 'admin', keys.ops)}[server]\nlog_level = "debug"\n[[schedules]]\nname = "nightly"\ncron = "30 2 * * *"\nqueue = "r"\ntype = "build"\n`,
    );
    const report = await t.server.reload({ actor: 'test' });
    assert.deepEqual(report.problems, []);
    assert.equal(report.applied, true);
    assert.deepEqual(report.restartRequired, []);
    assert.ok(report.changed.includes('schedules (added nightly)'), report.changed.join());
    assert.deepEqual(
      (await t.server.engine.listSchedules()).map((s) => [s.name, s.source]),
      [['nightly', 'config']],
    );
    assert.ok(lines.some((l) => l.includes('"schedule.added"') && l.includes('"nightly"')));
  });

  test('a dry run reports and changes nothing', async () => {
    t.writeConfig(`${key('ops', 'admin', keys.ops)}[server]\nlog_level = "warn"\n`);
    const before = levels.length;
    const report = await t.server.reload({ actor: 'test', dryRun: true });
    assert.equal(report.applied, false);
    assert.ok(report.changed.includes('server.log_level'));
    assert.equal(levels.length, before);
    assert.equal(t.server.config().server.logLevel, 'debug');
  });
});
