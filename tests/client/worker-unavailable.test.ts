/**
 * `maxUnavailableMs`: a Worker gives up when the server stays unreachable that
 * long, measured on its clock (a fake one here) from the first failure of an
 * outage and started over by a successful reconnection; without it, it keeps
 * trying. A real server goes away, comes back on the same port and goes away
 * again, under a worker of each transport. The Python SDK's test of the same
 * option is in clients/python/tests/test_worker_lifecycle.py.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppClient, SeppError, type Worker, type WorkerLogger } from '../../clients/typescript/src/index.ts';
import { healthyAfterMs } from '../../clients/typescript/src/work-transport.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from './helpers.ts';

const limitMs = 3000;
/** Every reconnect waits 500–1000 ms (equal jitter): one attempt per second of the fake clock. */
const stepMs = 1000;

interface Watched {
  worker: Worker;
  errors: SeppError[];
  lines: { level: string; message: string }[];
}

test('Worker: maxUnavailableMs stops past the limit, a reconnect starts it over, undefined keeps trying', async () => {
  const clock = new FakeClock(Date.UTC(2026, 11, 7));
  let t: TestServer = await startTestServer();
  const port = t.server.grpcPort;
  // No call retries: a unary worker's Reserve would retry UNAVAILABLE itself (retrySafe) and hide the outage.
  const client = SeppClient.connect(t.address);
  const watch = (transport: 'stream' | 'unary', queue: string, maxUnavailableMs?: number): Watched => {
    const lines: Watched['lines'] = [];
    const at = (level: string) => (message: string) => void lines.push({ level, message });
    const logger: WorkerLogger = { info: at('info'), warn: at('warn'), error: at('error') };
    const worker = client.worker({
      queues: [queue],
      transport,
      clock,
      logger,
      reconnect: { baseDelayMs: stepMs, maxDelayMs: stepMs },
      fallback: () => undefined,
      ...(maxUnavailableMs === undefined ? {} : { maxUnavailableMs }),
    });
    const errors: SeppError[] = [];
    worker.on('error', (error) => void errors.push(error));
    return { worker, errors, lines };
  };
  const limited = [watch('stream', 'unavail-stream', limitMs), watch('unary', 'unavail-unary', limitMs)];
  const unlimited = watch('stream', 'unavail-forever');
  const all = [...limited, unlimited];

  /** A job for each limited worker. */
  const enqueueEach = () =>
    Promise.all(['unavail-stream', 'unavail-unary'].map(async (q) => (await client.enqueue(q, 't')).id));
  /** Waits (in real time: grpc-js backs off before it connects again) until the client's channel is up. */
  const channelUp = async () => {
    for (let tries = 1; ; tries++) {
      try {
        await client.listQueues();
        return;
      } catch (error) {
        if (tries === 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const completed = async (ids: string[], what: string) => {
    for (const id of ids) {
      await until(async () => (await client.getJob(id)).state === 'completed', `${what}: job ${id}`);
    }
  };
  /** Moves the clock a step; every worker still running fails its next attempt. */
  const failedStep = async (what: string) => {
    const seen = all.map(({ errors }) => errors.length);
    const running = all.map(({ worker }) => worker.state === 'running');
    clock.advance(stepMs);
    await until(() => all.every(({ errors }, i) => !running[i] || errors.length > seen[i]!), what);
  };
  /** The server goes away: every worker's stream or long poll fails at once (the outage's first failure). */
  const serverGone = async (what: string) => {
    const seen = all.map(({ errors }) => errors.length);
    await t.dispose();
    await until(() => all.every(({ errors }, i) => errors.length > seen[i]!), what);
  };
  const assertRunning = (what: string) => {
    for (const { worker, lines } of all) {
      assert.equal(worker.state, 'running', `${what}: ${JSON.stringify(lines)}`);
    }
  };

  try {
    await completed(await enqueueEach(), 'before the outage');
    await serverGone('the first outage noticed');
    await failedStep('first outage, 1 s');
    await failedStep('first outage, 2 s');
    assertRunning('2 s into the first outage');

    // Back on the same port; once the channel is up, the workers' next attempts succeed.
    t = await startTestServer({ grpcPort: port });
    await channelUp();
    const ids = await enqueueEach();
    clock.advance(stepMs);
    await completed(ids, 'after the first outage');
    for (const { lines } of limited) {
      assert.ok(
        lines.some((l) => l.level === 'info' && /connected to sepp at .* again after 3\.0 s/.test(l.message)),
        JSON.stringify(lines),
      );
    }

    // A Work stream that brings no job counts as connected once open a second on a connected channel
    // (it reopened 2.5–3 s into the outage: the reconnect's jitter).
    assert.ok(!unlimited.lines.some((l) => /connected to sepp/.test(l.message)), 'not yet');
    clock.advance(healthyAfterMs);
    assert.ok(
      unlimited.lines.some(
        (l) => l.level === 'info' && /connected to sepp at .* again after (3\.[5-9]|4\.0) s/.test(l.message),
      ),
      JSON.stringify(unlimited.lines),
    );

    // The second outage: the first's 3 s (2 s of failures and a 1 s step to reconnect) no longer count.
    await serverGone('the second outage noticed');
    for (let s = 1; s <= limitMs / stepMs; s++) await failedStep(`second outage, ${s} s`);
    assertRunning('3 s into the second outage: not past the limit');

    await failedStep('second outage, 4 s');
    for (const { worker, errors, lines } of limited) {
      const ended = await worker.wait().then(
        () => 'closed without an error',
        (error: unknown) => error,
      );
      assert.ok(ended instanceof SeppError, String(ended));
      assert.equal(ended.code, 'unavailable');
      assert.match(
        ended.message,
        /^sepp at 127\.0\.0\.1:\d+ was unreachable for 4\.0 s, longer than maxUnavailableMs \(3000\); last error: /,
      );
      assert.equal(errors.at(-1), ended, 'the stop is the last error event');
      const said = lines.filter((l) => l.level === 'error');
      assert.equal(said.length, 1, JSON.stringify(lines));
      assert.match(said[0]?.message ?? '', / stopped: sepp at .* was unreachable for 4\.0 s/);
      assert.equal(worker.state, 'closed');
    }
    // Without the option the worker keeps trying however long the outage.
    for (let s = 0; s < 3; s++) await failedStep(`unlimited, ${5 + s} s`);
    assert.equal(unlimited.worker.state, 'running');
  } finally {
    await Promise.all(all.map(({ worker }) => worker.close({ timeoutMs: 0 })));
    await client.close();
    await t.dispose();
  }
});

test('Worker: maxUnavailableMs counts only while every stream fails', async () => {
  // One long poll at a time: of a worker's two Work streams, one waits for jobs, the other is refused.
  const t = await startTestServer({ toml: '[limits]\nmax_waiters = 1\n' });
  const client = SeppClient.connect(t.address);
  const clock = new FakeClock(Date.UTC(2026, 11, 7));
  const worker = client.worker({
    queues: ['half'],
    concurrency: 2,
    streams: 2,
    clock,
    maxUnavailableMs: 2000,
    reconnect: { baseDelayMs: stepMs, maxDelayMs: stepMs },
    fallback: () => undefined,
    logger: { info() {}, warn() {}, error() {} },
  });
  const errors: SeppError[] = [];
  worker.on('error', (error) => void errors.push(error));
  try {
    await client.enqueue('half', 'later', undefined, { delayMs: 3_600_000 }); // the queue exists, nothing ready
    await until(() => errors.length > 0, 'the second stream refused');
    for (let s = 1; s <= 4; s++) {
      const seen = errors.length;
      clock.advance(stepMs); // the first stream has been open a second: connected
      await until(() => errors.length > seen, `refused again, ${s} s`);
    }
    assert.ok(
      errors.every((e) => e.code === 'resource_exhausted' && /limits\.max_waiters/.test(e.message)),
      errors.map((e) => e.message).join('\n'),
    );
    assert.equal(worker.state, 'running', 'one stream of two still works: 4 s of refusals are no outage');
  } finally {
    await worker.close({ timeoutMs: 0 });
    await client.close();
    await t.dispose();
  }
});

test('Worker: maxUnavailableMs is a positive integer number of ms', async () => {
  const client = SeppClient.connect('127.0.0.1:1');
  try {
    for (const maxUnavailableMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(
        () => client.worker({ queues: ['q'], fallback: () => undefined, maxUnavailableMs, autostart: false }),
        { name: 'TypeError', message: /maxUnavailableMs must be a positive integer number of ms/ },
        String(maxUnavailableMs),
      );
    }
    const worker = client.worker({
      queues: ['q'],
      fallback: () => undefined,
      maxUnavailableMs: 1,
      autostart: false,
    });
    assert.equal(worker.state, 'idle');
    await worker.close();
  } finally {
    await client.close();
  }
});
