/**
 * The budgets of answers not yet sent (src/rpc/unsent-answers.ts), without a socket: which calls
 * run at once, wait or are refused, what an answer holds and gives back, and the bounds of the
 * listed writes' answers (src/rpc/answer-bounds.ts) whose room a reservation keeps. What a real
 * client that never reads meets over HTTP/2 is in tests/security/unread-answers.test.ts.
 */
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { test } from 'node:test';
import {
  AddToBatchResponse,
  BatchState,
  CreateBatchResponse,
} from '../../clients/typescript/src/gen/sepp/v1/batch.js';
import { EnqueueFlowResponse } from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import { RejectionReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  EnqueueAtomicResponse,
  EnqueueBatchResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { AckBatchResponse, SettleOutcome } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { boundMessage } from '../../src/config/index.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import { answerBytesMaxOf } from '../../src/rpc/answer-bounds.ts';
import { Connection } from '../../src/rpc/connections.ts';
import { toServiceError } from '../../src/rpc/status.ts';
import { refusableAfterRun, UnsentAnswers } from '../../src/rpc/unsent-answers.ts';

const KiB = 1024;

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

test('a Work stream takes room for its jobs, gives it back as each message goes, and waits when full', () => {
  const answersOf = newBudgets();
  const stream = answersOf.followStream(undefined, 'k');
  assert.equal(stream.empty(), true);
  assert.equal(stream.room(), 1024 * KiB, 'without a connection, the key budget alone');
  stream.take(900 * KiB);
  assert.equal(stream.empty(), false);
  assert.equal(stream.room(), 124 * KiB);
  let woken = 0;
  stream.whenRoom(() => woken++);
  // A unary call of the key waits behind what the stream holds, then runs once its room is back.
  const ran: string[] = [];
  answersOf.follow(undefined, 'k', getJobPath).admit(() => ran.push('GetJob'));
  assert.deepEqual(ran, [], 'the GetJob waits: its guess (320 KiB) does not fit');
  assert.equal(stream.room(), 0, 'no room for the stream while a call waits for it');
  stream.give(600 * KiB);
  assert.deepEqual(ran, ['GetJob'], 'the waiting call ran first');
  assert.equal(woken, 1, 'then the stream was woken, once');
  stream.give(100 * KiB);
  assert.equal(woken, 1, 'a wake is for one wait');
  assert.deepEqual(answersOf.stats().byKey.k, { usedBytes: 200 * KiB, peakBytes: 900 * KiB });
  assert.equal(answersOf.stats().held, 1, 'a stream holding jobs counts as one answer');
});

test('a Work stream that ends gives back all it holds at once and wakes the key’s other streams', () => {
  const answersOf = newBudgets();
  // A connection is only a key of the budgets here: no socket is read.
  const connection = new Connection(new Socket());
  const gone = answersOf.followStream(connection, 'k');
  const other = answersOf.followStream(undefined, 'k');
  gone.take(600 * KiB);
  assert.equal(gone.room(), 40 * KiB, 'its connection’s budget (640 KiB) is the smaller room');
  other.take(400 * KiB);
  assert.equal(other.room(), 24 * KiB);
  let woken = 0;
  other.whenRoom(() => woken++);
  gone.close();
  assert.equal(woken, 1);
  assert.equal(other.room(), 624 * KiB);
  // Its messages called back after its end give nothing back twice.
  gone.give(600 * KiB);
  gone.take(100 * KiB);
  assert.equal(answersOf.stats().byKey.k?.usedBytes, 400 * KiB);
  assert.equal(answersOf.stats().connections.usedBytes, 0);
});

test('a job larger than the room goes alone, past the budget, and is counted as overdrawn', () => {
  const answersOf = newBudgets();
  const stream = answersOf.followStream(undefined, 'k');
  stream.take(1100 * KiB);
  assert.equal(answersOf.stats().overdrawn, 1);
  assert.equal(stream.room(), 0, 'nothing more until it is sent');
  stream.give(1100 * KiB);
  assert.equal(stream.empty(), true);
});
