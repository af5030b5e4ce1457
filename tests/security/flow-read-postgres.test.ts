/**
 * A flow's read on the PostgreSQL store, against a producer key that shapes the graph
 * (task attack5, 2026-12-07). The walk joined each of its steps to a view of every edge
 * stored, so a read cost its flow's depth times every edge in the database: a chain of
 * 1,000 jobs beside 9,000 other edges read about 20 million rows (seconds of PostgreSQL's
 * CPU per call, for any key that may read, and slower for everyone as the table grows).
 * Each step now looks up its jobs' neighbours by index. Real server on port 0 over the
 * HTTP API, a real cluster; the store's statement timeout (2 s) is the bound the slow walk
 * crossed and the fast one stays far inside.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { apiKeyToml } from '../helpers/access-table.ts';
import { apiCall } from '../helpers/http-api.ts';
import { useCluster } from '../helpers/postgres.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const postgres = useCluster('flowread');
const producer = 'attack5-producer-key-0123456789abcdef';
const chainLength = 1000;
let t: TestServer | undefined;
after(() => t?.dispose());

/** The server, started at the first test (the cluster's own `before` hook runs alongside any other). */
async function server(): Promise<TestServer> {
  t ??= await startTestServer({
    http: true,
    toml:
      apiKeyToml('a5-producer', 'producer', producer) +
      '[limits]\nmax_flow_depth = 1000\n' +
      postgres.storeToml('flow_read') +
      'statement_timeout_ms = "2s"\n',
  });
  return t;
}

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as JSON.
type Json = Record<string, any>;

async function enqueueFlow(jobs: { name: string; after: string[] }[], queue: string): Promise<string[]> {
  const answer = await apiCall<Json>((await server()).httpUrl, '/v1/flows', {
    key: producer,
    body: { jobs: jobs.map((job) => ({ ...job, job: { queue, type: 'step' } })) },
  });
  assert.equal(answer.status, 200, answer.text.slice(0, 300));
  assert.equal(answer.json.committed, true, answer.text.slice(0, 300));
  return (answer.json.jobs as Json[]).map((job) => job.jobId as string);
}

test("a flow's read costs its own edges, not steps × every edge stored", async () => {
  // Other edges in the database: 100 jobs and 900 waiting on 10 of them each.
  const roots = Array.from({ length: 100 }, (_, i) => ({ name: `r${i}`, after: [] }));
  const fan = Array.from({ length: 900 }, (_, i) => ({
    name: `f${i}`,
    after: Array.from({ length: 10 }, (_, k) => `r${(i + k * 7) % 100}`),
  }));
  await enqueueFlow([...roots, ...fan], 'a5-fan');
  // A chain: each job waits on the one before; its read takes a step per job.
  const chain = Array.from({ length: chainLength }, (_, i) => ({
    name: `c${i}`,
    after: i === 0 ? [] : [`c${i - 1}`],
  }));
  const ids = await enqueueFlow(chain, 'a5-chain');
  const read = await apiCall<Json>((await server()).httpUrl, `/v1/jobs/${ids[0]}/flow`, { key: producer });
  assert.equal(read.status, 200, read.text.slice(0, 300));
  assert.equal(read.json.truncated, false);
  assert.equal(read.json.jobs.length, chainLength);
  assert.equal(read.json.edges.length, chainLength - 1);
  assert.deepEqual(
    (read.json.jobs as Json[]).map((job) => job.jobId),
    ids,
    'the whole chain, in enqueue order',
  );
});
