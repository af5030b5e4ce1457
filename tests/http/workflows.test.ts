/**
 * Workflows over the HTTP API (issue 33): dependsOn and the failure policy on an enqueue,
 * the links on getJob, the dependencies' results handed to the worker at reserve, a flow
 * enqueued by name and read back, a batch created, filled, ended by its members' acks with
 * its completion job enqueued once, a cancel audited; a key scoped to queues is refused
 * what spans queues, and bad input is a 400 naming the field.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiKeyToml } from '../helpers/access-table.ts';
import { type ApiCall, apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const admin = 'wf-admin-key-0123456789abcdef';
const scoped = 'wf-scoped-key-0123456789abcdef';
let t: TestServer;

before(async () => {
  t = await startTestServer({
    http: true,
    toml: apiKeyToml('ops', 'admin', admin) + apiKeyToml('etl-only', 'admin', scoped, ['etl*']),
  });
});
after(() => t?.dispose());

// biome-ignore lint/suspicious/noExplicitAny: the answers are read field by field, as JSON; their schemas are checked in openapi.test.ts.
type Json = Record<string, any>;
const call = async (path: string, options: ApiCall = {}) => {
  const answer = await apiCall<Json>(t.httpUrl, path, { key: admin, ...options });
  return answer;
};

async function reserveOne(queue: string): Promise<Json> {
  const answer = await call('/v1/reserve', { body: { queues: [queue], maxJobs: 1, waitTimeoutMs: 0 } });
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.jobs.length, 1, `one job of ${queue}`);
  return answer.json.jobs[0];
}

test('dependsOn: the job waits, getJob links both ways, the worker gets the result it waited for', async () => {
  const parent = await call('/v1/jobs', { body: { queue: 'etl-a', type: 'extract' } });
  const parentId = parent.json.jobId as string;
  const child = await call('/v1/jobs', {
    body: { queue: 'etl-b', type: 'load', dependsOn: [parentId], onDependencyFailure: 'run' },
  });
  assert.equal(child.status, 200, child.text);
  const childId = child.json.jobId as string;
  const waiting = await call(`/v1/jobs/${childId}`);
  assert.equal(waiting.json.job.state, 'waiting');
  assert.deepEqual(
    waiting.json.job.dependencies.map((d: Json) => [d.jobId, d.edge, d.queue]),
    [[parentId, 'pending', 'etl-a']],
  );
  assert.equal((await call(`/v1/jobs/${parentId}`)).json.job.dependents[0].jobId, childId);
  assert.equal(waiting.json.job.batchId, null);

  const leased = await reserveOne('etl-a');
  assert.deepEqual(leased.dependencyResults, []);
  assert.equal(leased.batchId, null);
  const ack = await call(`/v1/jobs/${parentId}/ack`, {
    body: { attempt: leased.attempt, result: { rows: 42 } },
  });
  assert.equal(ack.status, 200, ack.text);
  const released = await reserveOne('etl-b');
  assert.equal(released.jobId, childId);
  assert.deepEqual(released.dependencyResults, [
    {
      jobId: parentId,
      name: null,
      state: 'completed',
      result: { rows: 42 },
      resultContentType: 'application/json',
      resultOmitted: false,
    },
  ]);
  // A scoped key sees the links to its own queues only.
  const other = await call('/v1/jobs', { body: { queue: 'mail', type: 'x' } });
  const mixed = await call('/v1/jobs', {
    body: { queue: 'etl-c', type: 'y', dependsOn: [other.json.jobId] },
  });
  const seen = await call(`/v1/jobs/${mixed.json.jobId}`, { key: scoped });
  assert.equal(seen.status, 200);
  assert.deepEqual(seen.json.job.dependencies, []);
});

test('a flow by name: stored all or none, read back as a graph, cancelled as one audited act', async () => {
  const flow = await call('/v1/flows', {
    body: {
      jobs: [
        { name: 'split', job: { queue: 'etl-f', type: 'split' } },
        { name: 'left', after: ['split'], job: { queue: 'etl-f', type: 'part' } },
        { name: 'right', after: ['split'], job: { queue: 'etl-f', type: 'part' } },
        { name: 'sum', after: ['left', 'right'], job: { queue: 'etl-f', type: 'sum' } },
      ],
    },
  });
  assert.equal(flow.status, 200, flow.text);
  assert.equal(flow.json.committed, true);
  const ids = Object.fromEntries(flow.json.jobs.map((j: Json) => [j.name, j.jobId]));
  const graph = await call(`/v1/jobs/${ids.sum}/flow`);
  assert.deepEqual(
    graph.json.jobs.map((j: Json) => j.state),
    ['ready', 'waiting', 'waiting', 'waiting'],
  );
  assert.equal(graph.json.edges.length, 4);
  const one = await call(`/v1/jobs/${ids.sum}/flow?limit=1`);
  assert.deepEqual([one.json.jobs.length, one.json.truncated], [1, true]);
  // Over the OpenAPI's maximum is refused naming `limit`, as a page size is, not clamped.
  const over = await call(`/v1/jobs/${ids.sum}/flow?limit=20001`);
  assert.equal(over.status, 400, over.text);
  assert.equal(
    over.json.error.message,
    'limit is 20001; it must be an integer from 1 to 20000 (the most jobs one flow answer lists), or 0 for the default',
  );
  assert.deepEqual(
    graph.json.edges.filter((e: Json) => e.jobId === ids.sum).map((e: Json) => e.name),
    ['left', 'right'],
  );

  const unknown = await call('/v1/flows', {
    body: { jobs: [{ name: 'a', after: ['nope'], job: { queue: 'etl-f', type: 't' } }] },
  });
  assert.equal(unknown.status, 400, unknown.text);
  assert.match(unknown.json.error.message, /nope/);

  const cancel = await call(`/v1/jobs/${ids.left}/flow/cancel`, { method: 'POST' });
  assert.equal(cancel.status, 200, cancel.text);
  assert.deepEqual(cancel.json, { cancelled: 4, cancelRequested: 0 });
  const [entry] = (await t.server.engine.listAudit({ pageSize: 1 })).items;
  assert.deepEqual([entry?.action, entry?.actor, entry?.details.via], ['flow.cancel', 'key:ops', 'http']);
});

test('a batch: created, filled, ended by its last ack, its completion job enqueued once', async () => {
  const created = await call('/v1/batches', {
    body: {
      onComplete: { queue: 'etl-done', type: 'report', payload: { day: 1 } },
      onSuccess: { queue: 'etl-done', type: 'publish' },
      jobs: [{ queue: 'etl-rows', type: 'row' }],
    },
  });
  assert.equal(created.status, 200, created.text);
  const batchId = created.json.batch.id as string;
  assert.equal(created.json.batch.state, 'open');
  assert.ok(created.json.results[0].accepted);
  const added = await call(`/v1/batches/${batchId}/jobs`, {
    body: {
      jobs: [
        { queue: 'etl-rows', type: 'row' },
        { queue: 'etl-rows', type: '' },
      ],
      seal: true,
    },
  });
  assert.equal(added.status, 200, added.text);
  assert.equal(added.json.results[1].rejection.reason, 'invalid_name');
  assert.deepEqual([added.json.batch.state, added.json.batch.members], ['sealed', 2]);
  for (let i = 0; i < 2; i++) {
    const job = await reserveOne('etl-rows');
    assert.equal(job.batchId, batchId, 'a reserved member carries its batch id');
    const ack = await call(`/v1/jobs/${job.jobId}/ack`, { body: { attempt: job.attempt } });
    assert.equal(ack.status, 200, ack.text);
  }
  const tooMany = await call('/v1/batches?pageSize=100000');
  assert.equal(tooMany.status, 400, tooMany.text);
  assert.equal(
    tooMany.json.error.message,
    `pageSize is 100000; it must be an integer from 1 to ${t.server.engine.limits.maxPageSize} (limits.max_page_size), or 0 for the default`,
  );
  const ended = await call(`/v1/batches/${batchId}?membersLimit=1`);
  assert.equal(ended.status, 200, ended.text);
  assert.deepEqual([ended.json.batch.state, ended.json.batch.completed], ['ended', 2]);
  assert.equal(ended.json.members.length, 1);
  const report = await reserveOne('etl-done');
  const publish = await reserveOne('etl-done');
  assert.deepEqual(
    [report.jobId, publish.jobId].sort(),
    [ended.json.batch.completeJobId, ended.json.batch.successJobId].sort(),
  );
  assert.equal(report.payload.batch.completed, 2);
  assert.equal(report.payload.data.day, 1);
  const again = await call(`/v1/batches/${batchId}/seal`, { method: 'POST' });
  assert.equal(again.json.batch.state, 'ended');
  const late = await call(`/v1/batches/${batchId}/jobs`, {
    body: { jobs: [{ queue: 'etl-rows', type: 'row' }] },
  });
  assert.equal(late.status, 409, late.text);
});

test('sealIfAllStored: sealed in the create or add when no job was refused, else left open', async () => {
  const states = [];
  for (const type of ['kept', '']) {
    const created = await call('/v1/batches', {
      body: { jobs: [{ queue: 'etl-once', type }], sealIfAllStored: true },
    });
    assert.equal(created.status, 200, created.text);
    states.push(created.json.batch.state);
    const open = await call('/v1/batches', { body: {} });
    const added = await call(`/v1/batches/${open.json.batch.id}/jobs`, {
      body: { jobs: [{ queue: 'etl-once', type }], sealIfAllStored: true },
    });
    assert.equal(added.status, 200, added.text);
    states.push(added.json.batch.state);
  }
  assert.deepEqual(states, ['sealed', 'sealed', 'open', 'open']);
});

test('a batch with onDeath: the first dead member enqueues it, getBatch names both', async () => {
  const created = await call('/v1/batches', {
    body: {
      onDeath: { queue: 'etl-alerts', type: 'page', payload: { team: 'etl' } },
      jobs: [
        { queue: 'etl-dying', type: 'row' },
        { queue: 'etl-dying', type: 'row' },
      ],
      seal: true,
    },
  });
  assert.equal(created.status, 200, created.text);
  assert.deepEqual(
    [created.json.batch.hasOnDeath, created.json.batch.deathJobId, created.json.batch.firstDeadId],
    [true, null, null],
  );
  const job = await reserveOne('etl-dying');
  const nack = await call(`/v1/jobs/${job.jobId}/nack`, {
    body: { attempt: job.attempt, errorMessage: 'bad row', deadLetter: true },
  });
  assert.equal(nack.status, 200, nack.text);
  const read = await call(`/v1/batches/${created.json.batch.id}`);
  assert.deepEqual(
    [read.json.batch.state, read.json.batch.pending, read.json.batch.firstDeadId],
    ['sealed', 1, job.jobId],
  );
  const alert = await reserveOne('etl-alerts');
  assert.equal(alert.jobId, read.json.batch.deathJobId);
  assert.deepEqual(alert.payload.batch.firstDead, { jobId: job.jobId, error: 'bad row' });
  assert.deepEqual(alert.payload.data, { team: 'etl' });
});

test('a scoped key is refused what spans queues; bad input is a 400 naming the field', async () => {
  const parent = await call('/v1/jobs', { body: { queue: 'etl-s', type: 't' } });
  const refusals = [
    await call('/v1/jobs', {
      key: scoped,
      body: { queue: 'etl-s', type: 't', dependsOn: [parent.json.jobId] },
    }),
    await call(`/v1/jobs/${parent.json.jobId}/flow`, { key: scoped }),
    await call('/v1/batches', { key: scoped, body: {} }),
  ];
  assert.deepEqual(
    refusals.map((r) => r.status),
    [403, 403, 403],
  );
  assert.match(refusals[0]!.json.error.message, /API key etl-only .*; dependsOn is not open to a scoped key/);
  const inFlow = await call('/v1/flows', {
    key: scoped,
    body: { jobs: [{ name: 'a', job: { queue: 'etl-s', type: 't', dependsOn: [parent.json.jobId] } }] },
  });
  assert.equal(inFlow.status, 403);
  assert.match(inFlow.json.error.message, /jobs\[0\]\.job\.dependsOn is not open/);
  // A scoped key may enqueue a flow of its own queues.
  const own = await call('/v1/flows', {
    key: scoped,
    body: { jobs: [{ name: 'a', job: { queue: 'etl-s', type: 't' } }] },
  });
  assert.equal(own.status, 200, own.text);

  const bad = [
    await call('/v1/jobs', { body: { queue: 'etl-s', type: 't', dependsOn: ['x'] } }),
    await call('/v1/jobs', { body: { queue: 'etl-s', type: 't', onDependencyFailure: 'later' } }),
    await call('/v1/jobs', { body: { queue: 'etl-s', type: 't', onDependencyFailure: 'run' } }),
    await call('/v1/flows', { body: { jobs: [{ name: 'a' }] } }),
    await call('/v1/flows', {
      body: { jobs: [{ name: 'a', job: { queue: 'etl-s', type: 't' }, later: 1 }] },
    }),
    await call('/v1/batches/not-a-batch'),
    await call(`/v1/batches/${crypto.randomUUID()}/jobs`, {
      body: { jobs: [{ queue: 'etl-s', type: 't' }], fromMember: 'not-a-job' },
    }),
  ];
  assert.deepEqual(
    bad.map((r) => r.status),
    [400, 400, 400, 400, 400, 400, 400],
  );
  // Each id is named as what it is, by the field's name in this API.
  assert.match(bad[5]!.json.error.message, /^batchId: "not-a-batch" is not a batch id /);
  assert.match(bad[6]!.json.error.message, /^fromMember: "not-a-job" is not a job id /);
  assert.match(bad[0]!.json.error.message, /dependsOn\[0\]/);
  assert.match(bad[1]!.json.error.message, /onDependencyFailure/);
  assert.match(
    bad[2]!.json.error.message,
    /^onDependencyFailure is run but the job has no dependencies: .*give dependsOn/,
  );
  assert.match(bad[3]!.json.error.message, /jobs\[0\]\.job: required/);
  assert.match(bad[4]!.json.error.message, /jobs\[0\]\.later: unknown field/);
  const missing = await call(`/v1/jobs/${crypto.randomUUID()}`);
  assert.equal(missing.status, 404);
});

test('a key at limits.max_open_batches_per_key gets 429 naming the limit', async () => {
  const small = await startTestServer({
    http: true,
    toml: `${apiKeyToml('ops', 'admin', admin)}[limits]\nmax_open_batches_per_key = 1\n`,
  });
  try {
    const first = await apiCall<Json>(small.httpUrl, '/v1/batches', { key: admin, body: {} });
    assert.equal(first.status, 200, first.text);
    const second = await apiCall<Json>(small.httpUrl, '/v1/batches', { key: admin, body: {} });
    assert.equal(second.status, 429, second.text);
    assert.match(
      second.json.error.message,
      /API key ops holds 1 batches not ended.*max_open_batches_per_key/,
    );
    // Sealed with nothing pending, the first ends, and its place is free again.
    await apiCall(small.httpUrl, `/v1/batches/${first.json.batch.id}/seal`, { key: admin, method: 'POST' });
    const third = await apiCall<Json>(small.httpUrl, '/v1/batches', { key: admin, body: {} });
    assert.equal(third.status, 200, third.text);
  } finally {
    await small.dispose();
  }
});
