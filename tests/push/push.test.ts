/**
 * Push delivery against a real local receiver: each answer and what it does
 * to the job — 200 acks (its body the result), 500 and a closed connection
 * retry with the backoff, 429's Retry-After sets the delay, a hang times out,
 * a redirect is not followed, a body past limits.max_result_bytes is not
 * kept — every request signed; targets on non-public addresses refused unless
 * allowed; a cancel stops a delivery; max_leased bounds the deliveries open;
 * a reload switches the target; the admin API and /metrics show it all; a batch
 * member's delivery carries its lease's token, with which it adds to its sealed batch.
 * Every job ends completed or dead.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JobInfo } from '../../src/engine/types.ts';
import { type Answer, ok, type Receiver, startReceiver } from '../helpers/push-receiver.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const secret = 'push-test-secret-7d1e0c9a5b';
registerSecret('push signing secret', secret);

/** Polls the job until `done` says so (real deliveries take real time), at most `timeoutMs`. */
async function jobUntil(t: TestServer, jobId: string, done: (job: JobInfo) => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await t.server.engine.getJob(jobId);
    if (done(job)) return job;
    if (Date.now() > deadline)
      assert.fail(`job ${jobId} is ${job.state} (attempt ${job.attempt}): ${job.lastError}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pushToml = (queue: string, url: string, extra = '', timeout = '400ms') =>
  `[queues.${queue}]\nmax_attempts = 3\nbackoff_base_ms = 0\nbackoff_jitter = 0\ncompleted_retention_ms = "1h"\n${extra}` +
  `[queues.${queue}.push]\nurl = "${url}"\nsecret_env = "PUSH_SECRET"\ntimeout_ms = "${timeout}"\nallow_private_targets = true\n`;

describe('push delivery', () => {
  let receiver: Receiver;
  let t: TestServer;
  const enqueue = async (payload: unknown = { n: 1 }) =>
    (
      await t.server.engine.enqueue({
        queue: 'hooks',
        type: 'notify',
        payload: Buffer.from(JSON.stringify(payload)),
        contentType: 'application/json',
        metadata: { tenant: 'acme' },
      })
    ).jobId;

  before(async () => {
    receiver = await startReceiver(secret);
    t = await startTestServer({
      env: { PUSH_SECRET: secret },
      toml:
        pushToml('hooks', receiver.url) +
        // A loopback target without the switch: refused.
        '[queues.guarded]\nmax_attempts = 1\n[queues.guarded.push]\nurl = "http://localhost:9/x"\nsecret_env = "PUSH_SECRET"\n',
    });
  });
  after(async () => {
    await t?.dispose();
    await receiver?.close();
  });

  test('a 2xx acks the job; its body becomes the result; the request is signed and carries the job', async () => {
    receiver.answer = (_d, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"sent": 12345678901234567890}');
    };
    const jobId = await enqueue({ to: 'a@example.com' });
    const job = await jobUntil(t, jobId, (j) => j.state === 'completed');
    assert.equal(job.result?.toString(), '{"sent": 12345678901234567890}');
    assert.equal(job.resultContentType, 'application/json');
    const delivery = receiver.deliveries.find((d) => d.json.jobId === jobId);
    assert.ok(delivery !== undefined);
    assert.equal(delivery.signed, true, 'the signature verifies with the secret');
    assert.deepEqual(delivery.json.payload, { to: 'a@example.com' });
    assert.deepEqual(delivery.json.metadata, { tenant: 'acme' });
    assert.equal(delivery.json.attempt, 1);
    assert.equal(delivery.json.batchId, null, 'no batch');
    assert.equal(delivery.headers['sepp-job-id'], jobId);
    assert.equal(delivery.headers['sepp-attempt'], '1');
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.match(String(delivery.headers['user-agent']), /^sepp-push\//);
    assert.match(String(delivery.headers['sepp-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
  });

  test("a producer's tracestate that is no header value is left out of the request, not its delivery (attack8)", async () => {
    receiver.answer = ok;
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const delivered = async (tracestate: string) => {
      const { jobId } = await t.server.engine.enqueue({
        queue: 'hooks',
        type: 'notify',
        payload: Buffer.from('{}'),
        traceparent,
        tracestate,
      });
      await jobUntil(t, jobId, (j) => j.state === 'completed');
      return receiver.deliveries.find((d) => d.json.jobId === jobId)?.headers;
    };
    // A line break, a control character, a character beyond Latin-1: Node refuses each in a header.
    for (const tracestate of ['vendor=a\r\nx-injected: 1', 'vendor=a\u0001', 'vendor=\u20ac']) {
      const headers = await delivered(tracestate);
      assert.equal(headers?.traceparent, traceparent, JSON.stringify(tracestate));
      assert.equal(headers?.tracestate, undefined, JSON.stringify(tracestate));
      assert.equal(headers?.['x-injected'], undefined);
    }
    assert.equal((await delivered('vendor=opaque,other=1'))?.tracestate, 'vendor=opaque,other=1');
  });

  test("a batch member is delivered with its batch id and its lease's token, which adds to its sealed batch", async () => {
    const notify = {
      queue: 'hooks',
      type: 'notify',
      payload: Buffer.from('{}'),
      contentType: 'application/json',
    };
    const { batch, results } = await t.server.engine.createBatch({ jobs: [notify], seal: true });
    const [added] = results;
    assert.ok(added?.ok);
    // The endpoint fans out while its delivery is open, as a worker's handler does (docs/http.md).
    let fannedOut: Promise<unknown> = Promise.resolve();
    let childId: string | undefined;
    receiver.answer = (d, res) => {
      const add = (memberToken: string | undefined) =>
        t.server.engine.addToBatch(batch.id, [{ ...notify, type: 'child' }], {
          fromMember: d.json.jobId,
          memberToken,
        });
      fannedOut =
        d.json.jobId !== added.jobId
          ? Promise.resolve()
          : assert
              .rejects(add('not-the-token'), /permission_denied|not the token/)
              .then(() => add(d.json.leaseToken ?? undefined))
              .then((answer) => {
                const [child] = answer.results;
                assert.ok(child?.ok);
                childId = child.jobId;
              });
      fannedOut.then(
        () => res.writeHead(204).end(),
        () => res.writeHead(500).end(),
      );
    };
    await jobUntil(t, added.jobId, (j) => j.state === 'completed');
    await fannedOut;
    const delivery = receiver.deliveries.find((d) => d.json.jobId === added.jobId);
    assert.equal(delivery?.json.batchId, batch.id);
    assert.match(String(delivery?.json.leaseToken), /^[\w-]{16,}$/);
    const { batch: read } = await t.server.engine.getBatch(batch.id);
    assert.equal(read.members, 2, 'the member added one job to its sealed batch');
    assert.ok(childId !== undefined);
    // Delivered too, before the next test answers otherwise.
    await jobUntil(t, childId, (j) => j.state === 'completed');
  });

  test('a 500 is a failed attempt, retried with the backoff; the next attempt carries attempt 2', async () => {
    let calls = 0;
    receiver.answer = (d, res) => {
      calls++;
      if (d.json.attempt === 1) {
        res.writeHead(500);
        res.end('boom');
      } else ok(d, res, d as never);
    };
    const jobId = await enqueue();
    const job = await jobUntil(t, jobId, (j) => j.state === 'completed');
    assert.equal(job.attempt, 2);
    assert.deepEqual(
      job.errors.map((e) => e.error),
      [`HTTP 500 from ${receiver.url}: boom`],
    );
    assert.ok(calls >= 2);
  });

  test("a 429's Retry-After sets the retry's delay", async () => {
    receiver.answer = (d, res) => {
      if (d.json.attempt === 1) {
        res.writeHead(429, { 'retry-after': '2' });
        res.end();
      } else ok(d, res, d as never);
    };
    const jobId = await enqueue();
    const scheduled = await jobUntil(t, jobId, (j) => j.state === 'scheduled');
    const failedAt = scheduled.errors[0]?.atMs ?? 0;
    assert.ok(Math.abs(scheduled.runAtMs - failedAt - 2000) < 200, `${scheduled.runAtMs - failedAt} ms`);
    const done = await jobUntil(t, jobId, (j) => j.state === 'completed');
    assert.equal(done.attempt, 2);
  });

  test('a hang times out and a closed connection fails; attempts run out into the dead letters', async () => {
    receiver.answer = (d, res, socket) => {
      if (d.json.attempt === 1) return; // never answers: timeout_ms is 400 ms
      if (d.json.attempt === 2) {
        socket.destroy();
        return;
      }
      res.writeHead(302, { location: 'http://example.com/' });
      res.end();
    };
    const jobId = await enqueue();
    const dead = await jobUntil(t, jobId, (j) => j.state === 'dead');
    assert.equal(dead.deadReason, 'attempts_exhausted');
    const errors = dead.errors.map((e) => e.error);
    assert.match(errors[0] ?? '', /no answer from .* within 400 ms \(queues\.hooks\.push\.timeout_ms\)/);
    assert.match(errors[1] ?? '', /connection to .* failed: ECONNRESET|socket hang up/);
    assert.match(errors[2] ?? '', /HTTP 302 from .* \(redirects are not followed\)/);
  });

  test('a target on a loopback address is refused unless allow_private_targets, checked on what the name resolves to', async () => {
    const { jobId } = await t.server.engine.enqueue({
      queue: 'guarded',
      type: 't',
      payload: Buffer.alloc(0),
    });
    const dead = await jobUntil(t, jobId, (j) => j.state === 'dead');
    assert.match(
      dead.lastError ?? '',
      /refused to connect: localhost resolves to 127\.0\.0\.1 is a loopback, private, link-local or otherwise non-public address \(queues\.guarded\.push\.allow_private_targets\)/,
    );
  });

  test('an answer larger than limits.max_result_bytes acks without a result, counted', async () => {
    receiver.answer = (_d, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(70 * 1024));
    };
    const jobId = await enqueue();
    const job = await jobUntil(t, jobId, (j) => j.state === 'completed');
    assert.equal(job.result, null);
    const status = await fetch(`http://127.0.0.1:${t.server.adminPort}/api/v1/queues/hooks/push`).then((r) =>
      r.json(),
    );
    assert.ok((status as { resultsDropped: number }).resultsDropped >= 1);
  });

  test('cancelling a job stops its delivery; the job ends cancelled', async () => {
    const holding: (() => void)[] = [];
    receiver.answer = (_d, res) => holding.push(() => ok(_d, res, _d as never));
    const before = receiver.deliveries.length;
    const jobId = await enqueue();
    await receiver.waitFor(before + 1);
    const result = await t.server.engine.cancel(jobId);
    assert.equal(result.state, 'leased');
    const job = await jobUntil(t, jobId, (j) => j.state === 'cancelled');
    assert.equal(job.attempt, 1);
    for (const answer of holding) answer();
  });

  test('the admin API shows the endpoint, the last errors and the latency; /metrics counts outcomes', async () => {
    const status = (await fetch(`http://127.0.0.1:${t.server.adminPort}/api/v1/queues/hooks/push`).then((r) =>
      r.json(),
    )) as {
      url: string;
      running: boolean;
      delivered: number;
      failed: number;
      lastErrors: { error: string }[];
      latency: { samples: number; p50Ms: number } | null;
    };
    assert.equal(status.url, receiver.url);
    assert.equal(status.running, true);
    assert.ok(status.delivered >= 4, String(status.delivered));
    assert.ok(status.failed >= 4, String(status.failed));
    assert.ok(status.lastErrors.some((e) => e.error.includes('HTTP 500')));
    assert.ok(status.latency !== null && status.latency.samples >= 8);
    const none = await fetch(`http://127.0.0.1:${t.server.adminPort}/api/v1/queues/guarded/push`).then((r) =>
      r.json(),
    );
    assert.notEqual(none, null, 'guarded pushes too');
    const metrics = await fetch(t.metricsUrl).then((r) => r.text());
    for (const outcome of [
      'ok',
      'http_status',
      'rate_limited',
      'timeout',
      'connection_error',
      'refused_target',
    ]) {
      assert.match(
        metrics,
        new RegExp(`sepp_push_deliveries_total\\{[^}]*sepp_push_outcome="${outcome}"[^}]*\\} [1-9]`),
        outcome,
      );
    }
    assert.match(metrics, /sepp_push_duration_count\{/);
    const counts = (await t.server.engine.listQueues()).find((q) => q.name === 'hooks')?.counts;
    assert.equal(
      (counts?.ready ?? 0) + (counts?.leased ?? 0) + (counts?.scheduled ?? 0),
      0,
      'every job ended',
    );
  });
});

describe('push delivery: flow control and reload', () => {
  test('max_leased bounds the deliveries open; a reload moves the target and a removed table stops pushing', async () => {
    const held: (() => void)[] = [];
    const hold: Answer = (d, res) => held.push(() => ok(d, res, d as never));
    const first = await startReceiver(secret, hold);
    const second = await startReceiver(secret);
    const t = await startTestServer({
      env: { PUSH_SECRET: secret },
      toml: pushToml('flow', first.url, 'max_leased = 2\n', '20s'),
    });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        ids.push(
          (await t.server.engine.enqueue({ queue: 'flow', type: 't', payload: Buffer.from('{}') })).jobId,
        );
      }
      await first.waitFor(2);
      // Held answers: the queue's max_leased (2) is what the pusher gets, whatever max_in_flight (64) allows.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(first.deliveries.length, 2);
      assert.equal(first.maxOpen, 2);
      t.writeConfig(pushToml('flow', second.url, 'max_leased = 2\n', '20s'));
      const report = await t.server.reload();
      assert.ok(report.changed.includes('queues.flow.push.url'), report.changed.join());
      for (const release of held.splice(0)) release();
      await second.waitFor(4);
      for (const id of ids) await jobUntil(t, id, (j) => j.state === 'completed');
      assert.equal(first.deliveries.length, 2, 'after the reload nothing more went to the old target');

      t.writeConfig('[queues.flow]\nmax_leased = 2\n');
      await t.server.reload();
      const { jobId } = await t.server.engine.enqueue({
        queue: 'flow',
        type: 't',
        payload: Buffer.from('{}'),
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await t.server.engine.getJob(jobId)).state, 'ready', 'no pusher any more');
      assert.equal(
        await fetch(`http://127.0.0.1:${t.server.adminPort}/api/v1/queues/flow/push`).then((r) => r.json()),
        null,
      );
    } finally {
      await t.dispose();
      await first.close();
      await second.close();
    }
  });
});
