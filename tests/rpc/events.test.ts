/**
 * The Events stream over a real socket: caught-up first, events in commit
 * order with the fields of each kind, filters, resume after a disconnect
 * (exactly once), the refusals (bad requests, a resume out of range, too
 * many subscribers on the server or with one API key) and the end at shutdown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientReadableStream, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  EventsRequest,
  type EventsResponse,
  type JobEvent,
  JobEventKind,
} from '../../clients/typescript/src/gen/sepp/v1/events.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { apiKeysToml, call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

/** A subscription whose messages are read as they come. */
function subscribe(client: QueueServiceClient, request: Partial<EventsRequest> = {}) {
  const stream = client.events(EventsRequest.fromPartial(request)) as ClientReadableStream<EventsResponse>;
  const messages: EventsResponse[] = [];
  let failure: ServiceError | undefined;
  const waiting: (() => void)[] = [];
  const wakeAll = () => {
    for (const wake of waiting.splice(0)) wake();
  };
  const next = () => new Promise<void>((r) => waiting.push(r));
  stream.on('data', (m: EventsResponse) => {
    messages.push(m);
    wakeAll();
  });
  stream.on('error', (e: ServiceError) => {
    failure = e;
    wakeAll();
  });
  const events = () => messages.flatMap((m) => m.events);
  return {
    stream,
    messages,
    events,
    summary: () => events().map((e) => `${JobEventKind[e.kind].toLowerCase()}:${e.jobId}`),
    /** Waits until `condition` holds (or the stream fails). */
    async until(condition: () => boolean): Promise<void> {
      while (!condition()) {
        if (failure !== undefined) throw failure;
        await next();
      }
    },
    async failed(): Promise<ServiceError> {
      while (failure === undefined) await next();
      return failure;
    },
    caughtUp: () => messages.find((m) => m.caughtUp),
  };
}

describe('Events stream', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      toml: '[limits]\nmax_event_subscribers = 4\n[queues.kept]\ncompleted_retention_ms = "1h"\n',
    });
  });
  after(() => t.dispose());

  test('(first, while no other stream is open) bad requests are INVALID_ARGUMENT; more subscribers than the limit are RESOURCE_EXHAUSTED', async () => {
    for (const [request, pattern] of [
      [{ kinds: [JobEventKind.UNSPECIFIED] }, /kinds\[0\]: 0 is not a job event kind/],
      [{ afterSequence: 5, streamId: '' }, /stream_id: required with after_sequence/],
      [{ afterSequence: 5, streamId: 'x', fromOldest: true }, /not both/],
      [{ afterSequence: 0, streamId: 'x', fromOldest: true }, /not both/],
      [{ queues: ['bad queue'] }, /queues: queue "bad queue"/],
    ] satisfies [Partial<EventsRequest>, RegExp][]) {
      const error = await subscribe(t.client, request).failed();
      assert.equal(error.code, status.INVALID_ARGUMENT, error.details);
      assert.match(error.details, pattern);
    }
    const open = Array.from({ length: 4 }, () => subscribe(t.client));
    for (const s of open) await s.until(() => s.caughtUp() !== undefined);
    const refused = await subscribe(t.client).failed();
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED);
    assert.match(
      refused.details,
      /4 Events streams are open, the limit is 4 \(limits\.max_event_subscribers\)/,
    );
    for (const s of open) s.stream.cancel();
    // A cancelled stream frees its slot (once grpc-js reports its HTTP/2 stream closed).
    for (let i = 0; i < 100; i++) {
      const s = subscribe(t.client);
      const outcome = await s
        .until(() => s.caughtUp() !== undefined)
        .then(
          () => 'ok',
          () => 'refused',
        );
      s.stream.cancel();
      if (outcome === 'ok') return;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail('slots were not freed after the streams were cancelled');
  });

  test('caught up first, then every event in commit order with its fields, after each commit', async () => {
    const s = subscribe(t.client, { queues: ['ev'] });
    await s.until(() => s.caughtUp() !== undefined);
    assert.equal(s.messages[0]?.caughtUp, true, 'the first message of a subscription from now');
    const streamId = s.messages[0]?.streamId ?? '';
    assert.match(streamId, /^[0-9a-f]{16}$/);
    const { jobId } = await call(t.client, t.client.enqueue, { job: testJob('ev', { priority: 2 }) });
    // The event is published before the enqueue is answered.
    await s.until(() => s.events().length === 1);
    const { jobs } = await call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: ['ev'],
      maxJobs: 1,
      leaseDurationMs: 5000,
      waitTimeoutMs: 0,
      workerId: 'worker-7',
    });
    assert.equal(jobs[0]?.jobId, jobId);
    await call(t.client, t.client.reportProgress, {
      jobId,
      attempt: 1,
      percent: 50,
      hasPercent: true,
      json: '',
    });
    await call(t.client, t.client.ack, {
      jobId,
      attempt: 1,
      result: { data: Buffer.from('{"ok":true}'), contentType: 'application/json' },
    });
    await s.until(() => s.events().length === 4);
    assert.deepEqual(s.summary(), [
      `enqueued:${jobId}`,
      `leased:${jobId}`,
      `progress:${jobId}`,
      `completed:${jobId}`,
    ]);
    const [enqueued, leased, progress, completed] = s.events() as [JobEvent, JobEvent, JobEvent, JobEvent];
    assert.deepEqual(
      s.events().map((e) => e.sequence),
      [1, 2, 3, 4].map((n) => enqueued.sequence + n - 1),
    );
    assert.equal(enqueued.priority, 2);
    assert.equal(leased.workerId, 'worker-7');
    assert.equal(leased.attempt, 1);
    assert.equal(progress.progress?.percent, 50);
    assert.equal(completed.result?.data.toString(), '{"ok":true}');
    assert.equal(completed.result?.contentType, 'application/json');
    assert.equal(completed.retained, false, 'queue ev does not keep completed jobs');
    assert.ok(s.messages.every((m) => m.streamId === streamId));
    s.stream.cancel();
  });

  test('a resume gets exactly the events missed, then live ones; a bad resume is OUT_OF_RANGE', async () => {
    const first = subscribe(t.client, { queues: ['resume'] });
    await first.until(() => first.caughtUp() !== undefined);
    const a = await call(t.client, t.client.enqueue, { job: testJob('resume') });
    await first.until(() => first.events().length === 1);
    const streamId = first.messages[0]?.streamId ?? '';
    const lastSeen = first.events()[0]?.sequence ?? 0;
    first.stream.cancel();

    const missed = [];
    for (let i = 0; i < 3; i++)
      missed.push((await call(t.client, t.client.enqueue, { job: testJob('resume') })).jobId);
    const resumed = subscribe(t.client, { queues: ['resume'], afterSequence: lastSeen, streamId });
    await resumed.until(() => resumed.caughtUp() !== undefined);
    assert.deepEqual(
      resumed.summary(),
      missed.map((id) => `enqueued:${id}`),
    );
    assert.notEqual(resumed.summary()[0], `enqueued:${a.jobId}`);
    const live = await call(t.client, t.client.enqueue, { job: testJob('resume') });
    await resumed.until(() => resumed.events().length === 4);
    assert.equal(resumed.summary()[3], `enqueued:${live.jobId}`);
    // The caught-up message comes after the replay and names the newest sequence at that point.
    const caughtUpIndex = resumed.messages.findIndex((m) => m.caughtUp);
    assert.equal(resumed.messages.slice(0, caughtUpIndex).flatMap((m) => m.events).length, 3);
    resumed.stream.cancel();

    const restarted = subscribe(t.client, { afterSequence: 1, streamId: '0000000000000000' });
    const error = await restarted.failed();
    assert.equal(error.code, status.OUT_OF_RANGE);
    assert.match(error.details, /events are not kept across restarts/);
  });

  test('kinds added after the first version (RELEASED) go only to those who name them or set all_kinds', async () => {
    const parent = await call(t.client, t.client.enqueue, { job: testJob('rel') });
    const child = await call(t.client, t.client.enqueue, {
      job: testJob('rel', { dependsOn: [parent.jobId] }),
    });
    const { jobs } = await call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: ['rel'],
      maxJobs: 1,
      leaseDurationMs: 5000,
      waitTimeoutMs: 0,
      workerId: '',
    });
    assert.equal(jobs[0]?.jobId, parent.jobId);
    await call(t.client, t.client.ack, { jobId: parent.jobId, attempt: 1, result: undefined });
    /** The kinds a from-oldest replay of queue rel sends with this request. */
    const replayed = async (request: Partial<EventsRequest>) => {
      const s = subscribe(t.client, { fromOldest: true, queues: ['rel'], ...request });
      await s.until(() => s.caughtUp() !== undefined);
      s.stream.cancel();
      return s.summary();
    };
    const firstVersion = [`enqueued:${parent.jobId}`, `enqueued:${child.jobId}`, `leased:${parent.jobId}`];
    // A client written before RELEASED existed (no all_kinds) never sees it.
    assert.deepEqual(await replayed({}), [...firstVersion, `completed:${parent.jobId}`]);
    assert.deepEqual(await replayed({ allKinds: true }), [
      ...firstVersion,
      `completed:${parent.jobId}`,
      `released:${child.jobId}`,
    ]);
    assert.deepEqual(await replayed({ kinds: [JobEventKind.RELEASED] }), [`released:${child.jobId}`]);
  });

  test('from_oldest replays the backlog with its filters; shutdown ends streams with UNAVAILABLE', async () => {
    const c = t.connect();
    const replay = subscribe(c, { fromOldest: true, queues: ['ev'], kinds: [JobEventKind.COMPLETED] });
    await replay.until(() => replay.caughtUp() !== undefined);
    assert.equal(replay.events().length, 1, 'the completed event of the first test');
    assert.equal(replay.events()[0]?.result?.data.toString(), '{"ok":true}');
    const done = replay.failed();
    await t.server.shutdown();
    const error = await done;
    assert.equal(error.code, status.UNAVAILABLE);
  });
});

describe('Events streams per API key', () => {
  const keyA = 'sepp-secret-events-key-a-0123456789';
  const keyB = 'sepp-secret-events-key-b-0123456789';
  let t: TestServer;
  const withKey = (key: string) => {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${key}`);
    return metadata;
  };
  /** A subscription made with `key`; resolves `ok` once caught up, or the refusal. */
  const open = (key: string) => {
    const stream = t.client.events(EventsRequest.fromPartial({}), withKey(key));
    const outcome = new Promise<'ok' | ServiceError>((resolve) => {
      stream.on('data', () => resolve('ok'));
      stream.on('error', (e: ServiceError) => resolve(e));
    });
    return { stream, outcome };
  };

  before(async () => {
    t = await startTestServer({
      toml: `${apiKeysToml([
        { name: 'a', role: 'producer', key: keyA },
        { name: 'b', role: 'producer', key: keyB },
      ])}[grpc]\nmax_event_subscribers_per_key = 2\n[limits]\nmax_event_subscribers = 10\n`,
    });
  });
  after(() => t.dispose());

  test('one key holds at most its share; another key still gets in; a closed stream frees its place', async () => {
    const info = await call(t.client, t.client.getServerInfo, {}, withKey(keyA));
    assert.equal(info.limits?.maxEventSubscribersPerKey, 2);
    const a = [open(keyA), open(keyA)];
    for (const s of a) assert.equal(await s.outcome, 'ok');
    const refused = await open(keyA).outcome;
    assert.ok(refused !== 'ok');
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED);
    assert.match(
      refused.details,
      // The engine's count, the one the HTTP API's event streams and outcome waits share.
      /key a holds 2 event subscriptions \(Events streams, event streams and outcome waits\), the limit per key is 2 \(grpc\.max_event_subscribers_per_key\)/,
    );
    const b = open(keyB);
    assert.equal(await b.outcome, 'ok', 'another key is not held back');
    a[0]?.stream.cancel();
    // The place is free once grpc-js reports the HTTP/2 stream closed.
    for (let i = 0; i < 100; i++) {
      const again = open(keyA);
      const outcome = await again.outcome;
      if (outcome === 'ok') {
        for (const s of [a[1], b, again]) s?.stream.cancel();
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail('the cancelled stream did not free its place');
  });
});
