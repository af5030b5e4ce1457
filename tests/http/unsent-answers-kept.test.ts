/**
 * The room a request let in keeps for its answer (src/http/unsent-answers.ts), as gRPC's
 * unary calls keep theirs (rpc/unsent-answers.ts). Without it, requests of one key let in
 * together all saw the same room, ran, and all but the first were refused after they had been
 * carried out (429 with Retry-After: a client that retries an enqueue then enqueues it twice).
 * The budget alone, no server: what it admits and holds is the whole of it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppError } from '../../src/engine/errors.ts';
import { UnsentAnswers } from '../../src/http/unsent-answers.ts';

const getJob = 'GET /v1/jobs/{jobId}';
const reserve = 'POST /v1/reserve';

/** A budget of 100 bytes per key whose key holds an unread answer of 60; GET answers are 30. */
function budgetHolding60(): UnsentAnswers {
  const answers = new UnsentAnswers({ maxInFlightBytes: 1000, maxInFlightBytesPerKey: 100 });
  const sized = answers.hold('k', getJob, 30);
  assert.equal(typeof sized, 'function');
  if (typeof sized === 'function') sized();
  const unread = answers.hold('k', reserve, 60);
  assert.equal(typeof unread, 'function');
  return answers;
}

test('requests let in together keep room for their answers: none is refused after it ran', () => {
  const answers = budgetHolding60();
  const first = answers.admit('k', getJob, false);
  assert.ok(!(first instanceof SeppError), 'room for one answer of 30');
  const second = answers.admit('k', getJob, false);
  assert.ok(
    second instanceof SeppError,
    'the first keeps its 30: no room for a second, refused before it runs',
  );
  assert.match(second.message, /^the request was not carried out/);
  // The first's answer, as large as guessed, fits the room it kept.
  first();
  const held = answers.hold('k', getJob, 30);
  assert.equal(typeof held, 'function', 'the answer of a request let in is sent');
  // Another key is served meanwhile.
  assert.ok(!(answers.admit('other', getJob, false) instanceof SeppError));
});

test('a request that ends without an answer held gives its room back', () => {
  const answers = budgetHolding60();
  const failed = answers.admit('k', getJob, false);
  assert.ok(!(failed instanceof SeppError));
  failed();
  failed();
  assert.ok(!(answers.admit('k', getJob, false) instanceof SeppError), 'its room is free again');
  // Given back once: the one let in now keeps its 30, and leaves no room for another.
  assert.ok(answers.admit('k', getJob, false) instanceof SeppError);
});

test('a long-poll keeps no room while it waits', () => {
  const answers = budgetHolding60();
  // Reserves wait for jobs up to minutes: room kept for each would refuse a key's other requests.
  assert.ok(!(answers.admit('k', getJob, true) instanceof SeppError));
  assert.ok(!(answers.admit('k', getJob, false) instanceof SeppError));
});
