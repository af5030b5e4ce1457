/**
 * A write reserves room for the most it can answer before it runs (task http429b-20). Its answer
 * is never refused after the write was carried out (a client repeats a 429, and an enqueue without
 * an idempotency key then enqueued its jobs twice), so room for an upper bound of it, computed
 * from its parsed request (src/http/answer-bounds.ts), is kept in its key's budget of answers not
 * yet sent (http.max_in_flight_bytes_per_key) before its handler runs; when the budget has no room
 * for it the write is refused then (429, Retry-After), having done nothing. Its answer then fits
 * the room kept, and the budget is never overdrawn (src/http/unsent-answers.ts).
 *
 * Real server on port 0, real sockets. A key's answer is held unread by HTTP/1.1 pipelining: a
 * batch enqueue (700 jobs, about 63 KB of answer) waits behind an outcome long-poll on the same
 * connection, until an admin cancels its job. The worst-case batch measured (1,000 jobs rejected
 * for an unknown dependency: about 78 KB of body, 176 KB of answer) reserves 641,024 bytes, which a
 * budget of 640 KiB holding the 63 KB has no room for.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { answerItemBytesMax, itemsAnswerBytes } from '../../src/http/answer-bounds.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { apiCall } from '../helpers/http-api.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';

const keys = {
  producer: 'overdraft-producer-key-0123456789',
  other: 'overdraft-other-key-0123456789ab',
  admin: 'overdraft-admin-key-0123456789abc',
};
const jobsPerBatch = 700;

const lines: string[] = [];
let t: TestServer;
before(async () => {
  t = await startTestServer({
    http: true,
    logger: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) }),
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
max_in_flight_bytes_per_key = "640KiB"
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

/** The worst-case batch: 999 jobs rejected for an unknown dependency, and one enqueued in `queue`. */
function worstCaseJobs(queue: string): object[] {
  const unknown = { queue, type: 't', dependsOn: ['0f0e0d0c-0b0a-4908-8706-050403020100'] };
  return [...Array.from({ length: 999 }, () => unknown), { queue, type: 't' }];
}
const worstCaseBound = itemsAnswerBytes(1000, answerItemBytesMax);

test("a write is refused before it runs when its key's budget has no room for its answer's bound", async () => {
  assert.equal(worstCaseBound, 641_024);
  const head = await enqueue(keys.producer, 'head');
  assert.equal(head.status, 200, head.text);
  const headJobId = head.json.jobId ?? '';
  const body = JSON.stringify({
    jobs: Array.from({ length: jobsPerBatch }, () => ({ queue: 'first', type: 't' })),
  });
  const socket = connect(Number(new URL(t.httpUrl).port), '127.0.0.1');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  // The outcome wait answers when its job is cancelled; the batch's answer waits behind it.
  socket.write(
    `GET /v1/jobs/${headJobId}/outcome?waitMs=60000 HTTP/1.1\r\nHost: localhost\r\n` +
      `Authorization: Bearer ${keys.producer}\r\n\r\n` +
      `POST /v1/jobs/batch HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${keys.producer}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await until('the batch was enqueued', async () => (await ready('first')) === jobsPerBatch);
  // One more round trip: its handler has answered, into the queue behind the long-poll.
  assert.equal((await enqueue(keys.other, 'others')).status, 200);
  assert.equal(Buffer.concat(received).length, 0, 'nothing was written on the connection yet');

  // The key holds the batch's answer unread: the worst-case batch's bound does not fit beside it.
  const worstCase = () =>
    apiCall<{ results?: { rejection?: { reason: string } }[]; error?: { message: string } }>(
      t.httpUrl,
      '/v1/jobs/batch',
      { key: keys.producer, body: { jobs: worstCaseJobs('worst') }, agent: false },
    );
  const refused = await worstCase();
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.headers['retry-after'], '1');
  assert.match(
    refused.json.error?.message ?? '',
    /^the request was not carried out: answers not yet read by the client hold 0\.1 MiB of key producer's 0\.6 MiB \(http\.max_in_flight_bytes_per_key\)/,
  );
  assert.equal(await ready('worst'), 0, 'refused before it ran: nothing enqueued');
  // Another key is served.
  assert.equal((await enqueue(keys.other, 'others')).status, 200);

  // The client reads: both answers arrive whole, the batch's jobs were enqueued once.
  const cancelled = await apiCall(t.httpUrl, `/v1/jobs/${headJobId}/cancel`, {
    key: keys.admin,
    method: 'POST',
  });
  assert.equal(cancelled.status, 200, cancelled.text);
  await until('two answers read', async () => answersIn(Buffer.concat(received)).length === 2);
  const [outcome, batch] = answersIn(Buffer.concat(received));
  assert.equal(outcome?.status, 200, outcome?.body);
  assert.equal(batch?.status, 200, batch?.body.slice(0, 300));
  const { results } = JSON.parse(batch?.body ?? '{}') as { results: { accepted?: { jobId: string } }[] };
  assert.equal(new Set(results.map((r) => r.accepted?.jobId)).size, jobsPerBatch);
  assert.equal(await ready('first'), jobsPerBatch);
  socket.destroy();

  // Its budget recovers once the answers were handed over: the worst case runs, within its bound.
  let answered = await worstCase();
  await until('the worst-case batch is let in', async () => {
    if (answered.status === 200) return true;
    assert.equal(answered.status, 429, answered.text);
    answered = await worstCase();
    return false;
  });
  assert.equal(await ready('worst'), 1, 'enqueued once: every refusal came before the enqueue ran');
  const answerBytes = Buffer.byteLength(answered.text);
  assert.ok(answerBytes > 170_000, `${answerBytes} bytes: the worst case measured`);
  assert.ok(answerBytes <= worstCaseBound, `${answerBytes} bytes, within its reservation`);
  assert.equal(
    answered.json.results?.filter((r) => r.rejection?.reason === 'unknown_dependency').length,
    999,
  );
  assert.ok(
    !lines.some((line) => line.includes('http.answer_beyond_reservation')),
    'no answer went past its reservation',
  );
});
