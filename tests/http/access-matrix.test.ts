/**
 * Who may call what over HTTP: every operation of the OpenAPI document ×
 * every kind of credential, with the exact outcome — 401, 403, or allowed
 * (the request reached its handler and got the status its minimal valid
 * request gets). The expected roles are gRPC's, from the one table in
 * tests/helpers/access-table.ts (`httpOperations` names the gRPC method each
 * operation mirrors), not derived from src/http/auth.ts.
 *
 * Also: a refusal comes before the body is read, names the key and its role
 * and never the key; without keys on loopback every call is allowed; a reload
 * that removes a key refuses it from the next request on.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { SeppError } from '../../src/engine/errors.ts';
import {
  apiKeyToml,
  credentials,
  expectedOutcome,
  httpOperations,
  keys,
  keysToml,
  missingJobId,
} from '../helpers/access-table.ts';
import { apiCall, openSse } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const queue = 'matrix';

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  allowed: number;
}

/** Each operation's minimal valid request and the status it gets once allowed. */
const calls: Readonly<Record<string, Call>> = {
  enqueue: { method: 'POST', path: '/v1/jobs', body: { queue, type: 't' }, allowed: 200 },
  enqueueBatch: {
    method: 'POST',
    path: '/v1/jobs/batch',
    body: { jobs: [{ queue, type: 't' }] },
    allowed: 200,
  },
  enqueueAtomic: {
    method: 'POST',
    path: '/v1/jobs/atomic',
    body: { jobs: [{ queue, type: 't' }] },
    allowed: 200,
  },
  getJob: { method: 'GET', path: `/v1/jobs/${missingJobId}`, allowed: 404 },
  waitJob: { method: 'GET', path: `/v1/jobs/${missingJobId}/outcome`, allowed: 404 },
  cancelJob: { method: 'POST', path: `/v1/jobs/${missingJobId}/cancel`, allowed: 404 },
  reserve: { method: 'POST', path: '/v1/reserve', body: { queues: ['matrix-empty'] }, allowed: 200 },
  ack: { method: 'POST', path: `/v1/jobs/${missingJobId}/ack`, body: { attempt: 1 }, allowed: 404 },
  ackBatch: {
    method: 'POST',
    path: '/v1/acks',
    body: { acks: [{ jobId: missingJobId, attempt: 1 }] },
    allowed: 200,
  },
  nack: { method: 'POST', path: `/v1/jobs/${missingJobId}/nack`, body: { attempt: 1 }, allowed: 404 },
  extend: { method: 'POST', path: `/v1/jobs/${missingJobId}/extend`, body: { attempt: 1 }, allowed: 404 },
  reportProgress: {
    method: 'POST',
    path: `/v1/jobs/${missingJobId}/progress`,
    body: { attempt: 1, percent: 5 },
    allowed: 404,
  },
  events: { method: 'GET', path: '/v1/events', allowed: 200 },
  getOpenApi: { method: 'GET', path: '/v1/openapi.json', allowed: 200 },
  getServerInfo: { method: 'GET', path: '/v1/server-info', allowed: 200 },
  enqueueFlow: {
    method: 'POST',
    path: '/v1/flows',
    body: { jobs: [{ name: 'a', job: { queue, type: 't' } }] },
    allowed: 200,
  },
  getFlow: { method: 'GET', path: `/v1/jobs/${missingJobId}/flow`, allowed: 404 },
  cancelFlow: { method: 'POST', path: `/v1/jobs/${missingJobId}/flow/cancel`, allowed: 404 },
  createBatch: { method: 'POST', path: '/v1/batches', body: {}, allowed: 200 },
  addToBatch: { method: 'POST', path: `/v1/batches/${missingJobId}/jobs`, body: { jobs: [] }, allowed: 404 },
  sealBatch: { method: 'POST', path: `/v1/batches/${missingJobId}/seal`, allowed: 404 },
  getBatch: { method: 'GET', path: `/v1/batches/${missingJobId}`, allowed: 404 },
  listBatches: { method: 'GET', path: '/v1/batches?pageSize=1', allowed: 200 },
  cancelBatch: { method: 'POST', path: `/v1/batches/${missingJobId}/cancel`, allowed: 404 },
};

/** Sends one request with exactly these Authorization values (several are sent as several headers). */
function send(
  url: string,
  call: Call,
  authorization: readonly string[],
): Promise<{ status: number; body: string }> {
  const { port } = new URL(url);
  const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: call.method,
        path: call.path,
        headers: {
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(payload.length) }),
          ...(authorization.length === 0 ? {} : { authorization: [...authorization] }),
        } as Record<string, string | string[]>,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        // An event stream answers 200 and stays open: its head is the outcome.
        if (res.headers['content-type']?.startsWith('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, body: '' });
          req.destroy();
          return;
        }
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function mismatches(url: string, operations: readonly string[]): Promise<string[]> {
  const wrong: string[] = [];
  const all = [
    ...credentials,
    {
      name: 'two Authorization headers',
      headers: [`Bearer ${keys.admin}`, `Bearer ${keys.admin}`],
      role: null,
    },
  ];
  for (const operation of operations) {
    const call = calls[operation];
    assert.ok(call !== undefined, operation);
    const method = httpOperations[operation];
    assert.ok(method !== undefined, operation);
    for (const credential of all) {
      const want =
        method === 'public'
          ? call.allowed
          : { unauthenticated: 401, denied: 403, allowed: call.allowed }[expectedOutcome(method, credential)];
      const got = await send(url, call, credential.headers);
      if (got.status !== want) {
        wrong.push(
          `${operation} with ${credential.name}: expected ${want}, got ${got.status} ${got.body.slice(0, 200)}`,
        );
      }
    }
  }
  return wrong;
}

describe('HTTP access matrix', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ http: true, toml: keysToml });
  });
  after(() => t.dispose());

  test('the table names every operation of the OpenAPI document, and nothing else', async () => {
    const doc = (
      await apiCall<{ paths: Record<string, Record<string, { operationId: string }>> }>(
        t.httpUrl,
        '/v1/openapi.json',
      )
    ).json;
    const operations = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    assert.deepEqual([...operations].sort(), Object.keys(httpOperations).sort());
    assert.deepEqual(Object.keys(calls).sort(), Object.keys(httpOperations).sort());
  });

  test('every operation × every credential: exactly the outcome the table says', async () => {
    assert.deepEqual(await mismatches(t.httpUrl, Object.keys(calls)), []);
  });

  test('a refusal names the key and its role, never the key; 401 says how to send one', async () => {
    const denied = await apiCall<{ error: { code: string; message: string } }>(t.httpUrl, '/v1/reserve', {
      key: keys.producer,
      body: { queues: ['q'] },
    });
    assert.equal(denied.status, 403);
    assert.equal(denied.json.error.code, 'permission_denied');
    assert.match(denied.json.error.message, /billing has role producer/);
    assert.match(denied.json.error.message, /needs the worker or admin role/);
    assert.ok(!denied.text.includes(keys.producer));
    const missing = await apiCall<{ error: { code: string; message: string } }>(t.httpUrl, '/v1/jobs/batch', {
      body: { jobs: [] },
    });
    assert.equal(missing.status, 401);
    assert.match(missing.json.error.message, /Authorization: Bearer <key>/);
  });

  test("a scoped key's read of a job counts toward its read share before its scope check reads the job", async () => {
    const engine = t.server.engine;
    const enqueued = await apiCall<{ jobId: string }>(t.httpUrl, '/v1/jobs', {
      key: keys.scopedProducer,
      body: { queue: 'matrix-share', type: 't' },
    });
    const id = enqueued.json.jobId;
    let jobReads = 0;
    const getJob = engine.getJob;
    const enterRead = engine.enterRead;
    engine.getJob = (...args) => {
      jobReads++;
      return getJob.apply(engine, args);
    };
    engine.enterRead = () => {
      throw new SeppError('resource_exhausted', 'its share is full');
    };
    try {
      const answer = await apiCall(t.httpUrl, `/v1/jobs/${id}`, { key: keys.scopedWorker });
      assert.equal(answer.status, 429, answer.text);
      assert.equal(jobReads, 0, 'refused before the store was read');
    } finally {
      engine.getJob = getJob;
      engine.enterRead = enterRead;
    }
    const served = await apiCall(t.httpUrl, `/v1/jobs/${id}`, { key: keys.scopedWorker });
    assert.equal(served.status, 200, served.text);
  });

  test('a request without a valid key is refused at its headers: a 1 GiB body is never read', async () => {
    const { port } = new URL(t.httpUrl);
    const readyBefore = (await t.server.engine.listQueues()).find((q) => q.name === queue)?.counts.ready;
    const answer = await new Promise<{ status: number; closed: boolean }>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/jobs',
        headers: { 'content-type': 'application/json', 'content-length': String(1024 ** 3) },
        agent: false,
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, closed: res.headers.connection === 'close' }),
        );
      });
      req.on('error', reject);
      req.write('{"queue":'); // a few bytes of the gigabyte, then nothing more
    });
    assert.deepEqual(answer, { status: 401, closed: true });
    assert.equal(
      (await t.server.engine.listQueues()).find((q) => q.name === queue)?.counts.ready,
      readyBefore,
    );
  });

  test('a key removed by a reload is refused from the next request on', async () => {
    t.writeConfig(keysToml + apiKeyToml('retired', 'admin', keys.retired));
    assert.equal((await t.server.reload()).applied, true);
    const before = await apiCall(t.httpUrl, '/v1/jobs', { key: keys.retired, body: { queue, type: 't' } });
    assert.equal(before.status, 200, before.text);
    t.writeConfig(keysToml);
    assert.equal((await t.server.reload()).applied, true);
    const after = await apiCall(t.httpUrl, '/v1/jobs', { key: keys.retired, body: { queue, type: 't' } });
    assert.equal(after.status, 401);
  });
});

describe('HTTP without API keys on loopback', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ http: true });
  });
  after(() => t.dispose());

  test('every operation is allowed without a key (as gRPC is), and any key sent is ignored', async () => {
    for (const [operation, call] of Object.entries(calls)) {
      for (const authorization of [[], [`Bearer ${keys.unknown}`]]) {
        const got = await send(t.httpUrl, call, authorization);
        assert.equal(got.status, call.allowed, `${operation}: ${got.body}`);
      }
    }
    const events = await openSse(t.httpUrl, '/v1/events');
    assert.equal(events.status, 200);
    events.close();
  });
});
