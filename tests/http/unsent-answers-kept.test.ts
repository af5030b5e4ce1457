/**
 * The room a request let in keeps for its answer (src/http/unsent-answers.ts), as gRPC's
 * unary calls keep theirs (rpc/unsent-answers.ts). Without it, requests of one key let in
 * together all saw the same room, ran, and all but the first were refused after they had been
 * carried out (429 with Retry-After: a client that retries an enqueue then enqueues it twice).
 * A write reserves room for the most it can answer before it runs, and is refused then when that
 * room is not there (task http429b-20); the guess of an answer is its key's own. The budget alone, no server: what it admits and holds
 * is the whole of it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppError } from '../../src/engine/errors.ts';
import { type AnswerRoom, UnsentAnswers } from '../../src/http/unsent-answers.ts';

const getJob = 'GET /v1/jobs/{jobId}';
const reserve = 'POST /v1/reserve';
const enqueueBatch = 'POST /v1/jobs/batch';
const outcome = 'GET /v1/jobs/{jobId}/outcome';

function admitted(answers: UnsentAnswers, key: string, operation: string, longPoll = false): AnswerRoom {
  const room = answers.admit(key, operation, longPoll);
  assert.ok(!(room instanceof SeppError), `let in: ${room instanceof SeppError ? room.message : ''}`);
  return room;
}

/** A budget of 100 bytes per key whose key `k` holds an unread answer of 60; its GET answers are 30. */
function budgetHolding60(): UnsentAnswers {
  const answers = new UnsentAnswers({ maxInFlightBytes: 1000, maxInFlightBytesPerKey: 100 });
  assert.equal(admitted(answers, 'k', reserve).hold(60), null);
  const sized = admitted(answers, 'k', getJob);
  assert.equal(sized.hold(30), null);
  sized.end();
  return answers;
}

test('requests let in together keep room for their answers: none is refused after it ran', () => {
  const answers = budgetHolding60();
  const first = admitted(answers, 'k', getJob);
  const second = answers.admit('k', getJob, false);
  assert.ok(
    second instanceof SeppError,
    'the first keeps its 30: no room for a second, refused before it runs',
  );
  assert.match(second.message, /^the request was not carried out/);
  // The first's answer, as large as guessed, fits the room it kept.
  assert.equal(first.hold(30), null, 'the answer of a request let in is sent');
  // Another key is served meanwhile.
  admitted(answers, 'other', getJob);
});

test('a request that ends without an answer held gives its room back', () => {
  const answers = budgetHolding60();
  const failed = admitted(answers, 'k', getJob);
  failed.end();
  failed.end();
  admitted(answers, 'k', getJob);
  // Given back once: the one let in now keeps its 30, and leaves no room for another.
  assert.ok(answers.admit('k', getJob, false) instanceof SeppError);
});

test('a long-poll keeps no room while it waits', () => {
  const answers = budgetHolding60();
  // Reserves wait for jobs up to minutes: room kept for each would refuse a key's other requests.
  admitted(answers, 'k', getJob, true);
  admitted(answers, 'k', getJob);
});

test('a write reserves room for the most it can answer before it runs, or is refused then', () => {
  const answers = budgetHolding60();
  const write = admitted(answers, 'k', enqueueBatch);
  // The bound of its answer (from its parsed request) does not fit the 40 left: refused, not run.
  const refused = write.reserve(41);
  assert.match(refused?.message ?? '', /^the request was not carried out: .* hold 0\.0 MiB of key k's/);
  write.end();
  const fitting = admitted(answers, 'k', enqueueBatch);
  assert.equal(fitting.reserve(40), null);
  // The room is kept: the key's other requests are refused before they run.
  assert.ok(answers.admit('k', getJob, false) instanceof SeppError);
  // Its answer, within the reservation, is held in its room; nothing overdrawn.
  assert.equal(fitting.hold(40), null);
  assert.deepEqual(answers.heldBytes('k'), { total: 100, key: 100 });
  assert.equal(answers.overdrawn, 0);
  fitting.end();
  assert.deepEqual(answers.heldBytes('k'), { total: 60, key: 60 });
});

test("a write's answer beyond its reservation (a wrong bound) is sent, overdrawing, and told", () => {
  const told: [string, number, number][] = [];
  const answers = new UnsentAnswers({ maxInFlightBytes: 1000, maxInFlightBytesPerKey: 100 }, (...beyond) =>
    told.push(beyond),
  );
  assert.equal(admitted(answers, 'k', reserve).hold(60), null);
  const write = admitted(answers, 'k', enqueueBatch);
  assert.equal(write.reserve(10), null);
  const read = admitted(answers, 'k', outcome, true);
  assert.equal(write.hold(80), null, 'sent: its request changed something');
  assert.deepEqual(told, [[enqueueBatch, 80, 10]]);
  assert.deepEqual(answers.heldBytes('k'), { total: 140, key: 140 });
  assert.equal(answers.overdrawn, 1);
  // A read (or a reserve that can be undone) is refused its answer past the budget.
  assert.match(
    read.hold(10)?.message ?? '',
    /^the answer \(10 bytes\) was not sent, though the request was carried out/,
  );
  read.end();
  // Overdrawn: every new request of the key is refused before it runs, a write as a read.
  for (const operation of [enqueueBatch, getJob, 'POST /v1/jobs']) {
    assert.ok(answers.admit('k', operation, false) instanceof SeppError, operation);
  }
  admitted(answers, 'other', enqueueBatch).end();
  // Its client reads it: the budget is under its limit again.
  write.end();
  assert.deepEqual(answers.heldBytes('k'), { total: 60, key: 60 });
  admitted(answers, 'k', getJob);
});

test("guesses are the key's own, and live as long as its budget holds something", () => {
  const answers = new UnsentAnswers({ maxInFlightBytes: 10_000, maxInFlightBytesPerKey: 100 });
  const big = admitted(answers, 'big', getJob);
  assert.equal(big.hold(5_000), null, 'one answer larger than the budget fits an empty one');
  // Key `small` holds 60 and answers GETs of 30: a guess of 5,000 bytes would refuse it.
  const unread = admitted(answers, 'small', reserve);
  assert.equal(unread.hold(60), null);
  admitted(answers, 'small', getJob).end();
  const small = admitted(answers, 'small', getJob);
  assert.equal(small.hold(30), null);
  // Key `big`, holding 5,000, is refused before its next GET runs; once read, its guesses go with its entry.
  assert.ok(answers.admit('big', getJob, false) instanceof SeppError);
  big.end();
  const again = admitted(answers, 'big', getJob);
  admitted(answers, 'big', getJob);
  again.end();
});
