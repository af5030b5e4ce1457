/**
 * A write's answer is never refused after the write was carried out (task http429-20). Answers
 * of a key let in together used to be refused once they overran its budget of answers not yet
 * sent (http.max_in_flight_bytes_per_key): 429 with Retry-After, which a client repeats, and an
 * enqueue without an idempotency key then enqueued its jobs twice. Now such an answer is sent,
 * overdrawing the key's budget; while it is overdrawn the key's new requests are refused before
 * they run, another key is served, and the key is served again once its client reads
 * (src/http/unsent-answers.ts, src/http/server.ts).
 *
 * Real server on port 0, real sockets. A key's answers are held unread by HTTP/1.1 pipelining:
 * two batch enqueues (about 63 KB of answer each, together over a budget of 112 KiB) wait
 * behind an outcome long-poll on the same connection, until an admin cancels its job.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { apiCall } from '../helpers/http-api.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';

const keys = {
  producer: 'overdraft-producer-key-0123456789',
  other: 'overdraft-other-key-0123456789ab',
  admin: 'overdraft-admin-key-0123456789abc',
};
const jobsPerBatch = 700;

let t: TestServer;
before(async () => {
  t = await startTestServer({
    http: true,
    toml: `${apiKeysToml([
      { name: 'producer', role: 'producer', key: keys.producer },
      { name: 'other', role: 'producer', key: keys.other },
      { name: 'admin', role: 'admin', key: keys.admin },
    ])}
[queue_defaults]
max_payload_bytes = "8KiB"
[limits]
max_result_bytes = "8KiB"
[http]
max_request_bytes = "112KiB"
max_in_flight_bytes_per_key = "112KiB"
`,
  });
});
after(() => t?.dispose());

/** The answers complete in `bytes` (HTTP/1.1, each with a Content-Length), in order. */
function answersIn(bytes: Buffer): { status: number; body: string }[] {
  const answers: { status: number; body: string }[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return answers;
    const head = bytes.subarray(at, end).toString();
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? Number.NaN);
    assert.ok(Number.isInteger(length), head);
    if (bytes.length < end + 4 + length) return answers;
    answers.push({
      status: Number(head.slice(9, 12)),
      body: bytes.subarray(end + 4, end + 4 + length).toString(),
    });
    at = end + 4 + length;
  }
}

const ready = async (queue: string) =>
  (await t.server.engine.listQueues()).find((q) => q.name === queue)?.counts.ready ?? 0;

async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await done())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const enqueue = (key: string, queue: string) =>
  apiCall<{ jobId?: string; error?: { message: string } }>(t.httpUrl, '/v1/jobs', {
    key,
    body: { queue, type: 't' },
    agent: false,
  });

test('writes whose answers overdraw the budget are answered; the key is refused before it runs until read', async () => {
  const head = await enqueue(keys.producer, 'head');
  assert.equal(head.status, 200, head.text);
  const headJobId = head.json.jobId ?? '';
  const batch = (queue: string) => {
    const body = JSON.stringify({ jobs: Array.from({ length: jobsPerBatch }, () => ({ queue, type: 't' })) });
    return (
      `POST /v1/jobs/batch HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${keys.producer}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    );
  };
  const socket = connect(Number(new URL(t.httpUrl).port), '127.0.0.1');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  // The outcome wait answers when its job is cancelled; both batches' answers wait behind it.
  socket.write(
    `GET /v1/jobs/${headJobId}/outcome?waitMs=60000 HTTP/1.1\r\nHost: localhost\r\n` +
      `Authorization: Bearer ${keys.producer}\r\n\r\n${batch('first')}${batch('second')}`,
  );
  await until(
    'both batches were enqueued',
    async () => (await ready('first')) === jobsPerBatch && (await ready('second')) === jobsPerBatch,
  );
  // One more round trip: both handlers have answered, into the queue behind the long-poll.
  assert.equal((await enqueue(keys.other, 'others')).status, 200);
  assert.equal(Buffer.concat(received).length, 0, 'nothing was written on the connection yet');

  // The key is overdrawn: its next requests are refused before they run.
  const refused = await enqueue(keys.producer, 'after');
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.headers['retry-after'], '1');
  assert.match(
    refused.json.error?.message ?? '',
    /^the request was not carried out: answers not yet read by the client hold 0\.1 MiB of key producer's 0\.1 MiB \(http\.max_in_flight_bytes_per_key\)/,
  );
  const read = await apiCall(t.httpUrl, `/v1/jobs/${headJobId}`, { key: keys.producer, agent: false });
  assert.equal(read.status, 429, read.text);
  assert.equal(await ready('after'), 0, 'the refused enqueue did nothing');
  // Another key is served.
  assert.equal((await enqueue(keys.other, 'others')).status, 200);

  // The client reads: every answer arrives whole, each batch's jobs were enqueued once.
  const cancelled = await apiCall(t.httpUrl, `/v1/jobs/${headJobId}/cancel`, {
    key: keys.admin,
    method: 'POST',
  });
  assert.equal(cancelled.status, 200, cancelled.text);
  await until('three answers read', async () => answersIn(Buffer.concat(received)).length === 3);
  const [outcome, ...batches] = answersIn(Buffer.concat(received));
  // A read whose answer does not fit is still refused: asking again is harmless.
  assert.equal(outcome?.status, 429, outcome?.body);
  assert.match(
    outcome?.body ?? '',
    /the answer \(\d+ bytes\) was not sent, though the request was carried out/,
  );
  for (const answer of batches) {
    assert.equal(answer.status, 200, answer.body.slice(0, 300));
    const { results } = JSON.parse(answer.body) as { results: { accepted?: { jobId: string } }[] };
    assert.equal(new Set(results.map((r) => r.accepted?.jobId)).size, jobsPerBatch);
  }
  assert.ok(batches.reduce((sum, a) => sum + a.body.length, 0) > 112 * 1024, 'together over the budget');
  assert.deepEqual([await ready('first'), await ready('second')], [jobsPerBatch, jobsPerBatch]);
  socket.destroy();

  // Its budget recovers once the answers were handed over (their last byte to the kernel).
  await until('the key is served again', async () => (await enqueue(keys.producer, 'after')).status === 200);
  assert.equal(await ready('after'), 1, 'enqueued once: every refusal came before the enqueue ran');
});
