/**
 * Wave 3's surfaces (workflows, batches) against a caller with the source and the least key
 * the docs allow: a producer key to create, a worker key to run. Each test is a finding of
 * task attack3 (2026-12-07), written before its fix: the answer is one the docs state, never
 * INTERNAL, and what a caller stores reaches its job byte for byte.
 * Real server on port 0, HTTP API over a real socket.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ClientReadableStream, Metadata } from '@grpc/grpc-js';
import { EventsRequest, type EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import {
  EnqueueFlowRequest,
  type EnqueueFlowResponse,
  GetFlowResponse,
} from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import { EnqueueRequest } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { apiKeyToml } from '../helpers/access-table.ts';
import { type ApiCall, apiCall, openSse } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const producer = 'attack3-producer-key-0123456789abcdef';
const worker = 'attack3-worker-key-0123456789abcdef';
/** Another producer: it may enqueue, and owns none of the batches here. */
const otherProducer = 'attack6-producer-key-0123456789abcdef';
let t: TestServer;

before(async () => {
  t = await startTestServer({
    http: true,
    toml:
      apiKeyToml('a3-producer', 'producer', producer) +
      apiKeyToml('a3-worker', 'worker', worker) +
      apiKeyToml('a6-producer', 'producer', otherProducer) +
      '[queues.a3-capped]\nmax_depth = 3\n',
  });
});
after(() => t?.dispose());

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as JSON.
type Json = Record<string, any>;
const call = (path: string, options: ApiCall & { key: string }) => apiCall<Json>(t.httpUrl, path, options);

/** Leases the one job of `queue` with the worker key and acks it; the reserve's answer text. */
async function runOne(queue: string): Promise<string> {
  const leased = await call('/v1/reserve', {
    key: worker,
    body: { queues: [queue], maxJobs: 1, waitTimeoutMs: 0 },
  });
  assert.equal(leased.status, 200, leased.text);
  const [job] = leased.json.jobs as Json[];
  assert.ok(job, `a job on ${queue}`);
  const ack = await call(`/v1/jobs/${job.jobId}/ack`, { key: worker, body: { attempt: job.attempt } });
  assert.equal(ack.status, 200, ack.text);
  return leased.text;
}

test('a batch completion payload reaches its job byte for byte: deep nesting, big integers', async () => {
  // JSON.stringify recurses: a payload nested 100,000 deep (200 KB) made createBatch INTERNAL
  // ("Maximum call stack size exceeded"); and a parsed payload written out again lost digits.
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const exact = '{"order": 12345678901234567890, "total": 1.50, "note": "caf\\u00e9"}';
  for (const [i, data] of [deep, exact].entries()) {
    const queue = `a3-members-${i}`;
    const done = `a3-done-${i}`;
    const raw = `{"onComplete": {"queue": "${done}", "type": "report", "payload": ${data}}, "jobs": [{"queue": "${queue}", "type": "part"}], "seal": true}`;
    const created = await call('/v1/batches', { key: producer, raw });
    assert.equal(created.status, 200, created.text.slice(0, 300));
    await runOne(queue);
    const completion = await runOne(done);
    assert.ok(completion.includes(`"data":${data}}`), completion.slice(0, 300));
  }
});

test("GetFlow's answer fits the server's message size: a wide flow is truncated, not refused", async () => {
  // One producer-key flow of 500 jobs with 60-character names and 100 edges per job (a 2.7 MB
  // request) made GetFlow answer RESOURCE_EXHAUSTED "Sent message larger than max (5940505
  // vs. 4259840)" for every caller (the CLI's `sepp flow show` too), and the HTTP API a 7.7 MB
  // body: the 20,000-job bound leaves edges unbounded. Here the same shape at a smaller scale,
  // under a 256 KiB message limit.
  const small = await startTestServer({
    toml:
      apiKeyToml('a3-producer', 'producer', producer) +
      '[grpc]\nmax_message_bytes = "256KiB"\n[queue_defaults]\nmax_payload_bytes = "64KiB"\n',
  });
  try {
    const pad = 'n'.repeat(60);
    const width = 60;
    const name = (layer: number, i: number) => `${pad}-${layer}-${i}`;
    const jobs = [0, 1].flatMap((layer) =>
      Array.from({ length: width }, (_, i) => ({
        name: name(layer, i),
        job: { queue: 'a3-wide', type: 'step' },
        after: layer === 0 ? [] : Array.from({ length: width }, (_, p) => name(0, p)),
      })),
    );
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${producer}`);
    const enqueued = await new Promise<EnqueueFlowResponse>((resolve, reject) =>
      small.client.enqueueFlow(EnqueueFlowRequest.fromPartial({ jobs }), metadata, (error, answer) =>
        error ? reject(error) : resolve(answer),
      ),
    );
    assert.ok(enqueued.committed);
    const flow = await new Promise<GetFlowResponse>((resolve, reject) =>
      small.client.getFlow({ jobId: enqueued.jobs[0]!.jobId, limit: 0 }, metadata, (error, answer) =>
        error ? reject(error) : resolve(answer),
      ),
    );
    assert.equal(flow.truncated, true);
    assert.ok(flow.jobs.length > width && flow.jobs.length < 2 * width, `${flow.jobs.length} jobs`);
    assert.ok(GetFlowResponse.encode(flow).finish().length <= 256 * 1024);
    // Every job in the answer comes with all of its edges.
    const sent = new Set(flow.jobs.map((j) => j.jobId));
    const edgesOf = (id: string) => flow.edges.filter((e) => e.jobId === id).length;
    for (const job of enqueued.jobs)
      if (sent.has(job.jobId)) assert.ok([0, width].includes(edgesOf(job.jobId)));
  } finally {
    await small.dispose();
  }
});

test('max_depth counts jobs waiting on dependencies: a gate job does not let a queue fill past it', async () => {
  // Waiting jobs were not counted: ten jobs that wait on one gate job were all accepted into a
  // queue of max_depth 3, and the gate's ack made all ten ready at once.
  const gate = await call('/v1/jobs', { key: producer, body: { queue: 'a3-gate', type: 'gate' } });
  assert.equal(gate.status, 200, gate.text);
  // One request each: a request's own jobs were counted, the stored waiting ones not.
  const reasons: string[] = [];
  for (let i = 0; i < 10; i++) {
    const sent = await call('/v1/jobs', {
      key: producer,
      body: { queue: 'a3-capped', type: 'held', dependsOn: [gate.json.jobId] },
    });
    reasons.push(sent.status === 200 ? 'accepted' : sent.json.error.rejectionReason);
  }
  assert.deepEqual(reasons, [...Array(3).fill('accepted'), ...Array(7).fill('queue_full')]);
  // Ready or waiting, the queue holds three: one more of either kind is refused.
  await runOne('a3-gate');
  const more = await call('/v1/jobs', { key: producer, body: { queue: 'a3-capped', type: 'held' } });
  assert.equal(more.status, 429, more.text);
  assert.equal(more.json.error.rejectionReason, 'queue_full', more.text);
});

test('unique_while_active: a job waiting on a dependency holds its key, a retry stores no second job', async () => {
  // A waiting job was not "active": a retried enqueue (after a timeout, say) with the same key
  // stored a second job, and both ran once the gate completed.
  const gate = await call('/v1/jobs', { key: producer, body: { queue: 'a3-gate2', type: 'gate' } });
  const enqueue = () =>
    call('/v1/jobs', {
      key: producer,
      body: {
        queue: 'a3-unique',
        type: 'once',
        idempotencyKey: 'order-42',
        uniqueWhileActive: true,
        dependsOn: [gate.json.jobId],
      },
    });
  const first = await enqueue();
  const retry = await enqueue();
  assert.equal(first.status, 200, first.text);
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.json.jobId, first.json.jobId, retry.text);
  assert.equal(retry.json.deduplicated, true);
});

test('grpc.max_event_subscribers_per_key holds over the HTTP API too: one key cannot take every slot', async () => {
  // The per-key bound was counted on gRPC's Events streams only: one producer key opened every
  // subscriber slot with HTTP event streams (or outcome waits), and another key's Events
  // stream was refused RESOURCE_EXHAUSTED.
  const small = await startTestServer({
    http: true,
    toml:
      apiKeyToml('a3-producer', 'producer', producer) +
      apiKeyToml('a3-worker', 'worker', worker) +
      '[limits]\nmax_event_subscribers = 4\n[grpc]\nmax_event_subscribers_per_key = 2\n',
  });
  const open: { close(): void }[] = [];
  try {
    const answers: number[] = [];
    for (let i = 0; i < 3; i++) {
      const stream = await openSse(small.httpUrl, '/v1/events', { key: producer });
      open.push(stream);
      answers.push(stream.status);
    }
    assert.deepEqual(answers, [200, 200, 429]);
    const job = await apiCall<Json>(small.httpUrl, '/v1/jobs', {
      key: producer,
      body: { queue: 'a3-events', type: 'x' },
    });
    const wait = await apiCall<Json>(small.httpUrl, `/v1/jobs/${job.json.jobId}/outcome?waitMs=1000`, {
      key: producer,
    });
    assert.equal(wait.status, 429, wait.text);
    assert.match(wait.json.error.message, /grpc\.max_event_subscribers_per_key/);
    // Another key still subscribes.
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${worker}`);
    const events = small.client.events(
      EventsRequest.fromPartial({}),
      metadata,
    ) as ClientReadableStream<EventsResponse>;
    try {
      const first = await new Promise<EventsResponse>((resolve, reject) => {
        events.once('data', resolve);
        events.once('error', reject);
      });
      assert.equal(first.caughtUp, true);
    } finally {
      events.cancel();
      events.on('error', () => {});
    }
  } finally {
    for (const stream of open) stream.close();
    await small.dispose();
  }
});

test('long-polls per key: one key cannot take the last quarter of limits.max_waiters', async () => {
  // Long-polls were bounded per server only: one worker key's idle long-polls (HTTP reserves,
  // unary Reserves, or idle Work streams, 1,000 per connection) took every slot of
  // limits.max_waiters, and every other key's long-poll was refused RESOURCE_EXHAUSTED.
  // Now the last quarter is kept for keys that hold fewer than a quarter.
  const otherWorker = 'attack3-other-worker-key-0123456789abcdef';
  const small = await startTestServer({
    http: true,
    toml:
      apiKeyToml('a3-worker', 'worker', worker) +
      apiKeyToml('a3-other', 'worker', otherWorker) +
      '[limits]\nmax_waiters = 8\n',
  });
  try {
    const longPoll = (key: string) =>
      apiCall<Json>(small.httpUrl, '/v1/reserve', {
        key,
        agent: false,
        body: { queues: ['a3-idle'], maxJobs: 1, waitTimeoutMs: 1500 },
      });
    const mine = Array.from({ length: 8 }, () => longPoll(worker));
    const refused = await Promise.race(mine);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.json.error.message, /last 2 places of limits\.max_waiters/);
    const other = await longPoll(otherWorker);
    assert.equal(other.status, 200, other.text);
    const statuses = (await Promise.all(mine)).map((a) => a.status);
    assert.deepEqual(
      [statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 429).length],
      [6, 2],
    );
  } finally {
    await small.dispose();
  }
});

test('depends_on takes a job id in upper case, as every other id field does', async () => {
  // docs/protocol.md: ids are lower case and the server accepts them in upper case too; a
  // depends_on in upper case was refused UNKNOWN_DEPENDENCY, and [id, ID] passed the "named
  // twice" check.
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${producer}`);
  const enqueue = (dependsOn: string[]) =>
    new Promise<{ jobId: string }>((resolve, reject) =>
      t.client.enqueue(
        EnqueueRequest.fromPartial({ job: { queue: 'a3-case', type: 'x', dependsOn } }),
        metadata,
        (error, answer) => (error ? reject(error) : resolve(answer)),
      ),
    );
  const gate = await enqueue([]);
  const child = await enqueue([gate.jobId.toUpperCase()]);
  const seen = await call(`/v1/jobs/${child.jobId}`, { key: producer });
  assert.deepEqual(
    seen.json.job.dependencies.map((d: Json) => d.jobId),
    [gate.jobId],
  );
  await assert.rejects(enqueue([gate.jobId, gate.jobId.toUpperCase()]), /names job .* twice/);
});

test("a member's lease token adds to its batch but does not seal another key's open batch", async () => {
  // Task attack6: AddToBatch with from_member, its lease token and `seal` skipped the owner check,
  // so a key holding a member's lease (its worker's producer key) sealed an open batch it did not
  // create, ending it before its owner had added all (SECURITY.md: only the owner or an admin seals).
  const created = await call('/v1/batches', {
    key: producer,
    body: { jobs: [{ queue: 'a6-members', type: 'part' }], onComplete: { queue: 'a6-done', type: 'report' } },
  });
  assert.equal(created.status, 200, created.text);
  const batchId = created.json.batch.id as string;
  const leased = await call('/v1/reserve', {
    key: worker,
    body: { queues: ['a6-members'], maxJobs: 1, waitTimeoutMs: 0 },
  });
  const [member] = leased.json.jobs as Json[];
  assert.ok(member?.leaseToken, leased.text);
  const fromMember = { fromMember: member.jobId, fromMemberToken: member.leaseToken };
  const add = (key: string, seal: boolean) =>
    call(`/v1/batches/${batchId}/jobs`, {
      key,
      body: { jobs: [{ queue: 'a6-members', type: 'part' }], seal, ...fromMember },
    });

  const sealed = await add(otherProducer, true);
  assert.equal(sealed.status, 403, sealed.text);
  assert.match(sealed.json.error.message, /only that key or an admin key may seal it/);
  const batch = await call(`/v1/batches/${batchId}`, { key: producer });
  assert.equal(batch.json.batch.state, 'open');
  assert.equal(batch.json.batch.members, 1, 'the refused add added nothing');
  // The member still adds, and its owner still seals (with the member's token too).
  assert.equal((await add(otherProducer, false)).status, 200);
  const byOwner = await add(producer, true);
  assert.equal(byOwner.status, 200, byOwner.text);
  assert.equal(byOwner.json.batch.state, 'sealed');
});
