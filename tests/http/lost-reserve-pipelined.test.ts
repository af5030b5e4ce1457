/**
 * A reserve whose answer waited behind another answer on its connection (HTTP/1.1 pipelining)
 * when the connection closed: none of it was written, so no client can hold its jobs' attempts
 * or lease tokens, and its leases are undone (attempt given back), not nacked with the attempt
 * counted as for an answer cut while it was written (src/http/server.ts, routes/worker-routes.ts).
 * Counting it burnt an attempt the job never ran, and dead-lettered a job on its last one.
 *
 * Real server on port 0, a raw socket for the pipelined requests, no API keys (loopback).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer({ http: true });
});
after(() => t?.dispose());

const reserveBody = (queue: string, waitTimeoutMs: number) =>
  JSON.stringify({ queues: [queue], maxJobs: 1, leaseDurationMs: 60_000, waitTimeoutMs, workerId: 'w' });

const post = (body: string) =>
  'POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

test('a reserve whose answer waited behind another when its connection closed is undone', async () => {
  const enqueued = await apiCall<{ jobId: string }>(t.httpUrl, '/v1/jobs', {
    body: { queue: 'q', type: 't' },
  });
  assert.equal(enqueued.status, 200, enqueued.text);
  const { jobId } = enqueued.json;
  const socket = connect(Number(new URL(t.httpUrl).port), '127.0.0.1');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  // A long-poll on an empty queue first: the second reserve's answer waits behind it.
  socket.write(post(reserveBody('empty', 60_000)) + post(reserveBody('q', 0)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const job = await apiCall<{ job: { state: string } }>(t.httpUrl, `/v1/jobs/${jobId}`);
    if (job.json.job.state === 'leased') break;
    assert.ok(Date.now() < deadline, `the pipelined reserve leased the job: ${job.text}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  // One more round trip: the reserve's handler has answered, into the queue behind the long-poll.
  await apiCall(t.httpUrl, `/v1/jobs/${jobId}`);
  assert.equal(Buffer.concat(received).length, 0, 'nothing was written on the connection');
  socket.destroy();
  const again = await apiCall<{ jobs: { jobId: string; attempt: number }[] }>(t.httpUrl, '/v1/reserve', {
    raw: reserveBody('q', 5_000),
  });
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(
    again.json.jobs.map((job) => [job.jobId, job.attempt]),
    [[jobId, 1]],
    'given back with its attempt given back: none of its answer was written',
  );
});
