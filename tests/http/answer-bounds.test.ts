/**
 * The bounds a write's answer is reserved at before it runs (src/http/answer-bounds.ts), against
 * worst-case samples of what an item of an answer holds: a cut message is at most its cap, and
 * no item (a result of an enqueue, a rejection by index, an ack's outcome, a flow's job, a batch)
 * is larger than its bound. No server: the shapes the routes answer, with the longest values.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import {
  answerItemBytesMax,
  answerItemFramingBytes,
  answerMessageBytesMax,
  boundedMessage,
  fixedAnswerBytesMax,
  itemsAnswerBytes,
  jsonBytes,
} from '../../src/http/answer-bounds.ts';
import { enqueueResultToJson, indexedRejectionsToJson } from '../../src/http/job-json.ts';

const id = '0f0e0d0c-0b0a-4908-8706-050403020100';
/** The longest number an answer holds: 17 characters. */
const number = -Number.MAX_SAFE_INTEGER;
/** The longest rejection reason, and error code an ack's outcome names. */
const reason = 'dependencies_unsupported';

test('a message is cut to answerMessageBytesMax bytes of JSON, whole characters, ending with …', () => {
  assert.equal(boundedMessage('short'), 'short');
  for (const unit of ['a', '"', '\u0001', 'é', '€', '😀', '\ud800']) {
    const cut = boundedMessage(unit.repeat(2000));
    assert.ok(jsonBytes(cut) <= answerMessageBytesMax, `${JSON.stringify(unit)}: ${jsonBytes(cut)} bytes`);
    assert.ok(jsonBytes(cut) > answerMessageBytesMax - 10, 'cut near the cap, not far below');
    assert.ok(cut.endsWith('…'));
    assert.ok(cut.startsWith(unit) && !cut.includes('\ufffd'));
  }
});

test("no item of a write's answer is larger than answerItemBytesMax", () => {
  const long = 'x'.repeat(5000);
  const items = [
    enqueueResultToJson({ ok: true, jobId: id, deduplicated: false, debounced: false }),
    enqueueResultToJson({ ok: false, reason, message: long }),
    ...indexedRejectionsToJson([{ index: number, reason, message: `"\u0001${long}` }]),
    { outcome: 'failed_precondition', message: boundedMessage(`\u0001${long}`) },
  ];
  for (const item of items) {
    // Each item is followed by a comma in its list.
    assert.ok(
      jsonBytes(item) + 1 <= answerItemBytesMax,
      `${jsonBytes(item)} bytes: ${JSON.stringify(item).slice(0, 80)}`,
    );
  }
  const flowJob = { name: 'n'.repeat(defaultEngineLimits.maxNameLength), jobId: id, deduplicated: false };
  assert.ok(jsonBytes(flowJob) + 1 <= answerItemFramingBytes + defaultEngineLimits.maxNameLength);
  // A list's bound holds the envelope of its largest shape: an atomic enqueue's or a flow's.
  const rejection = { index: number, reason, message: boundedMessage(long) };
  const atomic = { committed: false, results: [], rejections: Array.from({ length: 3 }, () => rejection) };
  assert.ok(jsonBytes(atomic) <= itemsAnswerBytes(3, answerItemBytesMax));
});

test('a batch a write answers fits its bound: fixed fields, a key name, a cut completionError', () => {
  const batch = {
    id,
    state: 'cancelled',
    createdAtMs: number,
    sealedAtMs: number,
    endedAtMs: number,
    members: number,
    pending: number,
    completed: number,
    dead: number,
    cancelled: number,
    hasOnComplete: false,
    hasOnSuccess: false,
    hasOnDeath: false,
    completeJobId: id,
    successJobId: id,
    firstDeadId: id,
    deathJobId: id,
    completionError: boundedMessage('\u0001'.repeat(5000)),
    // The longest key name: 64 characters (grpc.api_keys[].name).
    owner: 'k'.repeat(64),
  };
  assert.ok(jsonBytes({ batch, results: [] }) <= 2 * fixedAnswerBytesMax + answerMessageBytesMax);
  // A fixed-shape answer: a cancel's, a flow's cancel counts, a nack's, an extend's.
  for (const answer of [
    { previousState: 'scheduled', state: 'cancelled' },
    { cancelled: number, cancelRequested: number },
    { state: 'scheduled', runAtMs: number },
    { leaseDeadlineMs: number },
    { jobId: id, deduplicated: false, debounced: false },
  ])
    assert.ok(jsonBytes(answer) <= fixedAnswerBytesMax);
});
