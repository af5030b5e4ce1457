/**
 * Answers nobody reads (task h2budget18, found by attack5 on 2026-12-07). A client that opens
 * many GetJob calls for a large job on one HTTP/2 connection with a zero flow-control window,
 * and never reads, made the server hold every answer: 1,000 calls for a 900 KB job took it from
 * 98 to 1,057 MiB, with a producer key. Unary answers not yet sent are now held to budgets per
 * connection and per key (grpc.max_bytes_in_flight_*, src/rpc/unsent-answers.ts): more calls
 * wait before they run. Here at a small scale, asserted on the bytes the server counts; real
 * server on port 0, raw HTTP/2. The budgets' rules without a socket: tests/rpc/unsent-answers.test.ts.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect } from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { type CallOptions, type ClientReadableStream, Metadata, status } from '@grpc/grpc-js';
import { GetJobRequest } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { type EventsResponse, JobEventKind } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { EnqueueBatchRequest } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { ReserveRequest } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { createLogger } from '../../src/telemetry/logger.ts';
import { apiKeyToml } from '../helpers/access-table.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { grpcFrame } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { waitFor } from '../helpers/steady-load.ts';

const KiB = 1024;
const key = 'h2budget-reader-key-0123456789abcdef';
const workerKey = 'h2budget-worker-key-0123456789abcdef';
const perConnection = 640 * KiB;
const perKey = 1024 * KiB;
let t: TestServer;
let jobId = '';
const lines: string[] = [];

// In a describe of its own: tests/store/postgres-suites.test.ts runs this file with others in one process.
describe('unary answers nobody reads', () => {
  before(async () => {
    t = await startTestServer({
      logger: createLogger({ level: 'warn', format: 'json', write: (line) => lines.push(line) }),
      toml: `${apiKeyToml('reader', 'producer', key)}${apiKeyToml('worker', 'worker', workerKey)}
[queue_defaults]
max_payload_bytes = "200KiB"
[limits]
max_batch_jobs = 3000
[grpc]
max_message_bytes = "320KiB"
max_bytes_in_flight_per_connection = "640KiB"
max_bytes_in_flight_per_key = "1MiB"
[queues.given-back]
# One lease a minute: the job is leased again at once only if the undone lease gave its token back.
rate_limit_leases = 1
rate_limit_period_ms = "1m"
`,
    });
    const payload = Buffer.alloc(190 * KiB, 0x61);
    ({ jobId } = await call(t.client, t.client.enqueue, { job: testJob('big', { payload }) }, withKey()));
  });
  after(() => t?.dispose());

  /**
   * A call that waits for room ends by this deadline: a budget that never empties (a leak) fails the
   * test instead of hanging the file (each test has a timeout too: `bounded`).
   */
  const within = (): Partial<CallOptions> => ({ deadline: Date.now() + 20_000 });
  const bounded = { timeout: 60_000 };

  function withKey(secret = key): Metadata {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${secret}`);
    return metadata;
  }

  /** A connection that reads nothing (a zero window), with `calls` GetJob calls; records the statuses it got. */
  function unreadCalls(calls: number): { session: ClientHttp2Session; statuses: string[] } {
    const session = connect(`http://${t.address}`, { settings: { initialWindowSize: 0 } });
    session.on('error', () => {});
    const statuses: string[] = [];
    const body = grpcFrame(GetJobRequest.encode({ jobId }).finish());
    for (let i = 0; i < calls; i++) unreadCall(session, 'GetJob', body, (code) => statuses.push(code));
    return { session, statuses };
  }

  /** One call of `method` on `session` whose answer is never read; `onStatus` gets its grpc-status. */
  function unreadCall(
    session: ClientHttp2Session,
    method: string,
    body: Buffer,
    onStatus: (code: string) => void,
    secret = key,
  ): void {
    const request = session.request({
      ':method': 'POST',
      ':path': `/sepp.v1.QueueService/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${secret}`,
    });
    const take = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) onStatus(String(headers['grpc-status']));
    };
    request.on('response', take);
    request.on('trailers', take);
    request.on('error', () => {});
    request.pause();
    request.end(body);
  }

  const answers = () => t.server.bytesInFlight().answers;

  test(
    'calls whose answers are never read hold at most the budgets; the rest wait before they run',
    bounded,
    async () => {
      // 12 answers of ~190 KiB on one connection: 2.3 MiB held before, at most 640 KiB now.
      const first = unreadCalls(12);
      await waitFor(
        () => answers().held + answers().waiting === 12,
        'every call answered or waiting',
        20_000,
      );
      assert.ok(answers().held >= 2, `some answers are held (${answers().held})`);
      assert.ok(answers().connections.usedBytes <= perConnection, `${answers().connections.usedBytes}`);

      // The reader's waiting calls hold up its own connection only: another of the key's is served.
      assert.equal((await call(t.client, t.client.getJob, { jobId }, withKey(), within())).job?.jobId, jobId);

      // Two more connections of the same key: together they hold at most the key's budget.
      const others = [unreadCalls(12), unreadCalls(12)];
      await waitFor(
        () => answers().held + answers().waiting === 36,
        'every call answered or waiting',
        20_000,
      );
      const reader = answers().byKey.reader;
      assert.ok(reader !== undefined && reader.peakBytes <= perKey, JSON.stringify(reader));
      assert.ok(answers().connections.peakBytes <= perConnection, JSON.stringify(answers().connections));
      assert.ok(
        [first, ...others].every((c) => c.statuses.length === 0),
        'nothing refused: the calls wait',
      );

      // A call of the key on a connection that reads waits too (nothing of it runs), until the reader goes.
      const waiting = answers().waiting;
      const honest = call(t.client, t.client.getJob, { jobId }, withKey(), within());
      await waitFor(() => answers().waiting === waiting + 1, 'the honest call waiting', 10_000);
      for (const c of [first, ...others]) c.session.destroy();
      assert.equal((await honest).job?.jobId, jobId);
      await waitFor(() => answers().held === 0 && answers().waiting === 0, 'everything given back', 10_000);
      assert.equal(answers().byKey.reader?.usedBytes, 0);
      assert.equal(answers().connections.usedBytes, 0);
    },
  );

  test('a client that reads gets every answer of many large calls at once', bounded, async () => {
    const client = t.connect();
    try {
      const jobs = await Promise.all(
        Array.from({ length: 12 }, () => call(client, client.getJob, { jobId }, withKey(), within())),
      );
      assert.ok(jobs.every((j) => j.job?.jobId === jobId));
    } finally {
      client.close();
    }
  });

  test(
    'a Reserve whose answer is refused gives its jobs back at once, attempt uncounted, and its call counts as refused',
    bounded,
    async () => {
      // Three unread answers of ~190 KiB fill most of the connection's 640 KiB; a Reserve (never held
      // back: it waits for jobs, not for room) then leases a job of 190 KiB whose answer does not fit.
      const { session } = unreadCalls(3);
      const queue = 'given-back';
      // A subscriber to the queue's events (all kinds): it is told the lease, then its undoing.
      const events = t.client.events(
        {
          queues: [queue],
          jobIds: [],
          kinds: [],
          afterSequence: 0,
          streamId: '',
          fromOldest: false,
          allKinds: true,
        },
        withKey(),
      ) as ClientReadableStream<EventsResponse>;
      const seen: string[] = [];
      let caughtUp = false;
      events.on('data', (m: EventsResponse) => {
        caughtUp ||= m.caughtUp;
        for (const e of m.events) seen.push(`${JobEventKind[e.kind].toLowerCase()}:${e.attempt}`);
      });
      events.on('error', () => {});
      try {
        await waitFor(
          () => answers().held === 3 && caughtUp,
          'three answers held, the subscriber caught up',
          20_000,
        );
        const payload = Buffer.alloc(190 * KiB, 0x62);
        const { jobId: leasedId } = await call(
          t.client,
          t.client.enqueue,
          // One attempt only: the lease that never reached a worker must not spend it.
          { job: testJob(queue, { payload, maxAttempts: 1 }) },
          withKey(),
        );
        const refused = new Promise<string>((resolve) =>
          unreadCall(
            session,
            'Reserve',
            grpcFrame(
              ReserveRequest.encode(
                ReserveRequest.fromPartial({ queues: [queue], maxJobs: 1, workerId: 'no-reader' }),
              ).finish(),
            ),
            resolve,
            workerKey,
          ),
        );
        assert.equal(await refused, String(status.RESOURCE_EXHAUSTED));
        // Another worker leases it at once: no lease had to end. The undone lease's attempt does not
        // count, so it gets attempt 1 again (not a dead letter: it had one attempt). The give-back is a
        // write that follows the refusal: a short long-poll sees it.
        const { jobs } = await call(
          t.client,
          t.client.reserve,
          ReserveRequest.fromPartial({
            queues: [queue],
            maxJobs: 1,
            workerId: 'reader',
            waitTimeoutMs: 2_000,
          }),
          withKey(workerKey),
        );
        const again = jobs[0];
        assert.ok(again !== undefined, 'the job was leased again within the wait');
        assert.equal(again.jobId, leasedId);
        assert.equal(again.attempt, 1);
        const { job } = await call(t.client, t.client.getJob, { jobId: leasedId }, withKey(), within());
        assert.deepEqual(
          [job?.state, job?.attempt, job?.errors, job?.lastError],
          [JobState.LEASED, 1, [], ''],
        );
        // The refused Reserve is in rpc.server.duration with the code its client got, not OK.
        const { samples } = await scrape(t.metricsUrl);
        const reserves = (code: status) =>
          samples.find(
            (s) =>
              s.name === 'rpc_server_duration_count' &&
              s.labels.rpc_method === 'Reserve' &&
              s.labels.rpc_grpc_status_code === String(code),
          )?.value ?? 0;
        assert.equal(reserves(status.RESOURCE_EXHAUSTED), 1);
        // Counted as undone (and still as reserved: a counter never goes down).
        assert.equal(sampleValue(samples, 'sepp_leases_undone_total', { sepp_queue: queue }), 1);
        assert.equal(sampleValue(samples, 'sepp_jobs_reserved_total', { sepp_queue: queue }), 2);
        await waitFor(() => seen.length === 4, 'four events', 10_000);
        assert.deepEqual(seen, ['enqueued:0', 'leased:1', 'lease_undone:1', 'leased:1']);
        // The log names the key (never its secret): the refusal and the give-back in one WARN line.
        const told = lines.filter((line) => line.includes('"rpc.answers_refused"'));
        assert.deepEqual(
          told.map((line) => JSON.parse(line)).map((l) => [l.level, l.key, l.refused, l.given_back]),
          [['warn', 'worker', 1, 1]],
        );
        assert.ok(!told.some((line) => line.includes(workerKey)), 'no secret in the line');
      } finally {
        events.cancel();
        session.destroy();
      }
      await waitFor(() => answers().held === 0, 'everything given back', 10_000);
    },
  );

  test(
    "a write that lists items waits before it runs until its answer's bound has room; never overdraws",
    bounded,
    async () => {
      // A small EnqueueBatch makes the method's guess small: the large one below is let in at once,
      // then waits, its request decoded, for room for the most it can answer.
      await call(t.client, t.client.enqueueBatch, { jobs: [testJob('reserved')] }, withKey(), within());
      // Three unread answers of ~190 KiB hold 570 of the connection's 640 KiB.
      const { session, statuses } = unreadCalls(3);
      try {
        await waitFor(() => answers().held === 3, 'three answers held', 20_000);
        const before = answers();
        const jobs = Array.from({ length: 3000 }, () => testJob('reserved'));
        let batchStatus: string | undefined;
        unreadCall(
          session,
          'EnqueueBatch',
          grpcFrame(EnqueueBatchRequest.encode({ jobs }).finish()),
          (code) => {
            batchStatus = code;
          },
        );
        // Its bound (3,000 items, capped at grpc.max_message_bytes: 320 KiB) does not fit the 70 KiB
        // left: it waits before its handler has the request, and nothing is enqueued.
        await waitFor(() => answers().waiting === before.waiting + 1, 'the batch waiting', 20_000);
        const ready = async () =>
          (await t.server.engine.listQueues()).find((q) => q.name === 'reserved')?.counts.ready;
        assert.equal(await ready(), 1, 'not run yet');
        // The client reads (a window at last): the answers go out, the batch runs and is answered OK.
        session.settings({ initialWindowSize: 1024 * KiB });
        await waitFor(() => batchStatus !== undefined && statuses.length === 3, 'every status', 20_000);
        assert.equal(batchStatus, String(status.OK));
        assert.deepEqual(statuses, ['0', '0', '0']);
        assert.equal(await ready(), 3001, 'enqueued once');
        assert.equal(answers().overdrawn, before.overdrawn, 'its answer fit the room it kept');
        assert.equal(answers().refused, before.refused, 'nothing refused');
        assert.ok(answers().connections.peakBytes <= perConnection, JSON.stringify(answers().connections));
      } finally {
        session.destroy();
      }
      await waitFor(() => answers().held === 0 && answers().waiting === 0, 'everything given back', 10_000);
    },
  );
});
