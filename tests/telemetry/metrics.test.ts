/**
 * /metrics after a known sequence of operations over real gRPC: exact counter
 * values, histogram counts and gauges, scraped over HTTP from the admin port.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, type ClientReadableStream, type ServiceError, status } from '@grpc/grpc-js';
import { EventsRequest, type EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { type Sample, sampleValue, scrape } from '../helpers/prometheus.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const job = (queue: string, extra: Partial<EnqueueJob> = {}) =>
  testJob(queue, { type: 'send', payload: Buffer.from('{}'), contentType: 'application/json', ...extra });

const rpc = (method: string, code: status, extra: Record<string, string> = {}) => ({
  rpc_system: 'grpc',
  rpc_service: 'sepp.v1.QueueService',
  rpc_method: method,
  rpc_grpc_status_code: String(code),
  ...extra,
});

function nextMessage<Req, T>(stream: ClientDuplexStream<Req, T> | ClientReadableStream<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    stream.once('data', resolve);
    stream.once('error', reject);
  });
}

describe('metrics at /metrics', () => {
  let t: TestServer;
  let samples: Sample[];
  let contentType: string;
  const clock = new FakeClock(Date.UTC(2026, 5, 1));

  before(async () => {
    t = await startTestServer({
      clock,
      toml: `
[queues.a]
max_payload_bytes = 64
[queues.b]
max_attempts = 1
`,
    });
    const c = t.client;

    // Queue a: 3 enqueued (one with an idempotency key), 1 duplicate, 1 rejected.
    await call(c, c.enqueue, { job: job('a', { idempotencyKey: 'k1' }) });
    await call(c, c.enqueue, { job: job('a') });
    await call(c, c.enqueue, { job: job('a') });
    const duplicate = await call(c, c.enqueue, { job: job('a', { idempotencyKey: 'k1' }) });
    assert.equal(duplicate.deduplicated, true);
    await assert.rejects(call(c, c.enqueue, { job: job('a', { payload: Buffer.alloc(100) }) }), (e) => {
      assert.equal((e as ServiceError).code, status.INVALID_ARGUMENT);
      return true;
    });

    // Reserve 2, ack 1, nack 1 straight to the dead letters.
    const { jobs } = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['a'],
      maxJobs: 2,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: 'w1',
    });
    assert.equal(jobs.length, 2);
    const [first, second] = jobs;
    await call(c, c.ack, { jobId: first!.jobId, attempt: first!.attempt });
    await call(c, c.nack, {
      jobId: second!.jobId,
      attempt: second!.attempt,
      errorMessage: 'boom',
      errorClass: '',
      errorStack: '',
      directive: { $case: 'deadLetter', value: true },
    });
    // Acking again: the job is gone (NOT_FOUND), counted under its own status code.
    await assert.rejects(call(c, c.ack, { jobId: first!.jobId, attempt: first!.attempt }));

    // Queue b (one attempt): a lease that runs out is counted as expired and dead-lettered as lease_expired.
    await call(c, c.enqueue, { job: job('b') });
    const leased = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['b'],
      maxJobs: 1,
      leaseDurationMs: 1000,
      waitTimeoutMs: 0,
      workerId: 'w2',
    });
    assert.equal(leased.jobs.length, 1);
    // Queue e: a job whose expiry (ttl) passes before a worker takes it, one cancelled, one purged.
    const { results: e } = await call(c, c.enqueueBatch, {
      jobs: [job('e', { expiry: { $case: 'ttlMs', value: 1000 } }), job('e'), job('e')],
    });
    const cancelled = e[1]?.outcome?.$case === 'accepted' ? e[1].outcome.value.jobId : '';
    await call(c, c.cancelJob, { jobId: cancelled });
    clock.advance(5000);
    await t.server.engine.runMaintenance();
    const purged = await call(c, c.purgeQueue, { requestKey: '', queue: 'e', background: false });
    assert.equal(purged.deletedCount, 1);
    assert.equal(purged.operation?.changedCount, 1);

    // Streams: one Produce message of 2 jobs to queue p; a Work stream acks one of them.
    const produce = c.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answer = nextMessage(produce);
    produce.write({ sequence: 1, jobs: [job('p'), job('p')], atomic: false });
    assert.equal((await answer).code, status.OK);
    produce.end();
    const work = c.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    const pushed = nextMessage(work);
    work.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['p'], leaseDurationMs: 60_000, workerId: 'w3', batchResponses: false },
      },
    });
    work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    const delivered = (await pushed).kind;
    assert.ok(delivered?.$case === 'job');
    const settled = nextMessage(work);
    work.write({
      requestId: 1,
      kind: { $case: 'ack', value: { jobId: delivered.value.jobId, attempt: delivered.value.attempt } },
    });
    assert.equal((await settled).kind?.$case, 'settled');
    work.cancel();
    // A Work batch of three acks: one measurement for the three (they share one engine operation).
    await call(c, c.enqueueBatch, { jobs: [job('r'), job('r'), job('r')] });
    const batchWork = c.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    const batchPushed = nextMessage(batchWork);
    batchWork.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['r'], leaseDurationMs: 60_000, workerId: 'w4', batchResponses: true },
      },
    });
    batchWork.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 3 } } });
    const pushedBatch = (await batchPushed).kind;
    assert.ok(pushedBatch?.$case === 'batch' && pushedBatch.value.jobs.length === 3);
    const answers = nextMessage(batchWork);
    batchWork.write({
      requestId: 0,
      kind: {
        $case: 'batch',
        value: {
          settlements: pushedBatch.value.jobs.map((j, i) => ({
            requestId: 10 + i,
            kind: { $case: 'ack' as const, value: { jobId: j.jobId, attempt: j.attempt } },
          })),
          credit: 0,
          stopDelivery: false,
        },
      },
    });
    const answered = (await answers).kind;
    assert.ok(answered?.$case === 'batch');
    assert.deepEqual(
      answered.value.settled.map((a) => [a.requestId, a.code]),
      [
        [10, status.OK],
        [11, status.OK],
        [12, status.OK],
      ],
    );
    batchWork.cancel();

    ({ samples, contentType } = await scrape(t.metricsUrl));
  });
  after(() => t.dispose());

  test('is served in the Prometheus text format', () => {
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
  });

  test('job counters per queue and reason are exact', () => {
    const jobs = (name: string, labels: Record<string, string>) =>
      sampleValue(samples, `sepp_jobs_${name}_total`, labels);
    assert.equal(jobs('enqueued', { sepp_queue: 'a' }), 3);
    assert.equal(jobs('deduplicated', { sepp_queue: 'a' }), 1);
    assert.equal(jobs('rejected', { sepp_queue: 'a', sepp_rejection_reason: 'payload_too_large' }), 1);
    assert.equal(jobs('reserved', { sepp_queue: 'a' }), 2);
    assert.equal(jobs('acked', { sepp_queue: 'a' }), 1);
    assert.equal(jobs('nacked', { sepp_queue: 'a' }), 1);
    assert.equal(jobs('dead_lettered', { sepp_queue: 'a', sepp_dead_reason: 'dead_lettered' }), 1);
    assert.equal(jobs('expired', { sepp_queue: 'a' }), undefined);

    assert.equal(jobs('enqueued', { sepp_queue: 'b' }), 1);
    assert.equal(jobs('reserved', { sepp_queue: 'b' }), 1);
    assert.equal(jobs('expired', { sepp_queue: 'b' }), 1);
    assert.equal(jobs('dead_lettered', { sepp_queue: 'b', sepp_dead_reason: 'lease_expired' }), 1);

    assert.equal(jobs('enqueued', { sepp_queue: 'e' }), 3);
    assert.equal(jobs('ttl_expired', { sepp_queue: 'e' }), 1);
    assert.equal(jobs('dead_lettered', { sepp_queue: 'e', sepp_dead_reason: 'expired' }), 1);
    assert.equal(jobs('cancelled', { sepp_queue: 'e' }), 1);
    assert.equal(jobs('purged', { sepp_queue: 'e' }), 1);
    assert.equal(jobs('ttl_expired', { sepp_queue: 'a' }), undefined);

    assert.equal(jobs('enqueued', { sepp_queue: 'p' }), 2);
    assert.equal(jobs('reserved', { sepp_queue: 'p' }), 1);
    assert.equal(jobs('acked', { sepp_queue: 'p' }), 1);
  });

  test('queue depth per state comes from the maintained counters', () => {
    const depth = (queue: string, state: string) =>
      sampleValue(samples, 'sepp_queue_depth', { sepp_queue: queue, sepp_job_state: state });
    assert.deepEqual(
      ['scheduled', 'ready', 'leased', 'completed', 'dead'].map((s) => depth('a', s)),
      [0, 1, 0, 0, 1],
    );
    assert.equal(depth('b', 'dead'), 1);
    assert.equal(depth('p', 'ready'), 1);
    assert.equal(sampleValue(samples, 'sepp_reserves_waiting'), 0);
  });

  test('RPC durations are counted per method and status code, stream requests per message (a batch of acks once)', () => {
    const count = (method: string, code: status, extra: Record<string, string> = {}) =>
      sampleValue(samples, 'rpc_server_duration_count', rpc(method, code, extra));
    assert.equal(count('Enqueue', status.OK), 5);
    assert.equal(count('Enqueue', status.INVALID_ARGUMENT), 1);
    assert.equal(count('Reserve', status.OK), 2);
    assert.equal(count('Ack', status.OK), 1);
    assert.equal(count('Ack', status.NOT_FOUND), 1);
    assert.equal(count('Nack', status.OK), 1);
    assert.equal(count('Produce', status.OK, { sepp_stream_message: 'batch' }), 1);
    // One ack alone and one batch message of three acks: two measurements.
    assert.equal(count('Work', status.OK, { sepp_stream_message: 'ack' }), 2);
    // Every histogram's +Inf bucket equals its count.
    const inf = sampleValue(samples, 'rpc_server_duration_bucket', {
      ...rpc('Enqueue', status.OK),
      le: '+Inf',
    });
    assert.equal(inf, 5);
  });

  test('group commits: one duration and one batch size per commit', () => {
    const commits = sampleValue(samples, 'sepp_commit_duration_count', { sepp_commit_outcome: 'ok' });
    assert.ok(commits !== undefined && commits > 0);
    assert.equal(
      sampleValue(samples, 'sepp_commit_batch_size_count', { sepp_commit_outcome: 'ok' }),
      commits,
    );
    // At least the 16 writes above (enqueues, reserves, acks, nacks, maintenance), each in some commit.
    const operations = sampleValue(samples, 'sepp_commit_batch_size_sum', { sepp_commit_outcome: 'ok' });
    assert.ok(operations !== undefined && operations >= 16, `operations ${operations}`);
  });

  test('database and WAL file sizes are reported', () => {
    const database = sampleValue(samples, 'sepp_db_file_size', { sepp_db_file: 'database' });
    assert.ok(database !== undefined && database >= 4096, `database ${database}`);
    assert.notEqual(sampleValue(samples, 'sepp_db_file_size', { sepp_db_file: 'wal' }), undefined);
  });

  test('event subscribers and the backlog they keep: none before, one stream and its event while subscribed', async () => {
    assert.equal(sampleValue(samples, 'sepp_events_subscribers'), 0);
    assert.equal(sampleValue(samples, 'sepp_events_backlog'), 0, 'nothing is kept while nobody subscribes');
    assert.equal(sampleValue(samples, 'sepp_events_backlog_size'), 0);
    const c = t.client;
    const stream = c.events(
      EventsRequest.fromPartial({ queues: ['ev'] }),
    ) as ClientReadableStream<EventsResponse>;
    try {
      assert.equal((await nextMessage(stream)).caughtUp, true);
      const delivered = nextMessage(stream);
      await call(c, c.enqueue, { job: job('ev') });
      assert.equal((await delivered).events.length, 1);
      const now = (await scrape(t.metricsUrl)).samples;
      assert.equal(sampleValue(now, 'sepp_events_subscribers'), 1);
      assert.equal(sampleValue(now, 'sepp_events_backlog'), 1);
      const bytes = sampleValue(now, 'sepp_events_backlog_size');
      assert.ok(bytes !== undefined && bytes > 0, `backlog bytes ${bytes}`);
    } finally {
      stream.cancel();
    }
  });

  test('/metrics shares the admin address with the admin API', async () => {
    const response = await fetch(t.metricsUrl.replace('/metrics', '/api/openapi.json'));
    assert.equal(response.status, 200);
    assert.ok(((await response.json()) as { paths: object }).paths);
  });
});
