/**
 * `[limits]` on a reload (ReloadConfig over gRPC; tests/client/reload-cli.test.ts
 * sends the real SIGHUP): a lowered limit is met by the next call while what is
 * already held above it stays, a raised one lets the next call through, and
 * GetServerInfo shows the values in force. Raising a bound is no security
 * downgrade (SECURITY.md): a reload as SIGHUP asks for it applies it, and the
 * log line and the audit entry say from what to what. The two limits the
 * message sizes are built around wait for a restart (and the admin UI's
 * Configuration page marks them so).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { ReloadConfigResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { EventsRequest } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { createLogger } from '../../src/telemetry/logger.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const opsKey = 'sepp-secret-reload-limits-ops-0123456789';
const keys = `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${opsKey}"\n`;
const ops = () => {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${opsKey}`);
  return metadata;
};
const failure = (p: Promise<unknown>) =>
  p.then(
    () => ({ code: status.OK, details: '' }),
    (e: ServiceError) => ({ code: e.code, details: e.details }),
  );

/** ReloadConfig over gRPC, as the ops key. */
const reloadOf = (t: TestServer) =>
  call(
    t.client,
    t.client.reloadConfig,
    { dryRun: false, allowSecurityDowngrade: false },
    ops(),
  ) as Promise<ReloadConfigResponse>;

describe('[limits] on a reload', () => {
  let t: TestServer;
  const lines: string[] = [];
  const limitsOf = async () => (await call(t.client, t.client.getServerInfo, {}, ops())).limits;
  const reloadOverGrpc = () => reloadOf(t);
  const createBatch = () =>
    failure(call(t.client, t.client.createBatch, { jobs: [], seal: false, sealIfAllStored: false }, ops()));

  before(async () => {
    t = await startTestServer({
      toml: `${keys}[limits]\nmax_open_batches_per_key = 3\nmax_batch_jobs = 2\n`,
      logger: createLogger({ level: 'info', format: 'json', write: (l) => lines.push(l) }),
    });
  });
  after(() => t.dispose());

  test('lowered by ReloadConfig, the next call meets the limit and what is held stays; raised, the next passes', async () => {
    const held = [await createBatch(), await createBatch()];
    assert.deepEqual(
      held.map((r) => r.code),
      [status.OK, status.OK],
    );
    const openBefore = (await t.server.engine.listBatches({ state: 'open' })).batches.length;
    assert.equal(openBefore, 2);

    t.writeConfig(`${keys}[limits]\nmax_open_batches_per_key = 1\nmax_batch_jobs = 2\n`);
    const lowered = await reloadOverGrpc();
    assert.equal(lowered.applied, true);
    assert.deepEqual(lowered.changed, ['limits.max_open_batches_per_key']);
    assert.deepEqual(lowered.restartRequired, []);
    assert.equal((await limitsOf())?.maxOpenBatchesPerKey, 1, 'GetServerInfo shows the value in force');
    const refused = await createBatch();
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED);
    assert.match(refused.details, /API key ops holds 1 batches not ended.*limits\.max_open_batches_per_key/);
    assert.equal(
      (await t.server.engine.listBatches({ state: 'open' })).batches.length,
      2,
      'the batches held above the lowered limit stay open',
    );

    t.writeConfig(`${keys}[limits]\nmax_open_batches_per_key = 5\nmax_batch_jobs = 3\n`);
    const raised = await reloadOverGrpc();
    assert.deepEqual(raised.changed, ['limits.max_batch_jobs', 'limits.max_open_batches_per_key']);
    assert.equal((await createBatch()).code, status.OK);
    const jobs = [testJob('rl'), testJob('rl'), testJob('rl')];
    assert.equal((await failure(call(t.client, t.client.enqueueBatch, { jobs }, ops()))).code, status.OK);
    assert.deepEqual([(await limitsOf())?.maxOpenBatchesPerKey, (await limitsOf())?.maxBatchJobs], [5, 3]);
  });

  test('raising a bound is no security downgrade: a reload as SIGHUP applies it and says from what to what', async () => {
    t.writeConfig(`${keys}[limits]\nmax_open_batches_per_key = 5\nmax_batch_jobs = 2\n`);
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);
    const jobs = [testJob('rl'), testJob('rl'), testJob('rl')];
    const overLowered = await failure(call(t.client, t.client.enqueueBatch, { jobs }, ops()));
    assert.equal(overLowered.code, status.RESOURCE_EXHAUSTED);
    assert.match(overLowered.details, /the limit is 2 \(limits\.max_batch_jobs\)/);

    t.writeConfig(`${keys}[limits]\nmax_open_batches_per_key = 5\nmax_batch_jobs = 4000\n`);
    const from = lines.length;
    const report = await t.server.reload({ actor: 'signal:SIGHUP' });
    assert.equal(report.applied, true, 'no --allow-security-downgrade needed');
    assert.deepEqual(report.problems, []);
    assert.equal((await failure(call(t.client, t.client.enqueueBatch, { jobs }, ops()))).code, status.OK);
    const logged = lines
      .slice(from)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.event === 'config.reloaded');
    assert.equal(
      logged?.changed,
      'limits.max_batch_jobs 2 -> 4000',
      'the setting with its running and new value',
    );
    assert.ok(!lines.slice(from).some((l) => l.includes('config.security_downgraded')));
    const entry = (await t.server.engine.listAudit({ action: 'config.reload' })).items[0];
    assert.deepEqual(entry?.details.limits, [{ key: 'limits.max_batch_jobs', from: 2, to: 4000 }]);
    assert.equal(entry?.details.securityDowngrades, undefined);
  });

  test('the limits the message sizes are built around wait for a restart and keep their running value', async () => {
    t.writeConfig(
      `${keys}[limits]\nmax_open_batches_per_key = 5\nmax_batch_jobs = 4000\nmax_result_bytes = "1KiB"\n`,
    );
    const report = await reloadOverGrpc();
    assert.equal(report.applied, true);
    assert.deepEqual(report.changed, []);
    assert.deepEqual(report.restartRequired, ['limits.max_result_bytes']);
    assert.equal((await limitsOf())?.maxResultBytes, 64 * 1024);
    assert.equal(t.server.config().engine.limits.maxResultBytes, 64 * 1024);
    // The admin UI's Configuration page: values in force, the restart-only ones marked.
    const page = await fetch(t.metricsUrl.replace('/metrics', '/api/v1/config'));
    assert.equal(page.status, 200);
    const { entries } = (await page.json()) as {
      entries: { key: string; value: string; restartRequired: boolean }[];
    };
    const shown = (key: string) => entries.find((e) => e.key === key);
    assert.deepEqual(
      [shown('limits.max_batch_jobs')?.value, shown('limits.max_batch_jobs')?.restartRequired],
      ['4000', false],
    );
    assert.deepEqual(
      [shown('limits.max_result_bytes')?.value, shown('limits.max_result_bytes')?.restartRequired],
      ['64KiB', true],
    );
  });

  test('grpc.max_event_subscribers_per_key too: open streams above a lowered share stay; the next is refused, then let in', async () => {
    /** An Events stream of the ops key; `next()` resolves with its next message, or its refusal. */
    const open = () => {
      const stream = t.client.events(EventsRequest.fromPartial({}), ops());
      let waiting: ((outcome: 'data' | ServiceError) => void) | undefined;
      const next = () => new Promise<'data' | ServiceError>((resolve) => (waiting = resolve));
      stream.on('data', () => waiting?.('data'));
      stream.on('error', (e: ServiceError) => waiting?.(e));
      return { stream, next };
    };
    const limits = 'max_open_batches_per_key = 5\nmax_batch_jobs = 4000\nmax_result_bytes = "1KiB"\n';
    const held = [open(), open()];
    for (const s of held) assert.equal(await s.next(), 'data', 'caught up');

    t.writeConfig(`${keys}[grpc]\nmax_event_subscribers_per_key = 1\n[limits]\n${limits}`);
    const lowered = await reloadOverGrpc();
    assert.deepEqual(lowered.changed, ['grpc.max_event_subscribers_per_key']);
    assert.equal((await limitsOf())?.maxEventSubscribersPerKey, 1);
    const refused = await open().next();
    assert.ok(refused !== 'data');
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED);
    assert.match(
      refused.details,
      /key ops holds 2 event subscriptions .*, the limit per key is 1 \(grpc\.max_event_subscribers_per_key\)/,
    );
    // The two streams held above the lowered share still get the next event.
    const nextEvents = held.map((s) => s.next());
    await call(t.client, t.client.enqueue, { job: testJob('rl') }, ops());
    assert.deepEqual(await Promise.all(nextEvents), ['data', 'data']);

    t.writeConfig(`${keys}[grpc]\nmax_event_subscribers_per_key = 3\n[limits]\n${limits}`);
    assert.deepEqual((await reloadOverGrpc()).changed, ['grpc.max_event_subscribers_per_key']);
    const third = open();
    assert.equal(await third.next(), 'data', 'raised, the next stream gets in');
    for (const s of [...held, third]) s.stream.cancel();
  });

  test('a run-time queue setting is checked against the limits in force', async () => {
    const longType = 't'.repeat(150);
    const setTypes = () =>
      failure(
        call(
          t.client,
          t.client.setQueueSettings,
          { queue: 'rl', settings: { allowed_types: JSON.stringify([longType]) } },
          ops(),
        ),
      );
    const refused = await setTypes();
    assert.equal(refused.code, status.INVALID_ARGUMENT);
    assert.match(refused.details, /longer than limits\.max_name_length \(128 characters\)/);
    t.writeConfig(`${keys}[limits]\nmax_name_length = 200\n`);
    assert.equal((await reloadOverGrpc()).applied, true);
    assert.equal((await setTypes()).code, status.OK);
  });

  test("a queue's max_payload_bytes raised in the file is checked against the running grpc.max_message_bytes", async () => {
    const runningBytes = t.server.config().grpc.maxMessageBytes;
    // Alone, the file would start: grpc.max_message_bytes unset grows to fit it. But it runs
    // at its start value until a restart, so the reload is refused as such a start would be.
    await refusedPastRunningSize(t, reloadOverGrpc, {
      head: `${keys}[limits]\nmax_name_length = 200\n`,
      key: 'grpc.max_message_bytes',
      runningBytes,
      tooBigMiB: 16,
      fitsMiB: 2,
      sentAs: ' ',
    });
  });
});

describe('payload limits on a reload, against the running HTTP API', () => {
  let t: TestServer;
  const reload = () => reloadOf(t);
  // gRPC messages large enough for the payloads below: only the HTTP API's size can refuse them.
  const grpc = '[grpc]\nmax_message_bytes = "32MiB"\n';

  before(async () => {
    t = await startTestServer({ toml: `${keys}${grpc}`, http: true });
  });
  after(() => t.dispose());

  test("a queue's max_payload_bytes raised in the file is checked against the running http.max_request_bytes", async () => {
    const runningBytes = t.server.config().http.maxRequestBytes;
    // Alone, the file would start: http.max_request_bytes unset grows to fit the payload as base64.
    await refusedPastRunningSize(t, reload, {
      head: `${keys}${grpc}`,
      key: 'http.max_request_bytes',
      runningBytes,
      tooBigMiB: 8,
      fitsMiB: 4,
      sentAs: ' sent as base64 ',
    });
  });
});

/**
 * Raises queue `big`'s max_payload_bytes past what the running message size `key` holds:
 * the reload is refused as a start with that size would be, and changes nothing; a payload
 * limit that fits the running size applies.
 */
async function refusedPastRunningSize(
  t: TestServer,
  reload: () => Promise<ReloadConfigResponse>,
  sized: {
    head: string;
    key: string;
    runningBytes: number;
    tooBigMiB: number;
    fitsMiB: number;
    sentAs: string;
  },
): Promise<void> {
  const { head, key, runningBytes, tooBigMiB, fitsMiB, sentAs } = sized;
  t.writeConfig(`${head}[queues.big]\nmax_payload_bytes = "${tooBigMiB}MiB"\n`);
  const refused = await reload();
  assert.equal(refused.applied, false);
  assert.deepEqual(
    refused.problems.map((p) => p.key),
    [key],
  );
  const escapedKey = key.replace(/\./g, '\\.');
  assert.match(
    refused.problems[0]?.message ?? '',
    new RegExp(
      `^${runningBytes} is too small for the largest payload \\(queues\\.big\\.max_payload_bytes = ${tooBigMiB * 1024 * 1024}\\)${sentAs}` +
        `.*set it to at least \\d+ or lower that payload limit \\(the server runs with ${escapedKey} = ${runningBytes} until it restarts\\)$`,
    ),
  );
  assert.equal(t.server.config().engine.queues.big, undefined, 'nothing changed');
  t.writeConfig(`${head}[queues.big]\nmax_payload_bytes = "${fitsMiB}MiB"\n`);
  assert.equal((await reload()).applied, true);
  assert.equal(t.server.config().engine.queues.big?.maxPayloadBytes, fitsMiB * 1024 * 1024);
}
