/**
 * API keys scoped to queues, with real jobs, schedules and bulk operations
 * (the access matrix, access-matrix.test.ts, covers every RPC × scope with
 * ids that name nothing): a key sees and touches only its queues, over gRPC
 * (unary, Work, Produce, Events) and HTTP; what another queue holds is
 * NOT_FOUND as if missing; a reload that changes a key's queues is reported,
 * audited, and ends the key's open streams.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { EventsRequest, type EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import {
  type DependencyResult,
  JobState,
  type LeasedJob,
} from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { apiKeyToml, missingJobId, protoScheduleSpec } from '../helpers/access-table.ts';
import { apiCall, openSse } from '../helpers/http-api.ts';
import { unsetFilterFields } from '../helpers/proto-filter.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { collect } from '../helpers/streams.ts';

const keys = {
  root: 'sepp-secret-scopes-root-0123456789',
  billingWorker: 'sepp-secret-scopes-billing-worker-0123456789',
  emailsWorker: 'sepp-secret-scopes-emails-worker-0123456789',
  emailsProducer: 'sepp-secret-scopes-emails-producer-0123456789',
  tenantAdmin: 'sepp-secret-scopes-tenant-admin-0123456789',
  partner: 'sepp-secret-scopes-partner-0123456789',
  wideWorker: 'sepp-secret-scopes-wide-worker-0123456789',
};
const toml = (emailsWorkerQueues: readonly string[]) =>
  apiKeyToml('root', 'admin', keys.root) +
  apiKeyToml('billing-worker', 'worker', keys.billingWorker, ['billing-*']) +
  apiKeyToml('emails-worker', 'worker', keys.emailsWorker, emailsWorkerQueues) +
  apiKeyToml('emails-producer', 'producer', keys.emailsProducer, ['emails']) +
  apiKeyToml('tenant-admin', 'admin', keys.tenantAdmin, ['tenant-a.*']) +
  apiKeyToml('partner', 'producer', keys.partner) +
  apiKeyToml('wide-worker', 'worker', keys.wideWorker, ['billing-*', 'tenant-a.*']) +
  // Small, for the share of a job's dependents other keys make (half of it), and for the
  // results passed on to a lease (a scoped key's count only its queues').
  '[limits]\nmax_dependents_per_job = 4\nmax_dependency_results_bytes = 1000\n';

const md = (key: string) => {
  const metadata = new Metadata();
  metadata.add('authorization', `Bearer ${key}`);
  return metadata;
};
const code = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (e: ServiceError) => e.code,
  );
/** A Reserve of up to `maxJobs` jobs that does not wait. */
const reserveOf = (queues: string[], maxJobs: number) => ({
  queues,
  maxJobs,
  leaseDurationMs: 60_000,
  waitTimeoutMs: 0,
  workerId: '',
  maxResponseBytes: 0,
});
const failure = (p: Promise<unknown>) =>
  p.then(
    () => assert.fail('the call was allowed'),
    (e: ServiceError) => e,
  );

describe('API keys scoped to queues', () => {
  let t: TestServer;
  let billingJob: string;
  before(async () => {
    t = await startTestServer({ http: true, toml: toml(['emails']) });
    const root = md(keys.root);
    for (const queue of ['billing-eu', 'emails', 'tenant-a.jobs', 'tenant-b.jobs']) {
      await call(t.client, t.client.enqueue, { job: testJob(queue) }, root);
    }
    billingJob = (await call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, root)).jobId;
  });
  after(() => t.dispose());

  test('a worker key for emails cannot lease billing; the billing key can', async () => {
    const reserve = (key: string, queue: string) =>
      call(
        t.client,
        t.client.reserve,
        {
          queues: [queue],
          maxJobs: 1,
          leaseDurationMs: 30_000,
          waitTimeoutMs: 0,
          workerId: '',
          maxResponseBytes: 0,
        },
        md(key),
      );
    const refused = await failure(reserve(keys.emailsWorker, 'billing-eu'));
    assert.equal(refused.code, status.PERMISSION_DENIED);
    assert.match(
      refused.details,
      /API key emails-worker may use only the queues emails; queues\[0\] names queue "billing-eu"/,
    );
    assert.equal((await reserve(keys.emailsWorker, 'emails')).jobs.length, 1);
    assert.equal((await reserve(keys.billingWorker, 'billing-eu')).jobs.length, 1);
  });

  test("another queue's job is NOT_FOUND to GetJob and to every settlement, and stays as it was", async () => {
    const leased = await call(
      t.client,
      t.client.reserve,
      {
        queues: ['billing-eu'],
        maxJobs: 10,
        leaseDurationMs: 30_000,
        waitTimeoutMs: 0,
        workerId: '',
        maxResponseBytes: 0,
      },
      md(keys.billingWorker),
    );
    const job = leased.jobs.find((j) => j.jobId === billingJob);
    assert.ok(job !== undefined, 'the billing job was leased');
    const other = md(keys.emailsWorker);
    const attempt = job.attempt;
    /** The answer to a call about `jobId`, with the id taken out: another queue's job and a missing one must match. */
    const answer = (jobId: string, send: (jobId: string) => Promise<unknown>) =>
      send(jobId).then(
        () => 'OK',
        (e: ServiceError) => `${status[e.code]}: ${e.details.replace(jobId, 'ID')}`,
      );
    const calls: Record<string, (jobId: string) => Promise<unknown>> = {
      GetJob: (jobId) => call(t.client, t.client.getJob, { jobId }, other),
      Ack: (jobId) => call(t.client, t.client.ack, { jobId, attempt }, other),
      Nack: (jobId) =>
        call(
          t.client,
          t.client.nack,
          { jobId, attempt, errorMessage: 'x', errorClass: '', errorStack: '', directive: undefined },
          other,
        ),
      Extend: (jobId) => call(t.client, t.client.extend, { jobId, attempt, leaseDurationMs: 1000 }, other),
      ReportProgress: (jobId) =>
        call(
          t.client,
          t.client.reportProgress,
          { jobId, attempt, percent: 5, hasPercent: true, json: '' },
          other,
        ),
      AckBatch: async (jobId) => {
        const batch = await call(t.client, t.client.ackBatch, { acks: [{ jobId, attempt }] }, other);
        const [result] = batch.results;
        throw { code: status.NOT_FOUND, details: `${result?.outcome}: ${result?.message}` };
      },
    };
    for (const [rpc, send] of Object.entries(calls)) {
      const hidden = await answer(billingJob, send);
      assert.match(hidden, /does not exist/, rpc);
      assert.equal(
        hidden,
        await answer(missingJobId, send),
        `${rpc}: another queue's job and a missing job answer alike`,
      );
    }
    const stillLeased = await call(t.client, t.client.getJob, { jobId: billingJob }, md(keys.root));
    assert.equal(stillLeased.job?.attempt, attempt);
    assert.equal(
      stillLeased.job?.state,
      (await call(t.client, t.client.getJob, { jobId: billingJob }, md(keys.billingWorker))).job?.state,
    );
    // Over HTTP too: the route looks the job up before its handler.
    const http = await apiCall(t.httpUrl, `/v1/jobs/${billingJob}`, { key: keys.emailsWorker });
    assert.equal(http.status, 404, http.text);
    const httpMissing = await apiCall(t.httpUrl, `/v1/jobs/${missingJobId}`, { key: keys.emailsWorker });
    assert.equal(http.text.replace(billingJob, 'ID'), httpMissing.text.replace(missingJobId, 'ID'));
    const ack = await apiCall(t.httpUrl, `/v1/jobs/${billingJob}/ack`, {
      key: keys.emailsWorker,
      body: { attempt },
    });
    assert.equal(ack.status, 404, ack.text);
    // The job's own worker settles it.
    await call(t.client, t.client.ack, { jobId: billingJob, attempt }, md(keys.billingWorker));
  });

  test('on a Work stream: subscribing outside the scope ends it; an ack of another queue is NOT_FOUND', async () => {
    const refused = t.client.work(md(keys.emailsWorker)) as grpc.ClientDuplexStream<
      WorkRequest,
      WorkResponse
    >;
    const ended = new Promise<ServiceError>((resolve) => refused.on('error', resolve));
    refused.on('data', () => {});
    refused.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: {
          queues: ['emails', 'billing-eu'],
          leaseDurationMs: 1000,
          workerId: '',
          batchResponses: false,
        },
      },
    });
    const error = await ended;
    assert.equal(error.code, status.PERMISSION_DENIED);
    assert.match(error.details, /subscribe\.queues\[1\] names queue "billing-eu"/);

    const root = md(keys.root);
    const jobId = (await call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, root)).jobId;
    const stream = t.client.work(md(keys.emailsWorker)) as grpc.ClientDuplexStream<WorkRequest, WorkResponse>;
    const settled = new Promise<WorkResponse>((resolve) => {
      stream.on('data', (response: WorkResponse) => {
        if (response.kind?.$case === 'settled') resolve(response);
      });
    });
    stream.on('error', () => {});
    stream.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['emails'], leaseDurationMs: 1000, workerId: '', batchResponses: false },
      },
    });
    stream.write({ requestId: 7, kind: { $case: 'ack', value: { jobId, attempt: 1 } } });
    const answer = await settled;
    assert.ok(answer.kind?.$case === 'settled');
    assert.equal(answer.kind.value.requestId, 7);
    assert.equal(answer.kind.value.code, status.NOT_FOUND);
    stream.cancel();
  });

  test('a producer key cannot enqueue outside its scope, alone, in a batch or on a Produce stream', async () => {
    const producer = md(keys.emailsProducer);
    assert.equal(
      await code(call(t.client, t.client.enqueue, { job: testJob('emails') }, producer)),
      status.OK,
    );
    const single = await failure(call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, producer));
    assert.equal(single.code, status.PERMISSION_DENIED);
    assert.match(single.details, /job\.queue names queue "billing-eu"/);
    const batch = await failure(
      call(t.client, t.client.enqueueBatch, { jobs: [testJob('emails'), testJob('billing-eu')] }, producer),
    );
    assert.match(batch.details, /jobs\[1\]\.queue/);
    const before = (await t.server.engine.getQueue('emails'))?.counts.ready;
    const stream = t.client.produce(producer) as grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answer = new Promise<ProduceResponse>((resolve) => stream.on('data', resolve));
    stream.write({ sequence: 1, jobs: [testJob('emails'), testJob('billing-eu')], atomic: false });
    const produced = await answer;
    assert.equal(produced.code, status.PERMISSION_DENIED);
    stream.end();
    // Nothing of the refused message was stored, not even its job for emails.
    assert.equal((await t.server.engine.getQueue('emails'))?.counts.ready, before);
    const http = await apiCall(t.httpUrl, '/v1/jobs', {
      key: keys.emailsProducer,
      body: { queue: 'billing-eu', type: 't' },
    });
    assert.equal(http.status, 403, http.text);
  });

  test("a scoped key cannot name dependencies: they could be another queue's jobs, whose results it would get", async () => {
    const producer = md(keys.emailsProducer);
    const waiting = testJob('emails', { dependsOn: [billingJob] });
    const single = await failure(call(t.client, t.client.enqueue, { job: waiting }, producer));
    assert.equal(single.code, status.PERMISSION_DENIED);
    assert.match(single.details, /job\[0\]\.depends_on/);
    const batch = await failure(
      call(t.client, t.client.enqueueBatch, { jobs: [testJob('emails'), waiting] }, producer),
    );
    assert.match(batch.details, /jobs\[1\]\.depends_on/);
    const flow = await failure(
      call(t.client, t.client.enqueueFlow, { jobs: [{ name: 'a', job: waiting, after: [] }] }, producer),
    );
    assert.equal(flow.code, status.PERMISSION_DENIED);
    // A flow's queues are checked like an enqueue's.
    const outside = await failure(
      call(
        t.client,
        t.client.enqueueFlow,
        { jobs: [{ name: 'a', job: testJob('billing-eu'), after: [] }] },
        producer,
      ),
    );
    assert.match(outside.details, /jobs\[0\]\.job\.queue names queue "billing-eu"/);
    // On the Produce stream a flow is refused with the unary call's error, word for word, and
    // stores nothing, not even its job for emails; the stream goes on.
    const mixed = {
      jobs: [
        { name: 'e', job: testJob('emails'), after: [] },
        { name: 'b', job: testJob('billing-eu'), after: ['e'] },
      ],
    };
    const unaryMixed = await failure(call(t.client, t.client.enqueueFlow, mixed, producer));
    const counts = async () => [
      (await t.server.engine.getQueue('emails'))?.counts,
      (await t.server.engine.getQueue('billing-eu'))?.counts,
    ];
    const before = await counts();
    const flows = t.client.produce(producer) as grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const flowAnswers = collect(flows, (seen) => seen.length === 2);
    flows.write({ sequence: 1, jobs: [], atomic: false, flow: mixed });
    flows.write({ sequence: 2, jobs: [], atomic: false, flow: { jobs: [mixed.jobs[0]!] } });
    const [refusedFlow, takenFlow] = await flowAnswers;
    flows.end();
    assert.deepEqual([refusedFlow?.code, refusedFlow?.message], [unaryMixed.code, unaryMixed.details]);
    assert.match(refusedFlow?.message ?? '', /jobs\[1\]\.job\.queue names queue "billing-eu"/);
    assert.equal(takenFlow?.flow?.committed, true);
    const [emails] = await counts();
    assert.equal(emails?.ready, (before[0]?.ready ?? 0) + 1);
    assert.deepEqual((await counts())[1], before[1]);
    const stream = t.client.produce(producer) as grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answer = new Promise<ProduceResponse>((resolve) => stream.on('data', resolve));
    stream.write({ sequence: 1, jobs: [waiting], atomic: false });
    assert.equal((await answer).code, status.PERMISSION_DENIED);
    stream.end();
    // A dependency from a key without queues is taken.
    const first = await call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, md(keys.root));
    const root = await call(
      t.client,
      t.client.enqueue,
      { job: testJob('emails', { dependsOn: [first.jobId] }) },
      md(keys.root),
    );
    assert.ok(root.jobId);
  });

  test('ListQueues and ListSchedules show only the key’s queues', async () => {
    const root = md(keys.root);
    for (const queue of ['tenant-a.jobs', 'tenant-b.jobs']) {
      const spec = protoScheduleSpec(`nightly-${queue}`, queue, '0 3 * * *');
      await call(t.client, t.client.createSchedule, { schedule: spec }, root);
    }
    const admin = md(keys.tenantAdmin);
    const queues = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' }, admin);
    assert.deepEqual(
      queues.queues.map((q) => q.name),
      ['tenant-a.jobs'],
    );
    const schedules = await call(
      t.client,
      t.client.listSchedules,
      { nextRuns: 0, pageSize: 0, pageToken: '' },
      admin,
    );
    assert.deepEqual(
      schedules.schedules.map((s) => s.spec?.name),
      ['nightly-tenant-a.jobs'],
    );
    assert.equal(
      await code(call(t.client, t.client.getSchedule, { name: 'nightly-tenant-b.jobs', nextRuns: 0 }, admin)),
      status.NOT_FOUND,
    );
    assert.equal(
      await code(call(t.client, t.client.triggerSchedule, { name: 'nightly-tenant-b.jobs' }, admin)),
      status.NOT_FOUND,
    );
    assert.equal(
      await code(call(t.client, t.client.pauseQueue, { queue: 'tenant-b.jobs', allowMissing: false }, admin)),
      status.PERMISSION_DENIED,
    );
    assert.equal(
      await code(call(t.client, t.client.pauseQueue, { queue: 'tenant-a.jobs', allowMissing: false }, admin)),
      status.OK,
    );
  });

  test("an admin key scoped to a tenant cannot touch others' jobs, nor every queue at once", async () => {
    const admin = md(keys.tenantAdmin);
    const root = md(keys.root);
    const other = (await call(t.client, t.client.enqueue, { job: testJob('tenant-b.jobs') }, root)).jobId;
    assert.equal(await code(call(t.client, t.client.cancelJob, { jobId: other }, admin)), status.NOT_FOUND);
    assert.equal(
      (await call(t.client, t.client.getJob, { jobId: other }, root)).job?.state !== undefined,
      true,
    );
    const everyQueue = await failure(
      call(
        t.client,
        t.client.cancelJobs,
        {
          requestKey: '',
          filter: { ...unsetFilterFields, queue: '', allQueues: true, type: '', states: [], group: '' },
          dryRun: true,
          background: false,
        },
        admin,
      ),
    );
    assert.equal(everyQueue.code, status.PERMISSION_DENIED);
    assert.match(everyQueue.details, /filter\.all_queues/);
    for (const denied of [
      call(
        t.client,
        t.client.listAuditEntries,
        { actor: '', action: '', target: '', pageSize: 0, pageToken: '' },
        admin,
      ),
      call(t.client, t.client.reloadConfig, { dryRun: true, allowSecurityDowngrade: false }, admin),
    ]) {
      const error = await failure(denied);
      assert.equal(error.code, status.PERMISSION_DENIED);
      assert.match(error.details, /reaches every queue/);
    }
    // A bulk operation the root key starts on tenant-b is not the tenant's to see or cancel.
    const started = await call(
      t.client,
      t.client.requeueJobs,
      {
        requestKey: '',
        filter: { ...unsetFilterFields, queue: 'tenant-b.jobs', type: '', states: [], group: '' },
        dryRun: false,
        background: false,
      },
      root,
    );
    const id = started.operation?.id ?? '';
    assert.notEqual(id, '');
    assert.equal(await code(call(t.client, t.client.getBulkOperation, { id }, admin)), status.NOT_FOUND);
    const listed = await call(t.client, t.client.listBulkOperations, {}, admin);
    assert.ok(!listed.operations.some((op) => op.id === id));
    assert.ok(
      (await call(t.client, t.client.listBulkOperations, {}, root)).operations.some((op) => op.id === id),
    );
  });

  test('events show only the key’s queues, over gRPC and HTTP', async () => {
    const root = md(keys.root);
    const stream = t.client.events(
      EventsRequest.fromPartial({}),
      md(keys.emailsWorker),
    ) as grpc.ClientReadableStream<EventsResponse>;
    const seen: string[] = [];
    const caughtUp = new Promise<void>((resolve) => {
      stream.on('data', (response: EventsResponse) => {
        if (response.caughtUp) resolve();
        for (const event of response.events) seen.push(event.queue);
      });
    });
    stream.on('error', () => {});
    await caughtUp;
    const sse = await openSse(t.httpUrl, '/v1/events', { key: keys.emailsWorker });
    assert.equal(sse.status, 200);
    await sse.next();
    await call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, root);
    const last = (await call(t.client, t.client.enqueue, { job: testJob('emails') }, root)).jobId;
    const events = await sse.until((e) => e.data.includes(last));
    sse.close();
    assert.deepEqual(
      events.map((e) => (JSON.parse(e.data) as { queue: string }).queue),
      ['emails'],
    );
    while (seen.length === 0) await new Promise((resolve) => setImmediate(resolve));
    stream.cancel();
    assert.deepEqual([...new Set(seen)], ['emails']);
    const refused = await openSse(t.httpUrl, '/v1/events?queues=billing-eu', { key: keys.emailsWorker });
    assert.equal(refused.status, 403);
  });

  test('a reload that widens a scope is reported and audited, and ends the key’s open streams', async () => {
    const stream = t.client.work(md(keys.emailsWorker)) as grpc.ClientDuplexStream<WorkRequest, WorkResponse>;
    const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    stream.on('data', () => {});
    stream.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['emails'], leaseDurationMs: 1000, workerId: '', batchResponses: false },
      },
    });
    // The stream is open once the server lists its worker.
    while ((await t.server.engine.listWorkers()).length === 0) await new Promise((r) => setTimeout(r, 5));
    const sse = await openSse(t.httpUrl, '/v1/events', { key: keys.emailsWorker });
    const unchanged = await openSse(t.httpUrl, '/v1/events', { key: keys.billingWorker });
    await sse.next();
    await unchanged.next();
    t.writeConfig(toml(['emails', 'billing-*']));
    // Widening takes an explicit request (tests/security/reload-rights.test.ts).
    const report = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
    assert.equal(report.applied, true);
    assert.ok(report.changed.includes('grpc.api_keys (changed emails-worker)'), report.changed.join('; '));
    const error = await ended;
    assert.equal(error.code, status.UNAVAILABLE);
    assert.match(error.details, /queues of API key emails-worker changed/);
    const audit = await t.server.engine.listAudit({ action: 'config.reload' });
    assert.ok(JSON.stringify(audit.items[0]?.details).includes('changed emails-worker'));
    // Its HTTP event stream ends too, saying why; another key's stream goes on.
    const [end] = (await sse.until((e) => e.event === 'end')).slice(-1);
    assert.match(end?.data ?? '', /"code":"unavailable".*queues of API key emails-worker changed/);
    sse.close();
    await call(t.client, t.client.enqueue, { job: testJob('billing-eu') }, md(keys.root));
    const live = await unchanged.until((e) => e.event !== 'end' && e.data.includes('billing-eu'));
    assert.ok(!live.some((e) => e.event === 'end'));
    unchanged.close();
    // The wider scope holds from the next call on.
    const leased = await call(
      t.client,
      t.client.reserve,
      {
        queues: ['billing-eu'],
        maxJobs: 1,
        leaseDurationMs: 1000,
        waitTimeoutMs: 0,
        workerId: '',
        maxResponseBytes: 0,
      },
      md(keys.emailsWorker),
    );
    assert.ok(Array.isArray(leased.jobs));
  });

  test("another key makes half of a job's dependents over gRPC and HTTP; its creator the rest", async () => {
    const { jobId: gate } = await call(
      t.client,
      t.client.enqueue,
      { job: testJob('billing-eu') },
      md(keys.root),
    );
    const waiting = testJob('billing-eu', { dependsOn: [gate] });
    await call(t.client, t.client.enqueue, { job: waiting }, md(keys.partner));
    const flow = { jobs: [{ name: 'a', after: [], job: waiting }] };
    assert.equal((await call(t.client, t.client.enqueueFlow, flow, md(keys.partner))).committed, true);

    // Other keys' share (2 of 4) is used: a third edge is refused, over gRPC and over HTTP, naming no key.
    const refused = await call(t.client, t.client.enqueue, { job: waiting }, md(keys.partner)).then(
      () => assert.fail('the third edge from another key was taken'),
      (error: ServiceError) => error,
    );
    assert.equal(refused.code, status.INVALID_ARGUMENT);
    assert.match(refused.details, /2 of them made by keys other than the one that enqueued it/);
    assert.doesNotMatch(refused.details, /root/);
    const body = { queue: 'billing-eu', type: 't', dependsOn: [gate] };
    const http = await apiCall(t.httpUrl, '/v1/jobs', { key: keys.partner, body });
    assert.equal(http.status, 400, http.text);
    assert.match(http.text, /those keys may make at most 2 together/);

    // The root key, which enqueued it, makes the other two (one over HTTP).
    await call(t.client, t.client.enqueue, { job: waiting }, md(keys.root));
    assert.equal((await apiCall(t.httpUrl, '/v1/jobs', { key: keys.root, body })).status, 200);
    assert.equal((await t.server.engine.getJob(gate)).dependents?.length, 4);
  });

  test("an admin key's edges count as a job's creator's: it makes all of another key's job's dependents", async () => {
    const { jobId: gate } = await call(
      t.client,
      t.client.enqueue,
      { job: testJob('billing-eu') },
      md(keys.partner),
    );
    const waiting = testJob('billing-eu', { dependsOn: [gate] });
    for (let i = 0; i < 3; i++) await call(t.client, t.client.enqueue, { job: waiting }, md(keys.root));
    const body = { queue: 'billing-eu', type: 't', dependsOn: [gate] };
    assert.equal((await apiCall(t.httpUrl, '/v1/jobs', { key: keys.root, body })).status, 200);
    assert.equal((await t.server.engine.getJob(gate)).dependents?.length, 4);
    // The limit still holds, and none of the four counts as another key's.
    const refused = await failure(call(t.client, t.client.enqueue, { job: waiting }, md(keys.root)));
    assert.equal(refused.code, status.INVALID_ARGUMENT);
    assert.match(refused.details, /has 4 jobs depending on it, the limit is 4/);
  });

  test("a scoped key's lease passes on only its queues' dependency results, as swept ones: Reserve, Work, HTTP", async () => {
    const root = md(keys.root);
    const enqueued = async (job: ReturnType<typeof testJob>) =>
      (await call(t.client, t.client.enqueue, { job }, root)).jobId;
    /** `count` jobs of `queue` (fresh ones per waiting job: 4 dependents at most). */
    const jobsOf = async (queue: string, count: number) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push(await enqueued(testJob(queue)));
      return ids;
    };
    /** Completes the jobs of `queue` with the JSON `result` (kept, as jobs wait on them). */
    const complete = async (queue: string, result: string) => {
      const leased = await call(t.client, t.client.reserve, reserveOf([queue], 100), root);
      for (const { jobId, attempt } of leased.jobs) {
        const data = Buffer.from(result);
        await call(
          t.client,
          t.client.ack,
          { jobId, attempt, result: { data, contentType: 'application/json' } },
          root,
        );
      }
    };
    const ownResult = JSON.stringify({ own: 'o'.repeat(290) });
    const foreignResult = JSON.stringify({ foreign: 'f'.repeat(580) });
    const waiters = 5;
    const own = await jobsOf('billing-results', waiters + 1);
    const foreign = await jobsOf('tenant-a.results', waiters + 2);
    // Each waits on one job of billing-* and one of tenant-a.* (900 bytes of results, within the 1000).
    for (let i = 0; i < waiters; i++)
      await enqueued(testJob('billing-deps', { dependsOn: [own[i]!, foreign[i]!] }));
    // One waits on one of billing-* and two of tenant-a.* (1,500 bytes), twice.
    const [ownLast, ...foreignLast] = [own[waiters]!, foreign[waiters]!, foreign[waiters + 1]!];
    const big = testJob('billing-deps-big', { dependsOn: [ownLast, ...foreignLast] });
    await enqueued(big);
    await enqueued(big);
    await complete('billing-results', ownResult);
    await complete('tenant-a.results', foreignResult);
    /** A lease's results as [id, state, result, omitted]. */
    const passed = (job: LeasedJob | undefined) =>
      (job?.dependencyResults ?? []).map((d: DependencyResult) => [
        d.jobId,
        JobState[d.state],
        d.result.toString(),
        d.resultOmitted,
      ]);
    const ownPassed = (i: number) => [own[i], 'COMPLETED', ownResult, false];
    const foreignPassed = (i: number) => [foreign[i], 'COMPLETED', foreignResult, false];
    // The foreign one as a swept one is passed on: its id, no state, no result (nor a fetch to make).
    const foreignHidden = (i: number) => [foreign[i], 'UNSPECIFIED', '', false];
    const waiterOf = (job: LeasedJob | undefined) => own.indexOf(job?.dependencyResults[0]?.jobId ?? '');

    const scoped = (
      await call(t.client, t.client.reserve, reserveOf(['billing-deps'], 1), md(keys.billingWorker))
    ).jobs[0];
    assert.deepEqual(passed(scoped), [ownPassed(waiterOf(scoped)), foreignHidden(waiterOf(scoped))]);

    const stream = t.client.work(md(keys.billingWorker)) as grpc.ClientDuplexStream<
      WorkRequest,
      WorkResponse
    >;
    stream.on('error', () => {});
    const streamed = await new Promise<LeasedJob>((resolve) => {
      stream.on('data', (response: WorkResponse) => {
        if (response.kind?.$case === 'job') resolve(response.kind.value);
      });
      const subscribe = {
        queues: ['billing-deps'],
        leaseDurationMs: 60_000,
        workerId: '',
        batchResponses: false,
      };
      stream.write({ requestId: 0, kind: { $case: 'subscribe', value: subscribe } });
      stream.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    });
    stream.end();
    assert.deepEqual(passed(streamed), [ownPassed(waiterOf(streamed)), foreignHidden(waiterOf(streamed))]);

    const http = await apiCall<{ jobs: { dependencyResults: Record<string, unknown>[] }[] }>(
      t.httpUrl,
      '/v1/reserve',
      { key: keys.billingWorker, body: { queues: ['billing-deps'], maxJobs: 1 } },
    );
    assert.equal(http.status, 200, http.text);
    const [ownJson, foreignJson] = http.json.jobs[0]?.dependencyResults ?? [];
    assert.deepEqual(ownJson?.result, JSON.parse(ownResult));
    assert.deepEqual(foreignJson, {
      jobId: foreign[own.indexOf(String(ownJson?.jobId))],
      name: null,
      state: null,
      result: null,
      resultContentType: null,
      resultOmitted: false,
    });

    // A key without queues, and one whose queues hold both, get both results.
    for (const key of [keys.root, keys.wideWorker]) {
      const job = (await call(t.client, t.client.reserve, reserveOf(['billing-deps'], 1), md(key))).jobs[0];
      assert.deepEqual(passed(job), [ownPassed(waiterOf(job)), foreignPassed(waiterOf(job))], key);
    }

    // The bound counts only the results a scoped key is passed: 300 of its queues' bytes fit, where
    // 1,500 in all leave every result out for the others.
    const bounded = (
      await call(t.client, t.client.reserve, reserveOf(['billing-deps-big'], 1), md(keys.billingWorker))
    ).jobs[0];
    assert.deepEqual(passed(bounded), [
      [ownLast, 'COMPLETED', ownResult, false],
      ...foreignLast.map((id) => [id, 'UNSPECIFIED', '', false]),
    ]);
    const whole = (await call(t.client, t.client.reserve, reserveOf(['billing-deps-big'], 1), root)).jobs[0];
    assert.deepEqual(
      passed(whole),
      [ownLast, ...foreignLast].map((id) => [id, 'COMPLETED', '', true]),
    );
  });
});

describe('queues in [[grpc.api_keys]]: what the config refuses', () => {
  const refusal = async (queues: string) => {
    const error = await startTestServer({
      toml: `[[grpc.api_keys]]\nname = "k"\nrole = "worker"\nkey = "${keys.root}"\nqueues = ${queues}\n`,
    }).then(
      async (t) => {
        await t.dispose();
        return assert.fail(`queues = ${queues} was accepted`);
      },
      (e: Error) => e.message,
    );
    return error;
  };

  test('an empty list, a name with a space, a pattern listed twice, too many patterns', async () => {
    assert.match(
      await refusal('[]'),
      /grpc\.api_keys\[0\]\.queues.*is empty, which would allow no queue at all/s,
    );
    assert.match(
      await refusal('["bill ing"]'),
      /grpc\.api_keys\[0\]\.queues.*item 1 "bill ing" is not allowed/s,
    );
    assert.match(await refusal('["a", "a"]'), /"a" is listed twice/);
    const many = JSON.stringify(Array.from({ length: 65 }, (_, i) => `q${i}`));
    assert.match(await refusal(many), /lists 65 patterns; at most 64/);
  });
});
