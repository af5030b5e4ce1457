/**
 * The HTTP/JSON API over a real socket: every producer and worker operation
 * and its answers — payloads as JSON (byte for byte) and base64, 64-bit
 * numbers as strings, rejections with their reasons, the lost-lease answers
 * (the codes gRPC carries in `sepp-error-code`), long-polls that wake up and
 * time out on the engine's (fake) clock, outcome waits, cancel.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { httpStatusOf as adminStatusOf } from '../../src/admin/http-errors.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import type { SeppErrorCode } from '../../src/engine/errors.ts';
import { httpStatusOf } from '../../src/http/errors.ts';
import { type ApiAnswer, apiCall, openSse } from '../helpers/http-api.ts';
import { call, startTestServer, type TestServer, waitersReach } from '../helpers/server.ts';

interface Leased {
  jobId: string;
  attempt: number;
  payload?: unknown;
  payloadBase64?: string;
  contentType: string;
  metadata: Record<string, string>;
  leaseDeadlineMs: number;
}
interface ErrorJson {
  error: { code: string; message: string; rejectionReason?: string };
}

/** Resolves once the engine has `n` event subscribers. */
async function subscribersReach(t: TestServer, n: number): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (t.server.engine.eventBacklog.subscribers === n) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`subscribers stayed at ${t.server.engine.eventBacklog.subscribers}, expected ${n}`);
}

function assertError(answer: ApiAnswer, status: number, code: string): ErrorJson['error'] {
  assert.equal(answer.status, status, answer.text);
  const { error } = answer.json as unknown as ErrorJson;
  assert.equal(error.code, code, answer.text);
  assert.equal(answer.headers['content-type'], 'application/json');
  return error;
}

describe('HTTP API', () => {
  let t: TestServer;
  let url: string;
  const clock = new FakeClock(Date.now());
  const post = <T = Record<string, unknown>>(path: string, body: unknown) => apiCall<T>(url, path, { body });
  const get = <T = Record<string, unknown>>(path: string) => apiCall<T>(url, path);
  const reserveOne = async (queue: string): Promise<Leased> => {
    const answer = await post<{ jobs: Leased[] }>('/v1/reserve', { queues: [queue] });
    assert.equal(answer.status, 200, answer.text);
    const job = answer.json.jobs[0];
    assert.ok(job !== undefined, `a job from ${queue}`);
    return job;
  };

  before(async () => {
    t = await startTestServer({
      http: true,
      clock,
      toml: '[queues.kept]\ncompleted_retention_ms = "1h"\n[queues.small]\nmax_payload_bytes = 16\nmax_depth = 1\n',
    });
    url = t.httpUrl;
  });
  after(() => t.dispose());

  test('the status table agrees with the admin API for every code both have', () => {
    for (const [code, status] of Object.entries(adminStatusOf)) {
      if (code in httpStatusOf) assert.equal(httpStatusOf[code as SeppErrorCode], status, code);
    }
  });

  test("server-info: version, clock, limits in force and features, as GetServerInfo's", async () => {
    const answer = await get<{
      version: string;
      serverTimeMs: number;
      limits: Record<string, number>;
      features: string[];
    }>('/v1/server-info');
    assert.equal(answer.status, 200, answer.text);
    const grpc = await call(t.client, t.client.getServerInfo, {});
    assert.equal(answer.json.version, grpc.version);
    assert.equal(answer.json.serverTimeMs, clock.nowMs());
    assert.deepEqual(answer.json.features, grpc.features);
    assert.ok(answer.json.features.includes('nack_give_back'), answer.text);
    assert.equal(answer.json.limits.maxBatchJobs, grpc.limits?.maxBatchJobs);
    assert.equal(answer.json.limits.maxReserveJobs, grpc.limits?.maxReserveJobs);
    assert.equal(answer.json.limits.maxRequestBytes, t.server.config().http.maxRequestBytes);
    // Nothing of where the server runs or its store.
    assert.deepEqual(Object.keys(answer.json).sort(), ['features', 'limits', 'serverTimeMs', 'version']);
  });

  test('a JSON payload is stored and handed out byte for byte: big integers, spacing, key order', async () => {
    const payload = '{ "z": 12345678901234567890123, "a": [1e400, 0.1], "s": "é\\u0000" }';
    const raw = `{"queue":"bytes","type":"t","payload":${payload}}`;
    const enqueued = await apiCall<{ jobId: string }>(url, '/v1/jobs', {
      raw,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(enqueued.status, 200, enqueued.text);
    const stored = await t.server.engine.getJob(enqueued.json.jobId);
    assert.equal(Buffer.from(stored.payload).toString('utf8'), payload);
    assert.equal(stored.contentType, 'application/json');
    const reserved = await apiCall(url, '/v1/reserve', { body: { queues: ['bytes'] } });
    assert.ok(reserved.text.includes(`"payload":${payload}`), reserved.text);
  });

  test('U+0000 in a text field is refused naming the field (in the payload it is data)', async () => {
    const refusals: [string, unknown, string][] = [
      ['/v1/jobs', { queue: 'nul', type: 'a\u0000b' }, 'type'],
      ['/v1/jobs', { queue: 'nul', type: 't', metadata: { k: 'v\u0000' } }, 'metadata'],
      ['/v1/reserve', { queues: ['nul\u0000'] }, 'queues[0]'],
    ];
    for (const [path, body, field] of refusals) {
      const error = assertError(await post(path, body), 400, 'invalid_argument');
      assert.ok(error.message.startsWith(`${field}: `), error.message);
      assert.match(error.message, /holds U\+0000 \(NUL\), which no text field may hold/);
    }
    assert.equal(
      (await t.server.engine.listQueues()).find((q) => q.name === 'nul'),
      undefined,
      'nothing stored',
    );
  });

  test('bytes travel as base64; a JSON content type with bytes that are not JSON comes back as base64', async () => {
    const bytes = Buffer.from([0, 1, 2, 254, 255]);
    const a = await post<{ jobId: string }>('/v1/jobs', {
      queue: 'b64',
      type: 't',
      payloadBase64: bytes.toString('base64'),
      contentType: 'application/octet-stream',
    });
    assert.equal(a.status, 200, a.text);
    await post('/v1/jobs', {
      queue: 'b64',
      type: 't',
      payloadBase64: Buffer.from('not json').toString('base64url'),
      contentType: 'application/json',
    });
    const first = await reserveOne('b64');
    assert.equal(first.payloadBase64, bytes.toString('base64'));
    assert.equal(first.payload, undefined);
    const second = await reserveOne('b64');
    assert.equal(Buffer.from(second.payloadBase64 ?? '', 'base64').toString(), 'not json');
    assertError(
      await post('/v1/jobs', { queue: 'b64', type: 't', payloadBase64: 'no*base64' }),
      400,
      'invalid_argument',
    );
    assertError(
      await post('/v1/jobs', { queue: 'b64', type: 't', payload: { a: 1 }, payloadBase64: 'AAAA' }),
      400,
      'invalid_argument',
    );
    const text = assertError(
      await post('/v1/jobs', { queue: 'b64', type: 't', payload: 'x', contentType: 'text/plain' }),
      400,
      'invalid_argument',
    );
    assert.match(text.message, /send other content as payloadBase64/);
  });

  test('64-bit numbers are accepted as numbers or strings; every field of a job comes back', async () => {
    const runAtMs = clock.nowMs() + 60_000;
    const enq = await post<{ jobId: string }>('/v1/jobs', {
      queue: 'fields',
      type: 'mail',
      payload: { to: 'a@example.com' },
      priority: '7',
      runAtMs: String(runAtMs),
      maxAttempts: 3,
      idempotencyKey: 'k-1',
      metadata: { team: 'ops' },
      ttlMs: '3600000',
      group: 'acme',
    });
    assert.equal(enq.status, 200, enq.text);
    const { job } = (await get<{ job: Record<string, unknown> }>(`/v1/jobs/${enq.json.jobId}`)).json;
    assert.equal(job.state, 'scheduled');
    assert.equal(job.priority, 7);
    assert.equal(job.runAtMs, runAtMs);
    assert.equal(job.maxAttempts, 3);
    assert.equal(job.idempotencyKey, 'k-1');
    assert.deepEqual(job.metadata, { team: 'ops' });
    assert.equal(job.group, 'acme');
    assert.deepEqual(job.payload, { to: 'a@example.com' });
    assert.equal(job.payloadBytes, JSON.stringify({ to: 'a@example.com' }).length);
    assert.equal(job.result, null);
    const again = await post<{ jobId: string; deduplicated: boolean }>('/v1/jobs', {
      queue: 'fields',
      type: 'mail',
      idempotencyKey: 'k-1',
    });
    assert.deepEqual(again.json, { jobId: enq.json.jobId, deduplicated: true, debounced: false });
    assertError(
      await post('/v1/jobs', { queue: 'fields', type: 't', runAtMs: 1, delayMs: 1 }),
      400,
      'invalid_argument',
    );
    assertError(
      await post('/v1/jobs', { queue: 'fields', type: 't', priority: 1.5 }),
      400,
      'invalid_argument',
    );
    assertError(
      await post('/v1/jobs', { queue: 'fields', type: 't', priority: '99999999999999999999' }),
      400,
      'invalid_argument',
    );
  });

  test('debounce: a second enqueue with the key is absorbed (debounced: true) and the job shows its key', async () => {
    const body = {
      queue: 'debounce',
      type: 't',
      debounceKey: 'doc',
      debounceMs: '5000',
      debounceMaxMs: 60_000,
    };
    const first = await post<{ jobId: string; deduplicated: boolean; debounced: boolean }>('/v1/jobs', {
      ...body,
      payload: { v: 1 },
    });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.debounced, false);
    const second = await post('/v1/jobs', { ...body, payload: { v: 2 } });
    assert.deepEqual(second.json, { jobId: first.json.jobId, deduplicated: false, debounced: true });
    const { job } = (await get<{ job: Record<string, unknown> }>(`/v1/jobs/${first.json.jobId}`)).json;
    assert.deepEqual(job.payload, { v: 2 });
    assert.equal(job.state, 'scheduled');
    assert.equal(job.debounceKey, 'doc');
    assert.equal(typeof job.debounceUntilMs, 'number');
    assertError(await post('/v1/jobs', { ...body, delayMs: 5 }), 400, 'invalid_argument');
  });

  test('a refused job answers its reason with the status gRPC uses, and stores nothing', async () => {
    const before = (await t.server.engine.listQueues()).find((q) => q.name === 'small')?.counts;
    const tooLarge = assertError(
      await post('/v1/jobs', { queue: 'small', type: 't', payload: 'x'.repeat(100) }),
      400,
      'invalid_argument',
    );
    assert.equal(tooLarge.rejectionReason, 'payload_too_large');
    assert.equal(
      assertError(await post('/v1/jobs', { queue: 'bad name', type: 't' }), 400, 'invalid_argument')
        .rejectionReason,
      'invalid_name',
    );
    assert.equal((await post('/v1/jobs', { queue: 'small', type: 't' })).status, 200);
    const full = await post('/v1/jobs', { queue: 'small', type: 't' });
    assert.equal(assertError(full, 429, 'resource_exhausted').rejectionReason, 'queue_full');
    assert.equal(full.headers['retry-after'], '1');
    assertError(await post('/v1/jobs', { queue: 'small', type: 't', priorty: 1 }), 400, 'invalid_argument');
    const counts = (await t.server.engine.listQueues()).find((q) => q.name === 'small')?.counts;
    assert.equal(counts?.ready, (before?.ready ?? 0) + 1);
  });

  test('messages name fields as this API does (ttlMs, not ttl_ms) and settings as sepp.toml does', async () => {
    const message = async (answer: Promise<ApiAnswer>, status: number) =>
      assertError(await answer, status, status === 429 ? 'resource_exhausted' : 'invalid_argument').message;
    assert.equal(
      await message(post('/v1/jobs', { queue: 'names', type: 't', ttlMs: -1 }), 400),
      'ttlMs is -1; it must be a positive integer',
    );
    const batch = await post<{ results: { rejection?: { message: string } }[] }>('/v1/jobs/batch', {
      jobs: [{ queue: 'names', type: 't', maxAttempts: 1001 }],
    });
    assert.match(batch.json.results[0]?.rejection?.message ?? '', /^maxAttempts is 1001;/);
    const atomic = await post<{ rejections: { message: string }[] }>('/v1/jobs/atomic', {
      jobs: [{ queue: 'names', type: 't', timeoutMs: -5 }],
    });
    assert.match(atomic.json.rejections[0]?.message ?? '', /^timeoutMs is -5;/);
    assert.equal(
      await message(get('/v1/batches?pageToken=nope'), 400),
      'pageToken is not one this server gave for batches; pass back nextPageToken unchanged, or none for the first page',
    );
    assert.match(
      await message(post('/v1/reserve', { queues: ['names'], maxJobs: 100_000 }), 400),
      /^maxJobs is 100000; .*\(limits\.max_reserve_jobs\)$/,
    );
    // A setting keeps its name, also where it reads like a field.
    assert.match(
      await message(post('/v1/jobs', { queue: 'small', type: 't', payload: 'x'.repeat(100) }), 400),
      /the limit for queue small is 16 bytes \(max_payload_bytes\)$/,
    );
  });

  test('a batch answers one result per job; an atomic batch stores all or nothing', async () => {
    const batch = await post<{ results: Record<string, { reason?: string; jobId?: string }>[] }>(
      '/v1/jobs/batch',
      {
        jobs: [
          { queue: 'batch', type: 't', payload: 1 },
          { queue: 'batch', type: 'bad type!' },
          { queue: 'batch', type: 't', payloadBase64: 'AA==' },
        ],
      },
    );
    assert.equal(batch.status, 200, batch.text);
    assert.ok(batch.json.results[0]?.accepted?.jobId);
    assert.equal(batch.json.results[1]?.rejection?.reason, 'invalid_name');
    assert.ok(batch.json.results[2]?.accepted?.jobId);
    const atomic = await post<{ committed: boolean; rejections: { index: number; reason: string }[] }>(
      '/v1/jobs/atomic',
      {
        jobs: [
          { queue: 'atomic', type: 't' },
          { queue: 'atomic', type: 't', priority: 12 },
        ],
      },
    );
    assert.equal(atomic.status, 200);
    assert.equal(atomic.json.committed, false);
    assert.deepEqual(
      atomic.json.rejections.map((r) => [r.index, r.reason]),
      [[1, 'invalid_job']],
    );
    assert.equal(
      (await t.server.engine.listQueues()).find((q) => q.name === 'atomic'),
      undefined,
      'nothing stored',
    );
    const ok = await post<{ committed: boolean; results: unknown[] }>('/v1/jobs/atomic', {
      jobs: [
        { queue: 'atomic', type: 't' },
        { queue: 'atomic', type: 't' },
      ],
    });
    assert.equal(ok.json.committed, true);
    assert.equal(ok.json.results.length, 2);
    assertError(await post('/v1/jobs/batch', { jobs: [] }), 400, 'invalid_argument');
    assertError(await post('/v1/jobs/batch', { jobs: 'x' }), 400, 'invalid_argument');
  });

  test('ack with a JSON result, kept with the job and given to the outcome wait', async () => {
    await post('/v1/jobs', { queue: 'kept', type: 't' });
    const job = await reserveOne('kept');
    const result = '{"n": 12345678901234567890}';
    const ack = await apiCall(url, `/v1/jobs/${job.jobId}/ack`, {
      raw: `{"attempt":${job.attempt},"result":${result}}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(ack.status, 200, ack.text);
    assert.deepEqual(ack.json, {});
    const outcome = await get(`/v1/jobs/${job.jobId}/outcome`);
    assert.equal(outcome.status, 200, outcome.text);
    assert.ok(outcome.text.includes(`"result":${result}`), outcome.text);
    assert.match(outcome.text, /"finished":true,"state":"completed"/);
    assert.match(outcome.text, /"resultContentType":"application\/json"/);
  });

  test('a nack’s error class and stack are kept with the attempt; a bad class is 400', async () => {
    await post('/v1/jobs', { queue: 'why', type: 't' });
    const job = await reserveOne('why');
    const refused = await post(`/v1/jobs/${job.jobId}/nack`, {
      attempt: job.attempt,
      errorMessage: 'x',
      errorClass: 'Bad\nClass',
    });
    assertError(refused, 400, 'invalid_argument');
    const nack = await post(`/v1/jobs/${job.jobId}/nack`, {
      attempt: job.attempt,
      errorMessage: 'boom',
      errorClass: 'ValueError',
      errorStack: 'Traceback (most recent call last):\n  File "job.py", line 3\nValueError: boom',
      deadLetter: true,
    });
    assert.equal(nack.status, 200, nack.text);
    const got = await get<{ job: { errors: { errorClass: string | null; errorStack: string | null }[] } }>(
      `/v1/jobs/${job.jobId}`,
    );
    assert.equal(got.status, 200, got.text);
    assert.equal(got.json.job.errors[0]?.errorClass, 'ValueError');
    assert.match(got.json.job.errors[0]?.errorStack ?? '', /^Traceback/);
  });

  test('lost leases answer as gRPC does: 409 lease_lost, 404 not_found, 409 job_cancelled', async () => {
    await post('/v1/jobs', { queue: 'fence', type: 't' });
    const job = await reserveOne('fence');
    for (const op of ['ack', 'nack', 'extend', 'progress']) {
      const body =
        op === 'progress' ? { attempt: job.attempt + 1, percent: 5 } : { attempt: job.attempt + 1 };
      assertError(await post(`/v1/jobs/${job.jobId}/${op}`, body), 409, 'lease_lost');
    }
    const extended = await post<{ leaseDeadlineMs: number }>(`/v1/jobs/${job.jobId}/extend`, {
      attempt: job.attempt,
      leaseDurationMs: '120000',
    });
    assert.equal(extended.json.leaseDeadlineMs, clock.nowMs() + 120_000);
    const progress = await post<{ progress: { percent: number; json: unknown } }>(
      `/v1/jobs/${job.jobId}/progress`,
      {
        attempt: job.attempt,
        percent: 40,
        json: { step: 'copy' },
      },
    );
    assert.deepEqual(progress.json.progress.json, { step: 'copy' });
    assert.equal(progress.json.progress.percent, 40);
    assert.equal((await post(`/v1/jobs/${job.jobId}/ack`, { attempt: job.attempt })).status, 200);
    for (const op of ['ack', 'nack', 'extend']) {
      assertError(await post(`/v1/jobs/${job.jobId}/${op}`, { attempt: job.attempt }), 404, 'not_found');
    }
    // Cancelled while leased: the worker's ack is refused, its nack ends the job cancelled.
    const enq = await post<{ jobId: string }>('/v1/jobs', { queue: 'fence', type: 't' });
    const leased = await reserveOne('fence');
    const cancel = await post<{ previousState: string; state: string }>(
      `/v1/jobs/${enq.json.jobId}/cancel`,
      {},
    );
    assertError(cancel, 400, 'invalid_argument'); // cancel takes no body
    const cancelled = await apiCall<{ previousState: string; state: string }>(
      url,
      `/v1/jobs/${enq.json.jobId}/cancel`,
      {
        method: 'POST',
      },
    );
    assert.deepEqual(cancelled.json, { previousState: 'leased', state: 'leased' });
    assertError(
      await post(`/v1/jobs/${leased.jobId}/extend`, { attempt: leased.attempt }),
      409,
      'job_cancelled',
    );
    const nack = await post<{ state: string }>(`/v1/jobs/${leased.jobId}/nack`, {
      attempt: leased.attempt,
      errorMessage: 'stopped',
    });
    assert.equal(nack.json.state, 'cancelled', nack.text);
    assertError(await post('/v1/jobs/not-a-uuid/ack', { attempt: 1 }), 400, 'invalid_argument');
    assertError(await post(`/v1/jobs/${leased.jobId}/ack`, {}), 400, 'invalid_argument');
  });

  test('nack: backoff, an explicit delay, dead-letter now; ack batch answers per ack', async () => {
    for (let i = 0; i < 3; i++) await post('/v1/jobs', { queue: 'nacks', type: 't' });
    const a = await reserveOne('nacks');
    const b = await reserveOne('nacks');
    const c = await reserveOne('nacks');
    const delayed = await post<{ state: string; runAtMs: number }>(`/v1/jobs/${a.jobId}/nack`, {
      attempt: a.attempt,
      errorMessage: 'boom',
      retryDelayMs: '5000',
    });
    assert.deepEqual(delayed.json, { state: 'scheduled', runAtMs: clock.nowMs() + 5000 });
    const dead = await post<{ state: string; runAtMs: number | null }>(`/v1/jobs/${b.jobId}/nack`, {
      attempt: b.attempt,
      deadLetter: true,
    });
    assert.deepEqual(dead.json, { state: 'dead', runAtMs: null });
    assertError(
      await post(`/v1/jobs/${c.jobId}/nack`, { attempt: c.attempt, deadLetter: true, retryDelayMs: 1 }),
      400,
      'invalid_argument',
    );
    const acks = await post<{ results: { outcome: string }[] }>('/v1/acks', {
      acks: [
        { jobId: c.jobId, attempt: c.attempt },
        { jobId: c.jobId, attempt: c.attempt },
        { jobId: a.jobId, attempt: 9 },
      ],
    });
    assert.deepEqual(
      acks.json.results.map((r) => r.outcome),
      ['ok', 'not_found', 'not_found'],
    );
    const history = (
      await get<{ job: { errors: { error: string }[]; state: string } }>(`/v1/jobs/${a.jobId}`)
    ).json.job;
    assert.deepEqual(
      history.errors.map((e) => e.error),
      ['boom'],
    );
  });

  test('a waiting reserve wakes up for a job enqueued over HTTP, and times out on the clock', async () => {
    const waiting = post<{ jobs: Leased[] }>('/v1/reserve', {
      queues: ['lp'],
      waitTimeoutMs: 30_000,
      workerId: 'w1',
    });
    await waitersReach(t, 1);
    const enq = await post<{ jobId: string }>('/v1/jobs', { queue: 'lp', type: 't', payload: { n: 1 } });
    const woken = await waiting;
    assert.equal(woken.json.jobs[0]?.jobId, enq.json.jobId);
    assert.deepEqual(woken.json.jobs[0]?.payload, { n: 1 });
    const timingOut = post<{ jobs: Leased[] }>('/v1/reserve', {
      queues: ['lp-empty'],
      waitTimeoutMs: '600000',
    });
    await waitersReach(t, 1);
    clock.advance(60_000); // limits.max_wait_ms: the ten minutes asked for are clamped to 60 s.
    assert.deepEqual((await timingOut).json, { jobs: [] });
    const workers = await t.server.engine.listWorkers();
    assert.ok(workers.some((w) => w.workerId === 'w1' && w.address.startsWith('http:127.0.0.1:')));
  });

  test('a client that goes away stops its long-poll at once and is leased nothing', async () => {
    const controller = new AbortController();
    const request = fetch(`${url}/v1/reserve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queues: ['gone'], waitTimeoutMs: 30_000 }),
      signal: controller.signal,
    }).catch(() => null);
    await waitersReach(t, 1);
    controller.abort();
    await request;
    await waitersReach(t, 0);
    await post('/v1/jobs', { queue: 'gone', type: 't' });
    assert.equal((await t.server.engine.listQueues()).find((q) => q.name === 'gone')?.counts.ready, 1);
  });

  test('an outcome wait wakes up when the job ends, and answers `finished: false` when its time passes', async () => {
    const enq = await post<{ jobId: string }>('/v1/jobs', { queue: 'wait', type: 't' });
    const before = t.server.engine.eventBacklog.subscribers;
    const waiting = get<Record<string, unknown>>(`/v1/jobs/${enq.json.jobId}/outcome?waitMs=30000`);
    await subscribersReach(t, before + 1);
    const job = await reserveOne('wait');
    await post(`/v1/jobs/${job.jobId}/ack`, { attempt: job.attempt, result: 'done' });
    const outcome = (await waiting).json;
    assert.equal(outcome.finished, true);
    assert.equal(outcome.state, 'completed');
    assert.equal(outcome.result, 'done');
    // The queue keeps no completed jobs, and the backlog remembers the event: still answered.
    const later = await get(`/v1/jobs/${job.jobId}/outcome`);
    assert.equal(later.json.state, 'completed', later.text);

    const slow = await post<{ jobId: string }>('/v1/jobs', { queue: 'wait', type: 't' });
    const timing = get<Record<string, unknown>>(`/v1/jobs/${slow.json.jobId}/outcome?waitMs=5000`);
    await subscribersReach(t, before + 1);
    clock.advance(5000);
    assert.deepEqual((await timing).json, {
      jobId: slow.json.jobId,
      finished: false,
      state: 'ready',
      atMs: null,
    });
    await subscribersReach(t, before);

    const dead = await reserveOne('wait');
    await post(`/v1/jobs/${dead.jobId}/nack`, {
      attempt: dead.attempt,
      errorMessage: 'bad input',
      deadLetter: true,
    });
    const deadOutcome = (await get(`/v1/jobs/${dead.jobId}/outcome?waitMs=1000`)).json;
    assert.equal(deadOutcome.state, 'dead');
    assert.equal(deadOutcome.error, 'bad input');
    assert.equal(deadOutcome.deadReason, 'dead_lettered');
    assertError(
      await get('/v1/jobs/01890f6e-7c3a-7000-8000-000000000000/outcome?waitMs=1000'),
      404,
      'not_found',
    );
    assertError(
      await get('/v1/jobs/01890f6e-7c3a-7000-8000-000000000000/outcome?waitMs=x'),
      400,
      'invalid_argument',
    );
  });

  test('HEAD answers every GET operation as GET does, without the body; the event stream 405', async () => {
    const enqueued = await post<{ jobId: string }>('/v1/jobs', { queue: 'kept', type: 'head' });
    const id = enqueued.json.jobId;
    const nobody = '01890f6e-7c3a-7000-8000-000000000000';
    const paths = [
      `/v1/jobs/${id}`,
      `/v1/jobs/${nobody}`,
      `/v1/jobs/${id}/outcome`,
      `/v1/jobs/${id}/flow`,
      `/v1/batches/${nobody}`,
      '/v1/batches',
      '/v1/openapi.json',
      '/v1/server-info',
    ];
    // Every GET operation of the OpenAPI document but the event stream is among them.
    const document = await get<{ paths: Record<string, { get?: unknown }> }>('/v1/openapi.json');
    const gets = Object.keys(document.json.paths).filter((p) => document.json.paths[p]?.get !== undefined);
    const covered = paths.map((p) =>
      p.replaceAll(id, '{jobId}').replace(`batches/${nobody}`, 'batches/{batchId}'),
    );
    assert.deepEqual(
      gets.filter((p) => p !== '/v1/events' && !covered.includes(p)),
      [],
      'a GET operation the HEAD check misses',
    );
    for (const path of paths) {
      const [asGet, asHead] = [await get(path), await apiCall(url, path, { method: 'HEAD' })];
      assert.equal(asHead.status, asGet.status, path);
      assert.equal(asHead.text, '', path);
      assert.ok(asGet.text.length > 0, path);
      for (const header of ['content-type', 'content-length', 'cache-control']) {
        assert.equal(asHead.headers[header], asGet.headers[header], `${path}: ${header}`);
      }
    }
    const stream = await apiCall(url, '/v1/events', { method: 'HEAD' });
    assert.equal(stream.status, 405);
    assert.equal(stream.headers.allow, 'GET');
    const wrong = await apiCall(url, `/v1/jobs/${id}`, { method: 'POST', body: {} });
    assertError(wrong, 405, 'method_not_allowed');
    assert.equal(wrong.headers.allow, 'GET, HEAD');
  });

  test('methods, paths, content types and bodies the API does not take get their documented answers', async () => {
    const wrongMethod = await apiCall(url, '/v1/jobs', { method: 'GET' });
    assertError(wrongMethod, 405, 'method_not_allowed');
    assert.equal(wrongMethod.headers.allow, 'POST');
    assertError(await get('/v1/nowhere'), 404, 'not_found');
    assertError(
      await apiCall(url, '/v1/jobs', {
        raw: '{"queue":"q","type":"t"}',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
      'unsupported_media_type',
    );
    assertError(
      await apiCall(url, '/v1/jobs', { raw: '{"queue":', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_argument',
    );
    assertError(
      await apiCall(url, '/v1/jobs', { raw: '[1]', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_argument',
    );
    assertError(
      await apiCall(url, '/v1/jobs', {
        raw: Buffer.from([0x7b, 0xff, 0x7d]),
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_argument',
    );
    const typo = assertError(
      await post('/v1/reserve', { queues: ['q'], waitTimeoutMS: 1 }),
      400,
      'invalid_argument',
    );
    assert.match(typo.message, /did you mean waitTimeoutMs/);
    // A query parameter an operation does not take is refused too, never dropped: a misspelt
    // filter would widen the stream to every queue, a misspelt wait would answer at once.
    const stream = await openSse(url, '/v1/events?queue=emails');
    if (stream.status !== 400) stream.close();
    assert.equal(stream.status, 400);
    assert.match(
      await stream.body(),
      /"queue: unknown query parameter of GET \/v1\/events; did you mean queues\?"/,
    );
    const queryTypos: [string, RegExp][] = [
      ['/v1/jobs/01890f6e-7c3a-7000-8000-000000000000/outcome?waitMS=1', /did you mean waitMs\?$/],
      [
        '/v1/jobs/01890f6e-7c3a-7000-8000-000000000000?verbose=1',
        /GET \/v1\/jobs\/\{jobId\}; it takes none$/,
      ],
      ['/v1/batches?state=open&zzzzzzzz=1', /its parameters are state, owner, pageSize, pageToken$/],
    ];
    for (const [path, message] of queryTypos) {
      assert.match(assertError(await get(path), 400, 'invalid_argument').message, message, path);
    }
    assertError(
      await apiCall(url, '/v1/jobs/01890f6e-7c3a-7000-8000-000000000000', {
        raw: '{}',
        headers: { 'content-type': 'application/json' },
        method: 'GET',
      }),
      400,
      'invalid_argument',
    );
  });
});
