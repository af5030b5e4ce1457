/**
 * Telemetry as the composition root holds it: the engine hooks taken once keep counting
 * into the metrics a reload rebuilds; OpenTelemetry's own warnings reach the log one line
 * per distinct message and minute, saying how often they repeated. Answers sent beyond their
 * room (telemetry/answer-metrics.ts): the budgets of gRPC's unary answers (rpc/unsent-answers.ts)
 * and the HTTP API's (http/unsent-answers.ts) driven into an overdraft, as their own tests do,
 * counted by door.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TelemetryConfig } from '../../src/config/index.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { UnsentAnswers as HttpAnswers } from '../../src/http/unsent-answers.ts';
import { UnsentAnswers as GrpcAnswers } from '../../src/rpc/unsent-answers.ts';
import { type Logger, silentLogger } from '../../src/telemetry/logger.ts';
import { otelDiagnostics } from '../../src/telemetry/otel-diagnostics.ts';
import { Telemetry } from '../../src/telemetry/telemetry.ts';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.ts';

const config: TelemetryConfig = {
  otlpEndpoint: null,
  serviceName: 'sepp',
  tracesSampleRatio: 1,
  metricsExportIntervalMs: 60_000,
  metricsTokenSha256: null,
};

function recordingLogger(): { logger: Logger; lines: { level: string; event: string; fields: object }[] } {
  const lines: { level: string; event: string; fields: object }[] = [];
  const at =
    (level: string) =>
    (event: string, fields: object = {}) =>
      lines.push({ level, event, fields });
  return {
    lines,
    logger: {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      enabled: () => true,
    },
  };
}

test('the engine hooks are made once and count into the metrics a reload rebuilds', async () => {
  const telemetry = await Telemetry.open(config, {
    logger: recordingLogger().logger,
    storeFiles: undefined,
    version: 'test',
  });
  try {
    const hooks = telemetry.engineHooks;
    assert.equal(
      telemetry.engineHooks,
      hooks,
      'the same hooks on every read: no closures made per job event',
    );
    const enqueued = async () =>
      sampleValue(parsePrometheus(await telemetry.metricsText()), 'sepp_jobs_enqueued_total', {
        sepp_queue: 'q',
      });
    hooks.onEvent({ kind: 'enqueued', queue: 'q', count: 2 });
    assert.equal(await enqueued(), 2);
    // A new service name rebuilds the metrics (they start from zero, as after a restart).
    assert.equal(await telemetry.reconfigure({ ...config, serviceName: 'sepp-renamed' }), true);
    assert.equal(await enqueued(), undefined);
    hooks.onEvent({ kind: 'enqueued', queue: 'q', count: 3 });
    assert.equal(await enqueued(), 3, 'the hooks taken before the reload count into the new metrics');
  } finally {
    await telemetry.shutdown(0);
  }
});

test("OpenTelemetry's warnings: one line per distinct message and minute, with the repeats it stands for", () => {
  const { logger, lines } = recordingLogger();
  let nowMs = 1_000;
  const diag = otelDiagnostics(logger, () => nowMs);
  const down = new Error('connect ECONNREFUSED 127.0.0.1:4318');
  diag.error('export failed', down);
  diag.error('export failed', down);
  diag.warn('payload rejected');
  nowMs += 59_999;
  diag.error('export failed', down);
  nowMs += 1;
  diag.error('export failed', down);
  diag.info('not logged');
  assert.deepEqual(lines, [
    {
      level: 'error',
      event: 'otel.export_problem',
      fields: { detail: 'export failed connect ECONNREFUSED 127.0.0.1:4318' },
    },
    { level: 'warn', event: 'otel.export_problem', fields: { detail: 'payload rejected' } },
    {
      level: 'error',
      event: 'otel.export_problem',
      fields: { detail: 'export failed connect ECONNREFUSED 127.0.0.1:4318', repeats: 3 },
    },
  ]);
});

test('a gauge that keeps failing: one line per distinct problem and minute, with the repeats it stands for', async () => {
  const { logger, lines } = recordingLogger();
  let nowMs = 1_000;
  const telemetry = await Telemetry.open(config, {
    logger,
    storeFiles: undefined,
    version: 'test',
    nowMs: () => nowMs,
  });
  try {
    const broken = (): Promise<never> => Promise.reject(new Error('the database is closed'));
    telemetry.observe({
      queueCounts: broken,
      describeQueues: broken,
      batchesOpen: broken,
      waitingReserves: 0,
      readQueue: null,
      eventBacklog: { subscribers: 0, events: 0, bytes: 0 },
      diskIsFull: false,
    });
    await telemetry.metricsText();
    await telemetry.metricsText();
    nowMs += 60_000;
    await telemetry.metricsText();
    const failed = lines
      .filter((line) => line.event === 'metrics.collect_failed')
      .map((line) => line.fields)
      .map((fields) => JSON.stringify(fields))
      .sort();
    const line = (metric: string, repeats?: number) =>
      JSON.stringify({
        metric,
        error: 'the database is closed',
        ...(repeats === undefined ? {} : { repeats }),
      });
    assert.deepEqual(
      failed,
      [
        line('sepp.batches.open'),
        line('sepp.batches.open', 2),
        line('sepp.queue.depth'),
        line('sepp.queue.depth', 2),
      ].sort(),
    );
  } finally {
    await telemetry.shutdown(0);
  }
});

test('answers sent beyond their room are counted by door, through a rebuild of the metrics', async () => {
  const telemetry = await Telemetry.open(config, {
    logger: silentLogger,
    storeFiles: undefined,
    version: 'test',
  });
  const grpc = new GrpcAnswers({
    maxBytesInFlightPerConnection: 100,
    maxBytesInFlightPerKey: 100,
    maxMessageBytes: 30,
  });
  const http = new HttpAnswers({ maxInFlightBytes: 1000, maxInFlightBytesPerKey: 100 });
  telemetry.observeAnswers(() => ({ beyondRoom: { grpc: grpc.stats().overdrawn, http: http.overdrawn } }));
  const beyondRoom = async () => {
    const samples = parsePrometheus(await telemetry.metricsText());
    return ['grpc', 'http'].map((door) =>
      sampleValue(samples, 'sepp_answers_beyond_room_total', { sepp_door: door }),
    );
  };
  try {
    assert.deepEqual(await beyondRoom(), [0, 0]);

    // gRPC: three calls let in together on guesses of 30 bytes; the two reads answer 45 each,
    // and the Enqueue's 20 no longer fits: it is sent all the same (it enqueued), overdrawing.
    const calls = ['GetJob', 'GetJob', 'Enqueue'].map((method) => {
      const call = grpc.follow(undefined, 'k', `/sepp.v1.QueueService/${method}`);
      call.admit(() => {});
      return call;
    });
    assert.deepEqual(
      calls.map((call, i) => call.hold([45, 45, 20][i] ?? 0)),
      [null, null, null],
    );
    assert.deepEqual(await beyondRoom(), [1, 0]);

    // HTTP: a write that answers more than the room it reserved (a wrong bound), past a full budget.
    const room = (operation: string) => {
      const admitted = http.admit('k', operation, false);
      assert.ok(!(admitted instanceof SeppError), operation);
      return admitted;
    };
    assert.equal(room('POST /v1/reserve').hold(60), null);
    const write = room('POST /v1/jobs/batch');
    assert.equal(write.reserve(10), null);
    assert.equal(write.hold(80), null, 'sent: its request changed something');
    assert.deepEqual(await beyondRoom(), [1, 1]);

    // A new service name rebuilds the metrics: the counts are the budgets', read anew.
    assert.equal(await telemetry.reconfigure({ ...config, serviceName: 'sepp-renamed' }), true);
    assert.deepEqual(await beyondRoom(), [1, 1]);
  } finally {
    await telemetry.shutdown(0);
  }
});
