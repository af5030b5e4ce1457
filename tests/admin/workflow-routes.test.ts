/**
 * Workflows in the admin API (issue 33): a job's flow with its edges, a job detail's links,
 * a batch with its counts and members page by page, and an operator's cancel of a flow or a
 * batch as one audited act; every answer matches the OpenAPI document's schema.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { enc, loggedIn, openTestAdmin, type TestAdmin, TestClient } from '../helpers/admin.ts';
import { schemaProblems } from '../helpers/json-schema.ts';

type Schema = Record<string, unknown>;

let admin: TestAdmin;
let engine: Engine;
let viewer: TestClient;
let op: TestClient;
let schemas: Record<string, Schema>;

before(async () => {
  admin = await openTestAdmin();
  engine = admin.t.engine;
  viewer = await loggedIn(admin, 'viewer');
  op = await loggedIn(admin, 'operator');
  const doc = await new TestClient(admin.app).get<{ components: { schemas: Record<string, Schema> } }>(
    '/api/openapi.json',
  );
  schemas = doc.body.components.schemas;
});
after(() => admin.dispose());

function matches(name: string, body: unknown): void {
  assert.deepEqual(schemaProblems({ $ref: `#/components/schemas/${name}` }, body, schemas), []);
}

async function diamond(): Promise<Record<string, string>> {
  const job = (name: string, after: string[] = []) => ({
    name,
    after,
    queue: 'etl',
    type: name,
    payload: enc('{}'),
  });
  const flow = await engine.enqueueFlow([
    job('extract'),
    job('left', ['extract']),
    job('right', ['extract']),
    job('load', ['left', 'right']),
  ]);
  assert.ok(flow.committed);
  return Object.fromEntries(flow.jobs.map((j) => [j.name, j.jobId]));
}

test("a job's flow: every job connected to it, its edges, and the job detail's links", async () => {
  const ids = await diamond();
  const reply = await viewer.get<{
    jobs: { id: string; state: string }[];
    edges: unknown[];
    truncated: boolean;
  }>(`/api/v1/jobs/${ids.right}/flow`);
  assert.equal(reply.status, 200);
  matches('Flow', reply.body);
  assert.deepEqual(
    reply.body.jobs.map((j) => [j.id, j.state]),
    [
      [ids.extract, 'ready'],
      [ids.left, 'waiting'],
      [ids.right, 'waiting'],
      [ids.load, 'waiting'],
    ],
  );
  assert.equal(reply.body.edges.length, 4);
  assert.equal(reply.body.truncated, false);
  const partial = await viewer.get<{ jobs: unknown[]; truncated: boolean }>(
    `/api/v1/jobs/${ids.load}/flow?limit=2`,
  );
  assert.equal(partial.body.jobs.length, 2);
  assert.equal(partial.body.truncated, true);

  const detail = await viewer.get(`/api/v1/jobs/${ids.load}`);
  matches('JobDetail', detail.body);
  assert.deepEqual(
    (detail.body.dependencies as { id: string; edge: string; name: string }[]).map((d) => [
      d.id,
      d.edge,
      d.name,
    ]),
    [
      [ids.left, 'pending', 'left'],
      [ids.right, 'pending', 'right'],
    ],
  );
  const root = await viewer.get(`/api/v1/jobs/${ids.extract}`);
  matches('JobDetail', root.body);
  assert.equal((root.body.dependents as unknown[]).length, 2);

  assert.equal((await viewer.get(`/api/v1/jobs/${crypto.randomUUID()}/flow`)).status, 404);
  assert.equal((await viewer.get('/api/v1/jobs/nope/flow')).status, 400);
  assert.equal((await viewer.get(`/api/v1/jobs/${ids.load}/flow?limit=0`)).status, 400);
  // Over the OpenAPI's maximum is refused naming `limit`, as over the HTTP API, not clamped.
  const over = await viewer.get(`/api/v1/jobs/${ids.load}/flow?limit=20001`);
  assert.equal(over.status, 400);
  assert.match(String(over.body.error?.message), /^limit is 20001; it must be an integer from 1 to 20000/);
});

test('cancel a flow: every job not ended, one audit entry; a viewer may not', async () => {
  const ids = await diamond();
  assert.equal((await viewer.post(`/api/v1/jobs/${ids.load}/flow/cancel`)).status, 403);
  const reply = await op.post(`/api/v1/jobs/${ids.load}/flow/cancel`);
  assert.equal(reply.status, 200);
  matches('WorkflowCancelResult', reply.body);
  assert.deepEqual(reply.body, { cancelled: 4, cancelRequested: 0 });
  for (const id of Object.values(ids)) assert.equal((await engine.getJob(id)).state, 'cancelled');
  const [entry] = (await engine.listAudit({ pageSize: 1 })).items;
  assert.deepEqual(
    [entry?.action, entry?.target, entry?.actor],
    ['flow.cancel', `job:${ids.load}`, 'operator'],
  );
});

test('a batch: counts and members page by page; cancel it as one act and it ends', async () => {
  const jobs = Array.from({ length: 5 }, (_, i) => ({
    queue: 'parts',
    type: `part-${i}`,
    payload: enc('{}'),
  }));
  const { batch } = await engine.createBatch({
    onComplete: { queue: 'callbacks', type: 'done', payload: enc('{}') },
    jobs,
    seal: true,
  });
  const [first] = await engine.reserve({ queues: ['parts'], maxJobs: 1 });
  await engine.ack({ jobId: first!.id, attempt: first!.attempt });

  const page1 = await viewer.get<{
    batch: { pending: number; completed: number; state: string };
    members: { jobId: string; position: number; memberState: string }[];
    nextCursor: string | null;
  }>(`/api/v1/batches/${batch.id}?limit=3`);
  assert.equal(page1.status, 200);
  matches('BatchPage', page1.body);
  assert.deepEqual(
    [page1.body.batch.state, page1.body.batch.pending, page1.body.batch.completed],
    ['sealed', 4, 1],
  );
  assert.deepEqual(
    page1.body.members.map((m) => [m.position, m.memberState]),
    [
      [0, 'completed'],
      [1, 'pending'],
      [2, 'pending'],
    ],
  );
  assert.equal(page1.body.nextCursor, '2');
  const page2 = await viewer.get<{ members: { position: number }[]; nextCursor: string | null }>(
    `/api/v1/batches/${batch.id}?limit=3&cursor=2`,
  );
  assert.deepEqual(
    page2.body.members.map((m) => m.position),
    [3, 4],
  );
  assert.equal(page2.body.nextCursor, null);
  assert.equal((await viewer.get(`/api/v1/batches/${batch.id}?cursor=x`)).status, 400);
  assert.equal((await viewer.get(`/api/v1/batches/${crypto.randomUUID()}`)).status, 404);
  assert.equal((await viewer.get('/api/v1/batches/not-a-batch')).status, 400);

  assert.equal((await viewer.post(`/api/v1/batches/${batch.id}/cancel`)).status, 403);
  const cancel = await op.post(`/api/v1/batches/${batch.id}/cancel`);
  assert.equal(cancel.status, 200);
  assert.deepEqual(cancel.body, { cancelled: 4, cancelRequested: 0 });
  const ended = await viewer.get<{
    batch: { state: string; cancelled: number; completeJobId: string | null };
  }>(`/api/v1/batches/${batch.id}`);
  assert.equal(ended.body.batch.state, 'ended');
  assert.equal(ended.body.batch.cancelled, 4);
  assert.notEqual(ended.body.batch.completeJobId, null);
  const [entry] = (await engine.listAudit({ pageSize: 1 })).items;
  assert.deepEqual([entry?.action, entry?.target], ['batch.cancel', `batch:${batch.id}`]);
  // A cancelled member (kept for its queue's retention) names its batch.
  const member = await viewer.get(`/api/v1/jobs/${page1.body.members[1]!.jobId}`);
  assert.equal(member.body.batchId, batch.id);
});

test('the batches, newest first, by state and owner, page by page', async () => {
  const first = (await engine.createBatch({ owner: 'etl' })).batch.id;
  const second = (await engine.createBatch({ owner: 'billing', seal: true })).batch.id;
  const all = await viewer.get<{ batches: { id: string; owner: string }[]; nextCursor: string | null }>(
    '/api/v1/batches?limit=1',
  );
  assert.equal(all.status, 200);
  matches('BatchList', all.body);
  assert.deepEqual(
    all.body.batches.map((b) => [b.id, b.owner]),
    [[second, 'billing']],
  );
  const next = await viewer.get<{ batches: { id: string }[] }>(
    `/api/v1/batches?limit=1&cursor=${encodeURIComponent(all.body.nextCursor ?? '')}`,
  );
  assert.deepEqual(
    next.body.batches.map((b) => b.id),
    [first],
  );
  const etl = await viewer.get<{ batches: { id: string }[] }>('/api/v1/batches?owner=etl&state=open');
  assert.deepEqual(
    etl.body.batches.map((b) => b.id),
    [first],
  );
  // A batch sealed with nothing pending ends at once.
  const ended = await viewer.get<{ batches: { id: string }[] }>('/api/v1/batches?state=ended&owner=billing');
  assert.deepEqual(
    ended.body.batches.map((b) => b.id),
    [second],
  );
  const done = await viewer.get('/api/v1/batches?state=done');
  assert.equal(done.status, 400);
  assert.match(JSON.stringify(done.body), /state: \\"done\\" is no batch state; use open, sealed, ended/);
  assert.equal((await viewer.get('/api/v1/batches?cursor=nope')).status, 400);
  // The page size is checked as GET /v1/batches and gRPC ListBatches check it: none or 0 is the
  // engine's default, 100; more than limits.max_page_size is a 400.
  for (let i = 0; i < 50; i++) await engine.createBatch({ owner: 'etl' });
  for (const query of ['', '?limit=0']) {
    const page = await viewer.get<{ batches: unknown[] }>(`/api/v1/batches${query}`);
    // The 52 made here and those of the tests before: more than the 50 this route used to give.
    assert.ok(page.body.batches.length > 50, `${query}: ${page.body.batches.length}`);
  }
  const over = await viewer.get<{ error: { message: string } }>('/api/v1/batches?limit=100000');
  assert.equal(over.status, 400);
  assert.equal(
    over.body.error.message,
    `limit is 100000; it must be an integer from 1 to ${engine.limits.maxPageSize} (limits.max_page_size), or 0 for the default`,
    'names the parameter as this API does',
  );
});

test('a dead letter: how many jobs wait on it, which its delete cancels', async () => {
  const { jobId: dead } = await engine.enqueue({ queue: 'dlw', type: 't', payload: enc(''), maxAttempts: 1 });
  const waiting = (queue: string, id: string) =>
    viewer.get<{ waiting: number; more: boolean }>(`/api/v1/queues/${queue}/dead-letters/${id}/waiting`);
  const waits = async () =>
    (
      await engine.enqueue({
        queue: 'dlw-after',
        type: 't',
        payload: enc(''),
        dependsOn: [dead],
        onDependencyFailure: 'wait',
      })
    ).jobId;
  const first = await waits();
  const second = await waits();
  await engine.enqueue({
    queue: 'dlw-after',
    type: 't',
    payload: enc(''),
    dependsOn: [dead],
    onDependencyFailure: 'run',
  });
  assert.deepEqual((await waiting('dlw', dead)).body, { waiting: 0, more: false }, 'not dead yet');
  const [leased] = await engine.reserve({ queues: ['dlw'], maxJobs: 1 });
  await engine.nack({ jobId: dead, attempt: leased!.attempt, error: 'boom' });
  const reply = await waiting('dlw', dead);
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, { waiting: 2, more: false }, 'the `run` one went on when it died');
  assert.deepEqual(
    schemaProblems(
      await responseSchema('/api/v1/queues/{queue}/dead-letters/{jobId}/waiting'),
      reply.body,
      schemas,
    ),
    [],
  );
  assert.deepEqual((await waiting('dlw', dead.toUpperCase())).body, { waiting: 2, more: false });
  assert.deepEqual((await waiting('etl', dead)).body, { waiting: 0, more: false }, 'no dead letter of etl');
  assert.equal((await waiting('no-such-queue', dead)).status, 404);
  assert.deepEqual((await op.post('/api/v1/queues/dlw/dead-letters/delete', { jobIds: [dead] })).body, {
    changed: 1,
  });
  for (const id of [first, second]) {
    const job = await engine.getJob(id);
    assert.equal(`${job.state} ${job.cancelledBy}`, `cancelled dependency:${dead} deleted`);
  }
  assert.deepEqual((await waiting('dlw', dead)).body, { waiting: 0, more: false });
});

/** The schema of a GET route's answer, as the OpenAPI document gives it. */
async function responseSchema(path: string): Promise<Schema> {
  type Doc = {
    paths: Record<string, { get: { responses: { 200: { content: Record<string, { schema: Schema }> } } } }>;
  };
  const doc = await new TestClient(admin.app).get<Doc>('/api/openapi.json');
  const schema = doc.body.paths[path]?.get.responses[200].content['application/json']?.schema;
  assert.ok(schema !== undefined, path);
  return schema;
}
