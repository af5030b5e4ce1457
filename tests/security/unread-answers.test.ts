/**
 * Answers nobody reads (task h2budget18, found by attack5 on 2026-12-07). A client that opens
 * many GetJob calls for a large job on one HTTP/2 connection with a zero flow-control window,
 * and never reads, made the server hold every answer: 1,000 calls for a 900 KB job took it from
 * 98 to 1,057 MiB, with a producer key. Unary answers not yet sent are now held to budgets per
 * connection and per key (grpc.max_bytes_in_flight_*, src/rpc/unsent-answers.ts): more calls
 * wait before they run. Here at a small scale, asserted on the bytes the server counts; real
 * server on port 0, raw HTTP/2.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect } from 'node:http2';
import { after, before, test } from 'node:test';
import { type CallOptions, type ClientReadableStream, Metadata, status } from '@grpc/grpc-js';
import { GetJobRequest } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import {
  AddToBatchResponse,
  BatchState,
  CreateBatchResponse,
} from '../../clients/typescript/src/gen/sepp/v1/batch.js';
import { type EventsResponse, JobEventKind } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { EnqueueFlowResponse } from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import { JobState, RejectionReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  EnqueueAtomicResponse,
  EnqueueBatchRequest,
  EnqueueBatchResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import {
  AckBatchResponse,
  ReserveRequest,
  SettleOutcome,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { boundMessage } from '../../src/config/index.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import { answerBytesMaxOf } from '../../src/rpc/answer-bounds.ts';
import { toServiceError } from '../../src/rpc/status.ts';
import { refusableAfterRun, UnsentAnswers } from '../../src/rpc/unsent-answers.ts';
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

before(async () => {
  t = await startTestServer({
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
    await waitFor(() => answers().held + answers().waiting === 12, 'every call answered or waiting', 20_000);
    assert.ok(answers().held >= 2, `some answers are held (${answers().held})`);
    assert.ok(answers().connections.usedBytes <= perConnection, `${answers().connections.usedBytes}`);

    // The reader's waiting calls hold up its own connection only: another of the key's is served.
    assert.equal((await call(t.client, t.client.getJob, { jobId }, withKey(), within())).job?.jobId, jobId);

    // Two more connections of the same key: together they hold at most the key's budget.
    const others = [unreadCalls(12), unreadCalls(12)];
    await waitFor(() => answers().held + answers().waiting === 36, 'every call answered or waiting', 20_000);
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

const getJobPath = '/sepp.v1.QueueService/GetJob';
const newBudgets = () =>
  new UnsentAnswers({
    maxBytesInFlightPerConnection: 640 * KiB,
    maxBytesInFlightPerKey: 1024 * KiB,
    maxMessageBytes: 320 * KiB,
  });

/** Budgets, and `run(method)`: a call of key `k` let in against them, its name in `ran` once it runs. */
function runner() {
  const answersOf = newBudgets();
  const ran: string[] = [];
  const run = (method: string) => {
    const answer = answersOf.follow(undefined, 'k', `/sepp.v1.QueueService/${method}`);
    answer.admit(() => ran.push(method));
    return answer;
  };
  return { answersOf, ran, run };
}

test('reads let in together whose answers do not fit are refused, later; the budget never overruns', () => {
  const answersOf = newBudgets();
  const ran: number[] = [];
  const calls = [0, 1, 2].map((i) => {
    const answer = answersOf.follow(undefined, 'k', getJobPath);
    answer.admit(() => ran.push(i));
    return answer;
  });
  assert.deepEqual(ran, [0, 1, 2], 'all three ran at once: nothing was held yet');
  assert.equal(calls[0]?.hold(400 * KiB), null);
  assert.equal(calls[1]?.hold(400 * KiB), null);
  const refusal = calls[2]?.hold(300 * KiB);
  assert.equal(refusal?.code, 'resource_exhausted');
  assert.match(
    refusal?.message ?? '',
    /was not sent, though the call was carried out.*grpc\.max_bytes_in_flight_per_key/,
  );
  assert.equal(toServiceError(refusal).metadata?.get('sepp-retry')[0], 'later');
  assert.deepEqual(answersOf.stats().byKey.k, { usedBytes: 800 * KiB, peakBytes: 800 * KiB });
  // A fourth waits (no room for an answer of 400 KiB, the last) and runs once an answer went out.
  const fourth = answersOf.follow(undefined, 'k', getJobPath);
  fourth.admit(() => ran.push(3));
  assert.equal(answersOf.stats().waiting, 1);
  calls[0]?.finished();
  assert.deepEqual(ran, [0, 1, 2, 3]);
  for (const c of [...calls, fourth]) c.finished();
  assert.equal(answersOf.stats().byKey.k?.usedBytes, 0);
});

test("a write's answer that does not fit is sent, overdrawing; calls wait until it went out", () => {
  assert.deepEqual(
    ['Reserve', 'GetJob', 'ListQueues', 'Enqueue', 'AckBatch', 'CancelJobs', 'Getaway'].map((m) =>
      refusableAfterRun(`/sepp.v1.QueueService/${m}`),
    ),
    [true, true, true, false, false, false, false],
  );
  const { answersOf, ran, run } = runner();
  const calls = [run('GetJob'), run('GetJob'), run('EnqueueBatch')];
  assert.deepEqual(ran, ['GetJob', 'GetJob', 'EnqueueBatch'], 'all three ran at once: nothing was held yet');
  assert.equal(calls[0]?.hold(400 * KiB), null);
  assert.equal(calls[1]?.hold(400 * KiB), null);
  assert.equal(calls[2]?.hold(300 * KiB), null, 'sent: the call enqueued its jobs');
  assert.deepEqual(answersOf.stats().byKey.k, { usedBytes: 1100 * KiB, peakBytes: 1100 * KiB });
  assert.equal(answersOf.stats().overdrawn, 1);
  // Over its limit, the key's next call waits before it runs, a write as a read, until it is under again.
  const next = run('Enqueue');
  assert.equal(answersOf.stats().waiting, 1);
  calls[2]?.finished();
  assert.equal(answersOf.stats().waiting, 1, '800 KiB held: still no room for a guess of 320 KiB');
  calls[1]?.finished();
  assert.deepEqual(ran.at(-1), 'Enqueue');
  for (const c of [...calls, next]) c.finished();
  assert.equal(answersOf.stats().byKey.k?.usedBytes, 0);
});

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
        ReserveRequest.fromPartial({ queues: [queue], maxJobs: 1, workerId: 'reader', waitTimeoutMs: 2_000 }),
        withKey(workerKey),
      );
      const again = jobs[0];
      assert.ok(again !== undefined, 'the job was leased again within the wait');
      assert.equal(again.jobId, leasedId);
      assert.equal(again.attempt, 1);
      const { job } = await call(t.client, t.client.getJob, { jobId: leasedId }, withKey(), within());
      assert.deepEqual([job?.state, job?.attempt, job?.errors, job?.lastError], [JobState.LEASED, 1, [], '']);
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

test('a reservation waits for room, and its answer within it is held without overdraft', () => {
  const { answersOf, ran, run } = runner();
  // A small EnqueueBatch answer makes the method's guess 10 KiB.
  const small = run('EnqueueBatch');
  assert.equal(small.hold(10 * KiB), null);
  small.finished();
  const first = run('GetJob');
  assert.equal(first.hold(800 * KiB), null);
  const batch = run('EnqueueBatch');
  // The guess fits beside the 800 KiB held; the bound of 300 KiB does not: its request waits.
  batch.reserve(300 * KiB, () => ran.push('handler'));
  assert.deepEqual(ran, ['EnqueueBatch', 'GetJob', 'EnqueueBatch']);
  assert.equal(answersOf.stats().waiting, 1);
  first.finished();
  assert.equal(ran.at(-1), 'handler');
  // Its room is kept: of three GetJobs (guessed at 320 KiB, the largest size), the third waits,
  // where without the 300 KiB kept all three would fit the 1 MiB.
  const reads = [run('GetJob'), run('GetJob'), run('GetJob')];
  assert.equal(answersOf.stats().waiting, 1);
  assert.equal(batch.hold(290 * KiB), null);
  assert.equal(answersOf.stats().overdrawn, 0);
  assert.equal(answersOf.stats().waiting, 1, 'still no room beside the 290 KiB held');
  batch.finished();
  assert.equal(answersOf.stats().waiting, 0);
  for (const read of reads) read.finished();
  assert.equal(answersOf.stats().byKey.k?.usedBytes, 0);
});

test("a key's guesses are its own: another key's large answers do not make its calls wait", () => {
  const answersOf = newBudgets();
  const ran: string[] = [];
  const run = (caller: string, method = getJobPath) => {
    const answer = answersOf.follow(undefined, caller, method);
    answer.admit(() => ran.push(caller));
    return answer;
  };
  // Key b's jobs answer 10 KiB; it holds 900 KiB of unread flows of its 1 MiB.
  const sized = run('b');
  assert.equal(sized.hold(10 * KiB), null);
  sized.finished();
  const unread = [0, 1, 2].map(() => run('b', '/sepp.v1.QueueService/GetFlow'));
  for (const flow of unread) assert.equal(flow.hold(300 * KiB), null);
  // Key a's job answers 320 KiB: b's next GetJob keeps room for its own 10 KiB, and runs.
  assert.equal(run('a').hold(320 * KiB), null);
  ran.length = 0;
  run('b');
  assert.deepEqual(ran, ['b']);
  assert.equal(answersOf.stats().waiting, 0);
});

test('a request that comes while its call waits to run is reserved once it runs; a call ended waiting keeps nothing', () => {
  const answersOf = newBudgets();
  const ran: string[] = [];
  const first = answersOf.follow(undefined, 'k', getJobPath);
  first.admit(() => ran.push('GetJob'));
  assert.equal(first.hold(1000 * KiB), null);
  // Guessed at 320 KiB (no EnqueueBatch answered yet): no room beside 1,000 KiB, it waits to run,
  // and its request, decoded meanwhile, waits with it.
  const batch = answersOf.follow(undefined, 'k', '/sepp.v1.QueueService/EnqueueBatch');
  batch.admit(() => ran.push('let in'));
  batch.reserve(100 * KiB, () => ran.push('handler'));
  const gone = answersOf.follow(undefined, 'k', '/sepp.v1.QueueService/EnqueueBatch');
  gone.admit(() => ran.push('never'));
  gone.reserve(100 * KiB, () => ran.push('never'));
  assert.deepEqual(ran, ['GetJob']);
  gone.finished();
  first.finished();
  assert.deepEqual(ran, ['GetJob', 'let in', 'handler']);
  assert.equal(batch.hold(90 * KiB), null);
  batch.finished();
  assert.deepEqual(answersOf.stats().byKey.k, { usedBytes: 0, peakBytes: 1000 * KiB });
  assert.equal(answersOf.stats().waiting, 0);
  // Nothing kept is left behind: a call guessed at the largest size runs at once beside 700 KiB.
  const big = answersOf.follow(undefined, 'k', getJobPath);
  big.admit(() => ran.push('big'));
  assert.equal(big.hold(700 * KiB), null);
  const last = answersOf.follow(undefined, 'k', '/sepp.v1.QueueService/EnqueueAtomic');
  last.admit(() => ran.push('last'));
  assert.equal(ran.at(-1), 'last');
  for (const c of [big, last]) c.finished();
});

test('an answer that comes after its call ended (its client went while it ran) holds nothing', () => {
  // On PostgreSQL a GetJob runs for milliseconds: a client that goes meanwhile ends the call first.
  // Its answer then took bytes nothing gave back, and the key's budget stayed full for good: its
  // other calls were refused or waited forever (this file under SEPP_TEST_STORE=postgres).
  const answersOf = newBudgets();
  const gone = answersOf.follow(undefined, 'k', getJobPath);
  gone.admit(() => {});
  gone.finished();
  assert.equal(gone.hold(400 * KiB), null);
  gone.finished();
  assert.deepEqual(answersOf.stats().byKey.k, { usedBytes: 0, peakBytes: 0 });
  assert.equal(answersOf.stats().held, 0);
});

test("a listed write's answer is within its bound, with the longest message or name on every item", () => {
  const items = 1000;
  const message = boundMessage('é€'.repeat(2000));
  const jobId = '0f0e0d0c-0b0a-4908-8706-050403020100';
  const reason = RejectionReason.DEPENDENCIES_UNSUPPORTED;
  const bound = (method: string, field: string) =>
    answerBytesMaxOf(`/sepp.v1.QueueService/${method}`, { [field]: Array(items) }, defaultEngineLimits) ?? 0;
  const rejections = Array.from({ length: items }, (_, i) => ({ index: 100_000 + i, reason, message }));
  const sizes: [string, number, number][] = [
    [
      'EnqueueBatch',
      EnqueueBatchResponse.encode({
        results: Array.from({ length: items }, () => ({
          outcome: { $case: 'rejection' as const, value: { reason, message } },
        })),
      }).finish().length,
      bound('EnqueueBatch', 'jobs'),
    ],
    [
      'EnqueueAtomic',
      EnqueueAtomicResponse.encode({ committed: false, results: [], rejections }).finish().length,
      bound('EnqueueAtomic', 'jobs'),
    ],
    [
      'EnqueueFlow',
      EnqueueFlowResponse.encode({
        committed: true,
        jobs: Array.from({ length: items }, () => ({
          name: 'n'.repeat(defaultEngineLimits.maxNameLength),
          jobId,
          deduplicated: true,
        })),
        rejections: [],
      }).finish().length,
      bound('EnqueueFlow', 'jobs'),
    ],
    [
      'AckBatch',
      AckBatchResponse.encode({
        results: Array.from({ length: items }, () => ({ outcome: SettleOutcome.LEASE_LOST, message })),
      }).finish().length,
      bound('AckBatch', 'acks'),
    ],
  ];
  const batch = {
    id: jobId,
    state: BatchState.ENDED,
    createdAtMs: Number.MAX_SAFE_INTEGER,
    sealedAtMs: Number.MAX_SAFE_INTEGER,
    endedAtMs: Number.MAX_SAFE_INTEGER,
    members: Number.MAX_SAFE_INTEGER,
    pending: Number.MAX_SAFE_INTEGER,
    completed: Number.MAX_SAFE_INTEGER,
    dead: Number.MAX_SAFE_INTEGER,
    cancelled: Number.MAX_SAFE_INTEGER,
    hasOnComplete: true,
    hasOnSuccess: true,
    hasOnDeath: true,
    completeJobId: jobId,
    successJobId: jobId,
    firstDeadId: jobId,
    deathJobId: jobId,
    completionError: message,
    owner: 'k'.repeat(64),
  };
  const batchResults = EnqueueBatchResponse.decode(
    EnqueueBatchResponse.encode({
      results: Array.from({ length: items }, () => ({
        outcome: { $case: 'rejection' as const, value: { reason, message } },
      })),
    }).finish(),
  ).results;
  sizes.push(
    [
      'CreateBatch',
      CreateBatchResponse.encode({ batch, results: batchResults }).finish().length,
      bound('CreateBatch', 'jobs'),
    ],
    [
      'AddToBatch',
      AddToBatchResponse.encode({ batch, results: batchResults }).finish().length,
      bound('AddToBatch', 'jobs'),
    ],
  );
  for (const [method, bytes, max] of sizes)
    assert.ok(bytes <= max, `${method}: ${bytes} bytes, bound ${max}`);
  assert.equal(answerBytesMaxOf('/sepp.v1.QueueService/Enqueue', {}, defaultEngineLimits), undefined);
});
