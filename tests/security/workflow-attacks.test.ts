/**
 * Wave 3's surfaces (workflows, batches) against a caller with the source and the least key
 * the docs allow: a producer key to create, a worker key to run. Each test is a finding of
 * task attack3 (2026-12-07), written before its fix: the answer is one the docs state, never
 * INTERNAL, and what a caller stores reaches its job byte for byte.
 * Real server on port 0, HTTP API over a real socket.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiKeyToml } from '../helpers/access-table.ts';
import { type ApiCall, apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const producer = 'attack3-producer-key-0123456789abcdef';
const worker = 'attack3-worker-key-0123456789abcdef';
let t: TestServer;

before(async () => {
  t = await startTestServer({
    http: true,
    toml: apiKeyToml('a3-producer', 'producer', producer) + apiKeyToml('a3-worker', 'worker', worker),
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
