/**
 * Events as Server-Sent Events: filters, the caught_up marker, and resuming
 * with Last-Event-ID exactly once — every event after the resume point, none
 * twice, none missed — also from the caught_up marker before any event, and
 * the refusals of a resume the server cannot serve.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiCall, openSse, type SseEvent } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface EventJson {
  sequence: number;
  kind: string;
  jobId: string;
  queue: string;
  result?: unknown;
}

const parse = (event: SseEvent) => JSON.parse(event.data) as EventJson;

describe('HTTP events (SSE)', () => {
  let t: TestServer;
  let url: string;
  const enqueue = async (queue: string, payload: unknown = null) => {
    const answer = await apiCall<{ jobId: string }>(url, '/v1/jobs', { body: { queue, type: 't', payload } });
    assert.equal(answer.status, 200, answer.text);
    return answer.json.jobId;
  };

  before(async () => {
    t = await startTestServer({ http: true });
    url = t.httpUrl;
  });
  after(() => t.dispose());

  test('a stream from now says it caught up, then sends the live events its filter matches', async () => {
    const stream = await openSse(url, '/v1/events?queues=sse-a&kinds=enqueued');
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    const caughtUp = await stream.next();
    assert.equal(caughtUp.event, 'caught_up');
    const marker = JSON.parse(caughtUp.data) as { streamId: string; sequence: number };
    assert.equal(caughtUp.id, `${marker.streamId}:${marker.sequence}`);
    await enqueue('sse-other');
    const id = await enqueue('sse-a', { pretty: [1, 2] });
    const event = await stream.next();
    assert.equal(event.event, undefined);
    const data = parse(event);
    assert.deepEqual([data.kind, data.queue, data.jobId], ['enqueued', 'sse-a', id]);
    assert.equal(event.id, `${marker.streamId}:${data.sequence}`);
    stream.close();
  });

  test('resuming with Last-Event-ID sends every later event exactly once, in order', async () => {
    const first = await openSse(url, '/v1/events?queues=sse-r');
    await first.next(); // caught_up
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueue('sse-r', { i }));
    const seen = [await first.next(), await first.next()];
    first.close();
    const last = seen[1]?.id ?? '';
    for (let i = 5; i < 8; i++) ids.push(await enqueue('sse-r', { i }));
    // fromOldest is ignored when a resume point is given (EventSource reconnects with the same URL).
    const resumed = await openSse(url, '/v1/events?queues=sse-r&fromOldest=true', {
      headers: { 'last-event-id': last },
    });
    assert.equal(resumed.status, 200);
    const replay = await resumed.until((e) => e.event === 'caught_up');
    const events = replay.filter((e) => e.event === undefined).map(parse);
    assert.deepEqual(
      events.map((e) => e.jobId),
      ids.slice(2),
      'the events after the resume point, each once',
    );
    const sequences = events.map((e) => e.sequence);
    assert.deepEqual(
      sequences,
      [...sequences].sort((a, b) => a - b),
    );
    const live = await enqueue('sse-r');
    assert.equal(parse(await resumed.next()).jobId, live);
    resumed.close();
  });

  test('the caught_up marker is a resume point too: nothing is missed before the first event', async () => {
    const stream = await openSse(url, '/v1/events?queues=sse-c');
    const marker = await stream.next();
    stream.close();
    const id = await enqueue('sse-c');
    const resumed = await openSse(
      url,
      `/v1/events?queues=sse-c&lastEventId=${encodeURIComponent(marker.id ?? '')}`,
    );
    assert.equal(parse(await resumed.next()).jobId, id);
    resumed.close();
  });

  test('fromOldest replays what the backlog keeps; a result with line breaks arrives whole', async () => {
    const jobId = await enqueue('sse-o');
    const reserved = await apiCall<{ jobs: { jobId: string; attempt: number }[] }>(url, '/v1/reserve', {
      body: { queues: ['sse-o'] },
    });
    assert.equal(reserved.json.jobs[0]?.jobId, jobId);
    const raw = '{\n  "multi": "line",\r\n  "n": 1\n}';
    const ack = await apiCall(url, `/v1/jobs/${jobId}/ack`, {
      raw: `{"attempt":1,"result":${raw}}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(ack.status, 200, ack.text);
    const stream = await openSse(url, '/v1/events?queues=sse-o&fromOldest=true');
    const events = await stream.until((e) => e.event === 'caught_up');
    const kinds = events.filter((e) => e.event === undefined).map(parse);
    assert.deepEqual(
      kinds.map((e) => e.kind),
      ['enqueued', 'leased', 'completed'],
    );
    assert.deepEqual(kinds[2]?.result, { multi: 'line', n: 1 });
    stream.close();
  });

  test('a resume the server cannot serve is refused: another run 416, a malformed id 400, a bad filter 400', async () => {
    const other = await openSse(url, '/v1/events', { headers: { 'last-event-id': 'abcdef0123456789:3' } });
    assert.equal(other.status, 416);
    const otherBody = await other.body();
    assert.match(
      otherBody,
      /"code":"out_of_range".*this server restarted since.*or the id is another server.s/,
    );
    const future = await openSse(url, `/v1/events?lastEventId=${t.server.engine.eventStreamId}:999999999`);
    assert.equal(future.status, 416);
    // In this API's names (Last-Event-ID, GET /v1/jobs/{jobId}), not gRPC's (after_sequence, GetJob).
    const futureBody = await future.body();
    assert.match(futureBody, /Last-Event-ID's sequence is 999999999/);
    assert.match(otherBody, /\(GET \/v1\/jobs\/\{jobId\}\) and subscribe again without Last-Event-ID/);
    for (const body of [otherBody, futureBody]) assert.doesNotMatch(body, /after_sequence|stream_id|GetJob/);
    const malformed = await openSse(url, '/v1/events', { headers: { 'last-event-id': 'not an id' } });
    assert.equal(malformed.status, 400);
    const kinds = await openSse(url, '/v1/events?kinds=exploded');
    assert.equal(kinds.status, 400);
    assert.match(await kinds.body(), /exploded is not an event kind/);
    const queues = await openSse(url, '/v1/events?queues=bad%20name');
    assert.equal(queues.status, 400);
  });

  test('a closed stream frees its subscriber slot', async () => {
    const before = t.server.engine.eventBacklog.subscribers;
    const stream = await openSse(url, '/v1/events');
    await stream.next();
    assert.equal(t.server.engine.eventBacklog.subscribers, before + 1);
    stream.close();
    for (let i = 0; i < 10_000 && t.server.engine.eventBacklog.subscribers !== before; i++) {
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(t.server.engine.eventBacklog.subscribers, before);
  });
});
