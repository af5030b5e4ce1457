/**
 * The HTTP API's answers not yet sent, per API key (task httpbudget19; attack6: 100 connections
 * of one key reading slowly took a server from 130 to 331 MiB). A key's answers that its clients
 * have not read count against http.max_in_flight_bytes_per_key: its next requests are refused
 * (429, Retry-After) while another key is served; a reserve whose answer is refused gives its
 * jobs back at once, their leases undone (attempt given back), and one cut by the write deadline
 * gives them back at once with the attempt counted, since its client may hold part of the answer
 * (src/http/unsent-answers.ts, src/http/server.ts, routes/worker-routes.ts).
 *
 * Real sockets, a real server on port 0. Answers are reserves of a job of 4.5 MiB (6 MiB of
 * base64, enqueued over HTTP too), past what the kernel's buffers take on loopback (about 4
 * MiB): a client that stops reading leaves the end of its answer in the server. The per-key
 * budget is 16 MiB: two such answers. Leases are a minute long, so a job leasable again within
 * the test was given back.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../src/telemetry/logger.ts';
import { type ApiAnswer, apiCall, openSse } from '../helpers/http-api.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { apiKeysToml, startTestServer, type TestServer, waitersReach } from '../helpers/server.ts';

const MiB = 1024 * 1024;
const keys = {
  slow: 'slow-worker-key-0123456789',
  other: 'other-worker-key-0123456789',
  producer: 'producer-key-0123456789abc',
};
const leaseMs = 60_000;

interface Leased {
  jobId: string;
  attempt: number;
}

describe('answers not yet sent, per key', () => {
  let t: TestServer;
  const lines: string[] = [];
  const jobIds: string[] = [];
  /** Connections of the slow key that never read their reserve's answer. */
  const unread: Socket[] = [];
  const port = () => Number(new URL(t.httpUrl).port);
  const toml = (writeTimeout: string) => `${apiKeysToml([
    { name: 'slow', role: 'worker', key: keys.slow },
    { name: 'other', role: 'worker', key: keys.other },
    { name: 'producer', role: 'producer', key: keys.producer },
  ])}
[queue_defaults]
max_payload_bytes = "5MiB"
[http]
max_request_bytes = "8MiB"
max_in_flight_bytes_per_key = "16MiB"
write_timeout_ms = "${writeTimeout}"
`;

  const reserve = (key: string, queue: string, waitTimeoutMs = 0) =>
    apiCall<{ jobs: Leased[]; error?: { code: string; message: string } }>(t.httpUrl, '/v1/reserve', {
      key,
      body: { queues: [queue], maxJobs: 1, leaseDurationMs: leaseMs, waitTimeoutMs, workerId: 'w' },
      agent: false,
    });

  /**
   * A reserve of one big job on a new connection that reads the first bytes of its answer and
   * then nothing more: resolves with them (the answer is held from before its first byte went out).
   */
  const reserveUnread = async (): Promise<string> => {
    const body = JSON.stringify({ queues: ['big'], maxJobs: 1, leaseDurationMs: leaseMs, workerId: 'slow' });
    const socket = connect(port(), '127.0.0.1');
    socket.on('error', () => {});
    unread.push(socket);
    const first = new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => {
        socket.pause();
        resolve(chunk.subarray(0, 20).toString());
      }),
    );
    socket.write(
      'POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${keys.slow}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    return await first;
  };

  /** Jobs of `queue` the `other` key may lease now (it waits up to 5 s for each). */
  const leaseAgain = async (count: number, queue = 'big'): Promise<Leased[]> => {
    const leased: Leased[] = [];
    while (leased.length < count) {
      const answer = await reserve(keys.other, queue, 5_000);
      assert.equal(answer.status, 200, answer.text.slice(0, 300));
      assert.ok(answer.json.jobs.length > 0, `${leased.length} of ${count} jobs given back`);
      leased.push(...answer.json.jobs);
    }
    return leased;
  };

  /** `sepp_http_requests_refused_total{sepp_refusal_reason="unread_answers"}` now. */
  const refusedCount = async (): Promise<number> => {
    const { samples } = await scrape(t.metricsUrl);
    const [sample, ...others] = samples.filter(
      (s) =>
        s.name === 'sepp_http_requests_refused_total' &&
        s.labels.sepp_refusal_reason === 'unread_answers' &&
        s.labels.sepp_http_door === 'http',
    );
    assert.ok(sample !== undefined && others.length === 0, JSON.stringify(samples.map((s) => s.name)));
    return sample.value;
  };

  const refusedFor = (answer: ApiAnswer<{ error?: { code: string; message: string } }>, what: RegExp) => {
    assert.equal(answer.status, 429, answer.text.slice(0, 300));
    assert.equal(answer.headers['retry-after'], '1');
    assert.equal(answer.json.error?.code, 'resource_exhausted');
    assert.match(answer.json.error?.message ?? '', what);
    assert.match(
      answer.json.error?.message ?? '',
      /key slow's 16\.0 MiB \(http\.max_in_flight_bytes_per_key\)/,
    );
  };

  /** The slow key's long-poll on `late`, let in while its budget was empty (test 2). */
  let lateReserve: ReturnType<typeof reserve> | undefined;
  const payloadBase64 = Buffer.alloc(4.5 * MiB, 0x61).toString('base64');
  const enqueueBig = async (queue: string): Promise<string> => {
    const answer = await apiCall<{ jobId: string }>(t.httpUrl, '/v1/jobs', {
      key: keys.producer,
      body: { queue, type: 't', payloadBase64 },
    });
    assert.equal(answer.status, 200, answer.text + lines.join('\n'));
    return answer.json.jobId;
  };

  before(async () => {
    t = await startTestServer({
      http: true,
      logger: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) }),
      toml: toml('1h'),
    });
    for (let i = 0; i < 3; i++) jobIds.push(await enqueueBig('big'));
  });
  after(async () => {
    for (const socket of unread) socket.destroy();
    await t?.dispose();
  });

  test('a key whose connections do not read is refused beyond its budget; another key is served', async () => {
    // A long-poll let in while the key holds nothing: its answer comes in the next test.
    lateReserve = reserve(keys.slow, 'late', 30_000);
    await waitersReach(t, 1);
    // Two answers of 6 MiB unread: 12 of the key's 16 MiB held.
    assert.match(await reserveUnread(), /^HTTP\/1\.1 200/);
    assert.match(await reserveUnread(), /^HTTP\/1\.1 200/);
    const other = await reserve(keys.other, 'big');
    assert.equal(other.status, 200, other.text.slice(0, 300));
    assert.equal(other.json.jobs.length, 1, 'the other key is served');
    const [served] = other.json.jobs;
    assert.ok(served !== undefined);
    assert.equal(await refusedCount(), 0);
    const refused = await reserve(keys.slow, 'big');
    // The last reserve answered 6 MiB: no room for another such answer, so nothing was leased.
    refusedFor(
      refused,
      /^the request was not carried out: answers not yet read by the client hold 12\.\d MiB/,
    );
    assert.equal(await refusedCount(), 1, 'counted');
    const ack = await apiCall(t.httpUrl, `/v1/jobs/${served.jobId}/ack`, {
      key: keys.other,
      body: { attempt: served.attempt },
    });
    assert.equal(ack.status, 200, ack.text);
  });

  test('a reserve whose answer does not fit gives its jobs back at once', async () => {
    // A subscriber to the undone leases of the queue is told of it.
    const undone = await openSse(t.httpUrl, '/v1/events?queues=late&kinds=lease_undone', {
      key: keys.producer,
    });
    assert.equal((await undone.next()).event, 'caught_up');
    // The slow key's long-poll, let in before its budget filled, leases a big job.
    const lateJobId = await enqueueBig('late');
    assert.ok(lateReserve !== undefined);
    const refused = await lateReserve;
    refusedFor(refused, /^the answer \(\d+ bytes\) was not sent, though the request was carried out/);
    assert.equal(await refusedCount(), 2, 'an answer not sent is counted too');
    // Refused, never sent beyond their room: the metric of both doors (app.ts connects it) says none.
    const { samples } = await scrape(t.metricsUrl);
    assert.deepEqual(
      ['grpc', 'http'].map((door) =>
        sampleValue(samples, 'sepp_answers_beyond_room_total', { sepp_door: door }),
      ),
      [0, 0],
    );
    const told = JSON.parse((await undone.next()).data) as Record<string, unknown>;
    undone.close();
    assert.deepEqual(
      [told.kind, told.jobId, told.queue, told.attempt, told.state],
      ['lease_undone', lateJobId, 'late', 1, 'ready'],
    );
    // The log named the key at its first refusal; this one, within the minute, waits for the next line.
    const refusalLines = lines
      .filter((line) => line.includes('"http.answers_refused"'))
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      refusalLines.map((l) => [l.level, l.key, l.refused, l.given_back]),
      [['warn', 'slow', 1, 0]],
    );
    assert.ok(!JSON.stringify(refusalLines).includes(keys.slow), 'no secret in the line');
    const [again] = await leaseAgain(1, 'late');
    assert.ok(again !== undefined);
    assert.equal(again.jobId, lateJobId);
    assert.equal(again.attempt, 1, 'its lease undone: the attempt given back, none counted');
    const ack = await apiCall(t.httpUrl, `/v1/jobs/${again.jobId}/ack`, {
      key: keys.other,
      body: { attempt: again.attempt },
    });
    assert.equal(ack.status, 200, ack.text);
  });

  test('reserves cut by the write deadline give their jobs back; the key is served again', async () => {
    t.writeConfig(toml('1s'));
    const reload = await t.server.reload();
    assert.ok(reload.changed.includes('http.write_timeout_ms'), JSON.stringify(reload));
    const leased = await leaseAgain(2);
    // Their writing had begun, so their client may hold some of them: given back with the
    // attempt counted, never leased again under the attempt (and lease token) it may hold.
    assert.deepEqual(
      leased.map((job) => job.attempt),
      [2, 2],
    );
    assert.equal(lines.filter((line) => line.includes('"http.write_timeout"')).length, 2);
    // Their bytes were given back with their connections: the slow key is served again.
    const served = await reserve(keys.slow, 'empty');
    assert.equal(served.status, 200, served.text.slice(0, 300));
  });
});
