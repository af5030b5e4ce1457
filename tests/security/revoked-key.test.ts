/**
 * A key revoked by a reload while its long-polls wait (task attack5, 2026-12-07). Its streams
 * ended at once, but a Reserve (gRPC) or reserve (HTTP API) already waiting went on waiting and
 * was handed the next job of its queues, payload and lease, after the key was gone — for as
 * long as its wait lasts (limits.max_wait_ms, a minute by default); an HTTP outcome wait was
 * handed the job's result the same way. Now the reload ends them with why, and the job stays
 * ready for a key that is still valid. Real server on port 0, both doors over real sockets.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { apiKeyToml } from '../helpers/access-table.ts';
import { apiCall } from '../helpers/http-api.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { waitFor } from '../helpers/steady-load.ts';

const keeper = 'attack5-keeper-key-0123456789abcdef';
const retired = 'attack5-retired-key-0123456789abcdef';
const keeperToml = apiKeyToml('a5-keeper', 'admin', keeper);
let t: TestServer;

before(async () => {
  t = await startTestServer({ http: true, toml: keeperToml + apiKeyToml('a5-retired', 'admin', retired) });
});
after(() => t?.dispose());

function as(key: string): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${key}`);
  return metadata;
}

test('a reload that revokes a key ends its waiting long-polls: no job or result is handed to it', async () => {
  const queue = 'a5-revoked';
  const { jobId: waitedOn } = await call(
    t.client,
    t.client.enqueue,
    { job: testJob('a5-other') },
    as(keeper),
  );
  const reserve = { queues: [queue], maxJobs: 1, waitTimeoutMs: 20_000, leaseDurationMs: 60_000 };
  const httpReserve = apiCall(t.httpUrl, '/v1/reserve', { key: retired, body: reserve });
  const grpcReserve = call(
    t.client,
    t.client.reserve,
    { ...reserve, workerId: 'a5-retired', maxResponseBytes: 0 },
    as(retired),
  ).then(
    () => null,
    (error: ServiceError) => error,
  );
  const outcome = apiCall(t.httpUrl, `/v1/jobs/${waitedOn}/outcome?waitMs=20000`, { key: retired });
  await waitFor(() => t.server.engine.waitingReserves === 2, 'both reserves waiting', 10_000);

  t.writeConfig(keeperToml);
  assert.equal((await t.server.reload()).applied, true);
  const [http, grpc, waited] = await Promise.all([httpReserve, grpcReserve, outcome]);
  assert.equal(http.status, 401, http.text);
  assert.match(http.text, /a5-retired was removed by a reload/);
  assert.equal(grpc?.code, status.UNAUTHENTICATED, grpc?.details);
  assert.equal(waited.status, 401, waited.text);

  // What the retired key would have leased is there for a key that is still valid.
  const { jobId } = await call(t.client, t.client.enqueue, { job: testJob(queue) }, as(keeper));
  const leased = await call(
    t.client,
    t.client.reserve,
    { ...reserve, waitTimeoutMs: 0, workerId: 'a5-keeper', maxResponseBytes: 0 },
    as(keeper),
  );
  assert.deepEqual(
    leased.jobs.map((job) => job.jobId),
    [jobId],
  );
});
