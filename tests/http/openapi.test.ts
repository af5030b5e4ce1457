/**
 * The OpenAPI document: the committed docs/http-openapi.json is exactly what
 * the route declarations generate, the server serves the same, and every
 * operation it lists is called here with a valid request whose answer has
 * the status and the shape the document gives (a JSON Schema check of every
 * field: an answer field the document does not list fails too).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { committedPath, generatedText } from '../../scripts/gen-http-openapi.ts';
import { openApiDocument } from '../../src/http/index.ts';
import { apiCall, openSse } from '../helpers/http-api.ts';
import { schemaProblems } from '../helpers/json-schema.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

let t: TestServer;
let doc: Doc;

before(async () => {
  t = await startTestServer({ http: true, toml: '[queues.docs]\ncompleted_retention_ms = "1h"\n' });
  doc = JSON.parse(readFileSync(committedPath, 'utf8')) as Doc;
});
after(() => t?.dispose());

test('docs/http-openapi.json is the generated document (regenerate: npx tsx scripts/gen-http-openapi.ts)', () => {
  assert.equal(readFileSync(committedPath, 'utf8'), generatedText());
});

test('the server serves the same document, with its own version', async () => {
  const served = await apiCall(t.httpUrl, '/v1/openapi.json');
  assert.equal(served.status, 200);
  assert.deepEqual(served.json, JSON.parse(JSON.stringify(openApiDocument('0.0.0-test'))));
});

/** A leased job to settle: enqueued and reserved over the API. */
async function leased(url: string): Promise<{ jobId: string; attempt: number }> {
  await apiCall(url, '/v1/jobs', { body: { queue: 'docs', type: 't', payload: { n: 1 } } });
  const answer = await apiCall<{ jobs: { jobId: string; attempt: number }[] }>(url, '/v1/reserve', {
    body: { queues: ['docs'] },
  });
  const job = answer.json.jobs[0];
  assert.ok(job !== undefined);
  return job;
}

/** For each operation: a valid request (made ready by whatever it needs first). */
const requests: Readonly<Record<string, (url: string) => Promise<{ path: string; body?: unknown }>>> = {
  enqueue: async () => ({ path: '/v1/jobs', body: { queue: 'docs', type: 't', payload: { to: 'x' } } }),
  enqueueBatch: async () => ({
    path: '/v1/jobs/batch',
    body: {
      jobs: [
        { queue: 'docs', type: 't' },
        { queue: 'docs', type: '' },
      ],
    },
  }),
  enqueueAtomic: async () => ({ path: '/v1/jobs/atomic', body: { jobs: [{ queue: 'docs', type: 't' }] } }),
  getJob: async (url) => {
    const job = await leased(url);
    await apiCall(url, `/v1/jobs/${job.jobId}/ack`, { body: { attempt: job.attempt, result: [1, 2] } });
    return { path: `/v1/jobs/${job.jobId}` };
  },
  waitJob: async (url) => {
    const job = await leased(url);
    await apiCall(url, `/v1/jobs/${job.jobId}/nack`, {
      body: { attempt: job.attempt, deadLetter: true, errorMessage: 'e' },
    });
    return { path: `/v1/jobs/${job.jobId}/outcome?waitMs=1000` };
  },
  cancelJob: async (url) => {
    const answer = await apiCall<{ jobId: string }>(url, '/v1/jobs', {
      body: { queue: 'docs-idle', type: 't' },
    });
    return { path: `/v1/jobs/${answer.json.jobId}/cancel` };
  },
  reserve: async (url) => {
    await apiCall(url, '/v1/jobs', { body: { queue: 'docs-r', type: 't', payloadBase64: 'AAE=' } });
    return { path: '/v1/reserve', body: { queues: ['docs-r'], maxJobs: 10, waitTimeoutMs: 0 } };
  },
  ack: async (url) => {
    const job = await leased(url);
    return { path: `/v1/jobs/${job.jobId}/ack`, body: { attempt: job.attempt } };
  },
  ackBatch: async (url) => {
    const job = await leased(url);
    return { path: '/v1/acks', body: { acks: [{ jobId: job.jobId, attempt: job.attempt }] } };
  },
  nack: async (url) => {
    const job = await leased(url);
    return { path: `/v1/jobs/${job.jobId}/nack`, body: { attempt: job.attempt, errorMessage: 'try again' } };
  },
  extend: async (url) => {
    const job = await leased(url);
    return { path: `/v1/jobs/${job.jobId}/extend`, body: { attempt: job.attempt, leaseDurationMs: 60_000 } };
  },
  reportProgress: async (url) => {
    const job = await leased(url);
    return {
      path: `/v1/jobs/${job.jobId}/progress`,
      body: { attempt: job.attempt, percent: 50, json: { step: 2 } },
    };
  },
  events: async () => ({ path: '/v1/events?fromOldest=true&queues=docs' }),
  getOpenApi: async () => ({ path: '/v1/openapi.json' }),
  enqueueFlow: async () => ({
    path: '/v1/flows',
    body: {
      jobs: [
        { name: 'a', job: { queue: 'docs-flow', type: 't', payload: { n: 1 } } },
        { name: 'b', after: ['a'], job: { queue: 'docs-flow', type: 't', onDependencyFailure: 'run' } },
      ],
    },
  }),
  getFlow: async (url) => ({ path: `/v1/jobs/${(await flow(url)).b}/flow` }),
  cancelFlow: async (url) => ({ path: `/v1/jobs/${(await flow(url)).a}/flow/cancel` }),
  createBatch: async () => ({
    path: '/v1/batches',
    body: {
      onComplete: { queue: 'docs-done', type: 'done', payload: { report: 1 } },
      jobs: [
        { queue: 'docs-batch', type: 't' },
        { queue: '', type: 't' },
      ],
    },
  }),
  addToBatch: async (url) => ({
    path: `/v1/batches/${await openBatch(url)}/jobs`,
    body: { jobs: [{ queue: 'docs-batch', type: 't' }], seal: true },
  }),
  sealBatch: async (url) => ({ path: `/v1/batches/${await openBatch(url)}/seal` }),
  getBatch: async (url) => {
    const id = await openBatch(url);
    await apiCall(url, `/v1/batches/${id}/jobs`, { body: { jobs: [{ queue: 'docs-batch', type: 't' }] } });
    return { path: `/v1/batches/${id}?membersLimit=10` };
  },
  getServerInfo: async () => ({ path: '/v1/server-info' }),
  listBatches: async (url) => {
    await openBatch(url);
    return { path: '/v1/batches?state=open&pageSize=1' };
  },
  cancelBatch: async (url) => {
    const id = await openBatch(url);
    await apiCall(url, `/v1/batches/${id}/jobs`, { body: { jobs: [{ queue: 'docs-batch', type: 't' }] } });
    return { path: `/v1/batches/${id}/cancel` };
  },
};

/** A flow of two jobs (b waits on a), by name. */
async function flow(url: string): Promise<Record<string, string>> {
  const answer = await apiCall<{ jobs: { name: string; jobId: string }[] }>(url, '/v1/flows', {
    body: {
      jobs: [
        { name: 'a', job: { queue: 'docs-flow', type: 't' } },
        { name: 'b', after: ['a'], job: { queue: 'docs-flow', type: 't' } },
      ],
    },
  });
  return Object.fromEntries(answer.json.jobs.map((j) => [j.name, j.jobId]));
}

/** A new open batch's id. */
async function openBatch(url: string): Promise<string> {
  const answer = await apiCall<{ batch: { id: string } }>(url, '/v1/batches', { body: {} });
  return answer.json.batch.id;
}

test('every operation the document lists answers a valid request with its documented 200 and shape', async () => {
  const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );
  assert.deepEqual(
    operations.map((o) => o.op.operationId).sort(),
    Object.keys(requests).sort(),
    'a request for every documented operation',
  );
  const problems: string[] = [];
  for (const { method, op } of operations) {
    const prepare = requests[op.operationId];
    assert.ok(prepare !== undefined);
    const { path, body } = await prepare(t.httpUrl);
    const ok = op.responses['200']?.content;
    assert.ok(ok !== undefined, op.operationId);
    if (body !== undefined) {
      const requestSchema = op.requestBody?.content['application/json'].schema;
      assert.ok(requestSchema !== undefined, `${op.operationId} documents its body`);
      problems.push(
        ...schemaProblems(requestSchema, body, doc.components.schemas, `${op.operationId} request`),
      );
    }
    if (ok['text/event-stream'] !== undefined) {
      const stream = await openSse(t.httpUrl, path);
      assert.equal(stream.status, 200, op.operationId);
      const event = await stream.next();
      stream.close();
      problems.push(
        ...schemaProblems(
          ok['text/event-stream'].schema,
          JSON.parse(event.data),
          doc.components.schemas,
          op.operationId,
        ),
      );
      continue;
    }
    const answer = await apiCall(t.httpUrl, path, {
      method: method as 'GET' | 'POST',
      ...(body === undefined ? {} : { body }),
    });
    assert.equal(answer.status, 200, `${op.operationId}: ${answer.text}`);
    const schema = ok['application/json']?.schema;
    assert.ok(schema !== undefined, op.operationId);
    problems.push(...schemaProblems(schema, answer.json, doc.components.schemas, op.operationId));
  }
  assert.deepEqual(problems, []);
});

test('every error status an operation may answer is documented for it, with the one error shape', async () => {
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === '200') continue;
        assert.deepEqual(
          response.content?.['application/json']?.schema,
          { $ref: '#/components/schemas/Error' },
          `${method} ${path} ${status}`,
        );
      }
      for (const status of ['400', '413', '415', '429', '500', '503']) {
        assert.ok(op.responses[status], `${method} ${path} documents ${status}`);
      }
    }
  }
});

test('an answer field is required unless the document says when it is absent', () => {
  // A generated client makes every field not in `required` optional: a field the server always
  // writes must be required (null when it has no value), or every client checks for nothing.
  // Absent at times: a payload or result in one of its two forms, one of a per-job result's
  // `accepted` or `rejection`, an event's fields of other kinds, an outcome's of other states.
  const alternates = new Set(['payload', 'payloadBase64', 'result', 'resultBase64', 'accepted', 'rejection']);
  const byShape: Readonly<Record<string, readonly string[]>> = {
    JobEvent: Object.keys(doc.components.schemas.JobEvent?.properties ?? {}),
    JobOutcome: ['resultContentType', 'error', 'deadReason'],
  };
  const problems: string[] = [];
  const seen = new Set<Schema>();
  const visit = (schema: Schema, at: string, allowed: readonly string[] = []) => {
    if (seen.has(schema)) return;
    seen.add(schema);
    if (typeof schema.$ref === 'string') {
      const name = schema.$ref.replace('#/components/schemas/', '');
      const target = doc.components.schemas[name];
      assert.ok(target !== undefined, name);
      visit(target, name, byShape[name]);
      return;
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const required = new Set((schema.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      if (!required.has(name) && !alternates.has(name) && !allowed.includes(name)) {
        problems.push(`${at}.${name}`);
      }
      visit(property, `${at}.${name}`);
    }
    if (typeof schema.items === 'object' && schema.items !== null) visit(schema.items as Schema, `${at}[]`);
  };
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const content of Object.values(operation.responses['200']?.content ?? {})) {
        visit(content.schema, `${method} ${path}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
