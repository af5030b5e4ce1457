/**
 * A model-based fuzzer for the two streams (issue 14, item 6): random
 * sequences of valid and invalid Produce and Work messages (undecodable
 * bytes, invalid UTF-8, batches over the limit, jobs with oversize names,
 * keys, metadata or a type outside a long allowed_types, credit abuse,
 * settlements of jobs leased elsewhere, never leased or named by an oversize
 * id), written all at once without waiting
 * (pipelined), then half-closed or cancelled. After every sequence: the
 * server is alive, every status and answer code is one the protocol
 * documents (and the one it promises where that is known), every message in
 * a status or an answer is at most 1 KiB (issue 29, item 6), nothing of a
 * rejected message or job is stored, no more jobs were pushed than credit
 * granted, jobs are where the answers say, and the counters equal the rows.
 *
 * Replayable: the seed is printed; a failure prints the command that replays
 * its sequence alone. SEPP_STREAM_FUZZ_RUNS (or SEPP_FUZZ_RUNS) sets how many
 * sequences (60 in npm test, 20,000 in `npm run test:long`).
 *
 * Then the answers that grow with stored data (issue 29): large jobs × credit
 * on a Work stream and × max_jobs on a unary Reserve must never be leased into
 * an answer too big to send (item 2), and a caller must not be able to create
 * queues without bound (item 3).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ClientDuplexStream, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { cancelCall } from '../../clients/typescript/src/cancel-call.ts';
import { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import {
  WorkRequest,
  WorkResponse,
  type WorkResponse_Settled,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { messageBytesMax } from '../../src/config/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { FuzzBudget } from '../helpers/fuzz-budget.ts';
import { checkOversizeAnswers, fuzzStringLength, oversizeCases } from '../helpers/oversize.ts';
import { mulberry32, seedFromEnv } from '../helpers/prng.ts';
import { rawBidi } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { ResetPacer } from '../helpers/stream-resets.ts';
import {
  bigQueue,
  type Draw,
  draw,
  type Ending,
  fuzzLimits,
  fuzzToml,
  type ProduceStep,
  produceSequence,
  type WorkStep,
  workSequence,
} from './stream-sequences.ts';

// A sequence costs 20-30 ms here (streams, commits, the checks): the long suite runs at most
// 20,000 (SEPP_STREAM_FUZZ_RUNS), not the other fuzzers' 100,000, and within its time box
// (SEPP_FUZZ_SECONDS, tests/helpers/fuzz-budget.ts), to finish within its 30 minutes.
const defaultRuns = 60;
const runs = Number(process.env.SEPP_STREAM_FUZZ_RUNS ?? process.env.SEPP_FUZZ_RUNS ?? defaultRuns);
const from = Number(process.env.SEPP_FUZZ_FROM ?? 0);
const seed = seedFromEnv('SEPP_FUZZ_SEED');
const endings: Ending[] = ['half-close', 'half-close', 'cancel-at-once', 'cancel-after-first-answer'];

const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);

let t: TestServer;
before(async () => {
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  // A fake clock: leases and retries wait until the model says so, never on the machine's speed.
  t = await startTestServer({ clock: new FakeClock(), toml: fuzzToml });
  client = newConnection();
});
after(async () => {
  process.off('unhandledRejection', onEscape);
  process.off('uncaughtException', onEscape);
  client.close();
  await t.dispose();
});

/**
 * Every sequence runs on this one connection. The long run of 2026-12-05
 * stopped at about sequence 7,300 with 1,000 streams open at both ends, the
 * connection's grpc.max_streams_per_connection: grpc-js opened the stream of
 * each call cancelled in the tick it started ('cancel-at-once') after the
 * cancel and never closed it. The fuzzer cancels with the SDK's cancelCall,
 * which resets such a stream (tests/client/cancel-at-once.test.ts).
 *
 * Each cancel sends the server a reset, and a connection may carry only so
 * many (tests/helpers/stream-resets.ts): past 1,000 at more than 33 a second,
 * the server closes it and the alive check fails with "Session closed with
 * error code 2" (the runs of 2026-12-06 07:40, at sequences 5225 and 14417 of
 * seed 1536504123, on a quiet machine). The fuzzer cancels within that bound.
 */
const newConnection = () =>
  new QueueServiceClient(t.address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
let client: QueueServiceClient;
const resets = new ResetPacer();

type End = { code: status; details: string };

/** Every message sepp answers with is at most messageBytesMax bytes (issue 29, item 6). */
function assertShort(message: string, what: string): void {
  const bytes = Buffer.byteLength(message);
  assert.ok(bytes <= messageBytesMax, `${what}: a message of ${bytes} bytes: ${message.slice(0, 200)}…`);
}

/**
 * Writes every message at once, then ends the stream as `ending` says; resolves with its status,
 * or fails once `hangMs` passed without one.
 */
async function drive<Res>(
  stream: ClientDuplexStream<Buffer, Res>,
  messages: readonly Buffer[],
  ending: Ending,
  hangMs = 30_000,
): Promise<End> {
  const ended = new Promise<End>((resolve) => {
    stream.on('status', (s: End) => resolve({ code: s.code, details: s.details }));
    stream.on('error', (e: ServiceError) => resolve({ code: e.code, details: e.details }));
  });
  let answered = false;
  stream.on('data', () => {
    if (!answered && ending === 'cancel-after-first-answer') cancelCall(stream);
    answered = true;
  });
  for (const m of messages) stream.write(m);
  if (ending === 'half-close') stream.end();
  if (ending === 'cancel-at-once') cancelCall(stream);
  if (ending === 'cancel-after-first-answer') {
    // No answer may come (a violation first, say): then half-close.
    stream.end();
  }
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the stream did not end within ${hangMs / 1000} s`)), hangMs);
  });
  try {
    return await Promise.race([ended, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** Where a job is now, as the fuzzer checks it. */
async function where(jobId: string): Promise<string> {
  try {
    const job = await t.server.engine.getJob(jobId);
    // A job deleted as it finished answers with its outcome for a while (finished-outcomes.ts): its row is gone.
    if (job.outcomeOnly) return 'gone';
    return job.state === 'leased' ? `leased:${job.attempt}` : job.state;
  } catch {
    return 'gone';
  }
}

async function produceRun(d: Draw, index: number, ending: Ending): Promise<void> {
  const queue = `fp${index}`;
  const steps = produceSequence(d, queue, `s${seed}-${index}`);
  const stream = rawBidi(client, '/sepp.v1.QueueService/Produce', (b) => ProduceResponse.decode(b));
  const answers: ProduceResponse[] = [];
  stream.on('data', (a: ProduceResponse) => answers.push(a));
  const end = await drive(
    stream,
    steps.map((s) => s.bytes),
    ending,
  );
  const note = `Produce ${ending}: ${steps.map((s) => `${s.kind}${s.atomic ? '(atomic)' : ''}`).join(', ')}`;

  if (ending === 'half-close') {
    assert.equal(end.code, status.OK, `${note}: ended ${end.details}`);
    assert.equal(answers.length, steps.length, `${note}: every message answered once`);
  } else {
    assert.ok([status.OK, status.CANCELLED].includes(end.code), `${note}: ended ${status[end.code]}`);
    assert.ok(answers.length <= steps.length, note);
  }
  assertShort(end.details, `${note}: the status`);
  for (const [k, answer] of answers.entries()) {
    assertShort(answer.message, `${note}: #${k}`);
    for (const r of answer.results)
      if (r.outcome?.$case === 'rejection')
        assertShort(r.outcome.value.message, `${note}: #${k} a job's rejection`);
    for (const r of answer.atomic?.rejections ?? [])
      assertShort(r.message, `${note}: #${k} an atomic rejection`);
    for (const r of answer.flow?.rejections ?? []) assertShort(r.message, `${note}: #${k} a flow rejection`);
  }
  const accepted = new Set<string>();
  const refused = new Set<string>();
  answers.forEach((answer, k) => {
    const step: ProduceStep = steps[k]!;
    assert.equal(answer.sequence, step.sequence, `${note}: answers in order`);
    assert.equal(answer.code, step.code, `${note}: #${k} ${step.kind}: ${answer.message}`);
    if (answer.code !== status.OK) {
      assert.ok(answer.message.length > 0, `${note}: #${k} says why`);
      for (const key of step.keys) refused.add(key);
      return;
    }
    if (step.flow || step.atomic) {
      // All or nothing: a flow's outcome (an id per job when committed) or an atomic batch's.
      const outcome = step.flow ? answer.flow : answer.atomic;
      const what = step.flow ? 'flow' : 'atomic';
      assert.equal(outcome?.committed, step.refusedJob < 0, `${note}: #${k} ${what}`);
      if (step.refusedJob >= 0) {
        assert.deepEqual(
          outcome?.rejections.map((r) => r.index),
          [step.refusedJob],
        );
      } else if (step.flow) assert.equal(answer.flow?.jobs.length, step.keys.length, `${note}: #${k} ids`);
      for (const key of step.keys) (outcome?.committed ? accepted : refused).add(key);
      return;
    }
    assert.equal(answer.results.length, step.keys.length, `${note}: #${k} one result per job`);
    answer.results.forEach((result, j) => {
      const ok = result.outcome?.$case === 'accepted';
      assert.equal(ok, j !== step.refusedJob, `${note}: #${k} job ${j}`);
      (ok ? accepted : refused).add(step.keys[j]!);
    });
  });
  for (const key of accepted) {
    assert.equal(
      (await t.server.engine.findJobByIdempotencyKey(queue, key))?.stored,
      true,
      `${note}: ${key} stored`,
    );
  }
  for (const key of refused) {
    if (accepted.has(key)) continue;
    assert.equal(
      await t.server.engine.findJobByIdempotencyKey(queue, key),
      null,
      `${note}: ${key} refused, not stored`,
    );
  }
  await cleanUp(queue);
}

/** The answer codes a settlement may get, from what the fuzzer knew when it wrote it. */
function allowedCodes(target: WorkStep['settlements'][number]['target']): status[] {
  switch (target.kind) {
    case 'not-an-id':
      return [status.INVALID_ARGUMENT];
    case 'unknown':
      return [status.NOT_FOUND];
    case 'foreign':
      // Another settlement in the sequence may have ended the lease first.
      return target.stale ? [status.FAILED_PRECONDITION, status.NOT_FOUND] : [status.OK, status.NOT_FOUND];
    case 'ours':
      // Leased to this stream by then, or not (yet, or any more).
      return [status.OK, status.NOT_FOUND];
  }
}

async function workRun(d: Draw, index: number, ending: Ending): Promise<void> {
  const queue = `fw${index}`;
  const engine = t.server.engine;
  const enqueued = await engine.enqueueBatch(
    Array.from({ length: d.int(1, 6) }, () => ({ queue, type: 't', payload: new Uint8Array() })),
  );
  const ids = enqueued.map((r) => (r.ok ? r.jobId : assert.fail('setup enqueue refused')));
  const leased = await engine.reserve({
    queues: [queue],
    maxJobs: d.int(0, 2),
    leaseMs: 60_000,
    waitMs: 0,
    workerId: 'other',
  });
  const foreign = leased.map((j) => ({ jobId: j.id, attempt: j.attempt }));
  const ours = ids.filter((id) => !foreign.some((f) => f.jobId === id));
  const steps = workSequence(d, { queue, ours, foreign });
  const stream = rawBidi(client, '/sepp.v1.QueueService/Work', (b) => WorkResponse.decode(b));
  const pushed: { jobId: string; attempt: number; queue: string }[] = [];
  const settled: WorkResponse_Settled[] = [];
  stream.on('data', (m: WorkResponse) => {
    if (m.kind?.$case === 'job') pushed.push(m.kind.value);
    if (m.kind?.$case === 'settled') settled.push(m.kind.value);
    if (m.kind?.$case === 'batch') {
      pushed.push(...m.kind.value.jobs);
      settled.push(...m.kind.value.settled);
    }
  });
  const end = await drive(
    stream,
    steps.map((s) => s.bytes),
    ending,
  );
  const note = `Work ${ending}: ${steps.map((s) => s.kind).join(', ')}`;

  const violating = steps.findIndex((s) => s.violation !== undefined);
  const processed = violating < 0 ? steps : steps.slice(0, violating);
  const expected = violating < 0 ? status.OK : steps[violating]!.violation!;
  if (ending === 'half-close') assert.equal(end.code, expected, `${note}: ended ${end.details}`);
  else
    assert.ok(
      [expected, status.CANCELLED].includes(end.code),
      `${note}: ended ${status[end.code]} ${end.details}`,
    );
  if (end.code !== status.OK && end.code !== status.CANCELLED) assert.ok(end.details.length > 0, note);
  assertShort(end.details, `${note}: the status`);
  for (const answer of settled) assertShort(answer.message, `${note}: the answer to ${answer.requestId}`);

  // Answers: at most once each, only for settlements the server took, each with an allowed code.
  const sent = new Map(processed.flatMap((s) => s.settlements).map((s) => [s.requestId, s]));
  const seen = new Set<number>();
  for (const answer of settled) {
    const settlement = sent.get(answer.requestId);
    assert.ok(settlement !== undefined, `${note}: answer to ${answer.requestId}, never sent or not taken`);
    assert.ok(!seen.has(answer.requestId), `${note}: ${answer.requestId} answered twice`);
    seen.add(answer.requestId);
    const allowed = allowedCodes(settlement.target);
    assert.ok(
      allowed.includes(answer.code),
      `${note}: ${settlement.op} ${settlement.target.kind} got ${status[answer.code]} ${answer.message}`,
    );
  }
  if (end.code === status.OK) assert.equal(seen.size, sent.size, `${note}: every settlement answered`);

  // Credit: never more jobs than granted; only this queue's jobs that nobody else holds, once each.
  const granted = processed.reduce((n, s) => n + s.credit, 0);
  assert.ok(pushed.length <= granted, `${note}: ${pushed.length} jobs pushed for ${granted} credit`);
  for (const job of pushed) {
    assert.ok(
      ours.includes(job.jobId) && job.queue === queue && job.attempt === 1,
      `${note}: pushed ${job.jobId}`,
    );
  }
  assert.equal(new Set(pushed.map((j) => j.jobId)).size, pushed.length, `${note}: a job pushed twice`);

  // Jobs are where the answers say.
  const named = new Set(processed.flatMap((s) => s.settlements.map((x) => x.target.jobId)));
  const okAnswers = settled.filter((a) => a.code === status.OK).map((a) => sent.get(a.requestId)!);
  for (const id of ids) {
    const state = await where(id);
    const isForeign = foreign.some((f) => f.jobId === id);
    const ended = okAnswers.filter((s) => s.target.jobId === id && s.op !== 'extend').map((s) => s.op);
    if (ended.includes('ack')) assert.equal(state, 'gone', `${note}: ${id} acked`);
    else if (ended.includes('nack')) assert.equal(state, 'scheduled', `${note}: ${id} nacked`);
    else if (end.code === status.OK || !named.has(id)) {
      const leasedHere = pushed.some((j) => j.jobId === id);
      // A stream that did not end cleanly may have leased jobs it never got to send: they stay leased.
      const wanted =
        isForeign || leasedHere ? ['leased:1'] : end.code === status.OK ? ['ready'] : ['ready', 'leased:1'];
      assert.ok(
        wanted.includes(state),
        `${note}: ${id} (${isForeign ? 'foreign' : leasedHere ? 'pushed' : 'not pushed'}) is ${state}`,
      );
    }
  }
  await cleanUp(queue);
}

/**
 * Removes a sequence's jobs and then its queue, so the database and the queue
 * registry stay small however many sequences run (100,000 in the long suite:
 * with a queue left behind per sequence, every listing grew with them and the
 * run did not finish). A cancelled stream's last settlements may still reach
 * the engine meanwhile (the client sees its own cancel at once): a job they
 * ack or nack first is not this clean-up's to settle.
 */
async function cleanUp(queue: string): Promise<void> {
  const engine = t.server.engine;
  /** Runs `op` (which may throw at once or reject); true when it succeeded, false on one of `codes`. */
  const tolerate = async (op: () => unknown, codes: string[]) => {
    try {
      await op();
      return true;
    } catch (error) {
      if (error instanceof SeppError && codes.includes(error.code)) return false;
      throw error;
    }
  };
  // A late settlement may put a job back (a nack schedules it again) after the purge: then again,
  // a few times, so that queues do not pile up against limits.max_queues over a long run.
  for (let round = 0; round < 5; round++) {
    for (;;) {
      // A sequence whose messages were all refused made no queue.
      if (!(await tolerate(() => engine.purgeQueue(queue), ['not_found']))) return;
      const page = await engine.listJobs({ queue, state: 'leased', pageSize: 100 });
      if (page.items.length === 0) break;
      for (const job of page.items) {
        await tolerate(
          () => engine.ack({ jobId: job.id, attempt: job.attempt }),
          ['not_found', 'failed_precondition'],
        );
      }
    }
    await engine.deleteDeadLetters({ queue, all: true });
    if (await tolerate(() => engine.deleteQueue(queue), ['failed_precondition'])) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  leftQueues++;
}

/** Queues cleanUp could not delete (a late settlement kept putting a job back). */
let leftQueues = 0;

/**
 * A stream the client cancelled may still have messages the server took before the cancel,
 * committed after the sequence's clean-up: then the queue comes back, and over a long run such
 * queues reach limits.max_queues (seed 1536504123 did at sequence 7688). Every 100 sequences the
 * queues of sequences at least 10 back are cleaned up again; a queue cleanUp cannot delete still
 * counts in leftQueues.
 */
let lateQueues = 0;
async function sweepLateQueues(index: number): Promise<void> {
  for (const { name } of await t.server.engine.listQueues()) {
    const made = /^f[pw](\d+)$/.exec(name);
    if (made === null || Number(made[1]) > index - 10) continue;
    lateQueues++;
    await cleanUp(name);
  }
}

test(`${runs} pipelined Produce and Work sequences (seed ${seed}): documented answers only, nothing stored from a rejection`, async () => {
  const tally = new Map<string, number>();
  const budget = new FuzzBudget(`stream fuzz (seed ${seed})`, runs, defaultRuns);
  for (let index = from; budget.more(); index++) {
    budget.cases++;
    const d = draw(mulberry32((seed + Math.imul(index, 0x9e3779b1)) >>> 0));
    const stream = d.chance(0.5) ? 'Produce' : 'Work';
    const ending = d.pick(endings);
    try {
      if (index % 100 === 99) await sweepLateQueues(index);
      if (ending !== 'half-close') await resets.take();
      if (stream === 'Produce') await produceRun(d, index, ending);
      else await workRun(d, index, ending);
      assert.deepEqual(escaped, [], 'nothing escaped a handler');
      assert.deepEqual(await t.server.engine.counterMismatches(), [], 'counters = rows');
      const info = await call(client, client.getServerInfo, {}, new Metadata(), {
        deadline: Date.now() + 30_000,
      });
      assert.equal(info.version, '0.0.0-test', 'alive');
    } catch (error) {
      if (process.env.SEPP_FUZZ_DEBUG) console.log(error);
      const replay = `SEPP_FUZZ_SEED=${seed} SEPP_FUZZ_FROM=${index} SEPP_STREAM_FUZZ_RUNS=1 node scripts/run-tests.mjs stream-fuzz`;
      throw new Error(
        `sequence ${index} failed; replay it alone with:\n  ${replay}\n${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    tally.set(`${stream} ${ending}`, (tally.get(`${stream} ${ending}`) ?? 0) + 1);
  }
  budget.finish(
    `: ${[...tally].map(([k, n]) => `${k}=${n}`).join(', ')}; ${leftQueues} queues left behind, ${lateQueues} cleaned up late; ` +
      `${resets.taken} cancelled on one connection, ${(resets.waitedMs / 1000).toFixed(1)} s waited for the reset bound`,
  );
});

test('every string, list and map field of Produce, Work and Events requests, oversize: each stream ends, every message at most 1 KiB', async () => {
  const cases = oversizeCases({ stringLength: fuzzStringLength, listItems: 1000, queue: 'oversize' }).filter(
    (c) => c.requestStream || c.method === 'Events',
  );
  assert.ok(cases.length > 30, `${cases.length} cases`);
  const longest = await checkOversizeAnswers(t.client, cases);
  console.log(
    `oversize: ${cases.length} stream cases, the longest message ${longest.bytes} bytes (${longest.what})`,
  );
  assert.deepEqual(escaped, [], 'nothing escaped a handler');
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});

// ------------------------------------------------- answers that grow with stored data

/**
 * Enqueues jobs of 256 KiB to 1 MiB in the big queue: 2 to max_reserve_jobs of
 * them, or with `overflow` 6 to 8 of at least 768 KiB — more than one 4 MiB message.
 */
async function enqueueLargeJobs(d: Draw, overflow: boolean): Promise<string[]> {
  const count = overflow ? d.int(6, fuzzLimits.maxReserveJobs) : d.int(2, fuzzLimits.maxReserveJobs);
  const smallest = overflow ? 768 * 1024 : 256 * 1024;
  const results = await t.server.engine.enqueueBatch(
    Array.from({ length: count }, () => ({
      queue: bigQueue.name,
      type: 't',
      payload: new Uint8Array(d.int(smallest, bigQueue.maxPayloadBytes)),
    })),
  );
  return results.map((r) => (r.ok ? r.jobId : assert.fail(`a large job refused: ${r.message}`)));
}

/** The ids of the big queue's leased jobs, sorted. */
async function leasedInBigQueue(): Promise<string[]> {
  const page = await t.server.engine.listJobs({ queue: bigQueue.name, state: 'leased', pageSize: 100 });
  return page.items.map((j) => j.id).sort();
}

test('large jobs × credit on a Work stream: every job it leases reaches the client, each message within 4 MiB (issue 29, item 2)', async () => {
  const d = draw(mulberry32((seed ^ 0x29_02) >>> 0));
  const encode = (m: WorkRequest) => Buffer.from(WorkRequest.encode(m).finish());
  for (let round = 0; round < 4; round++) {
    const ids = await enqueueLargeJobs(d, round % 2 === 0);
    const stream = rawBidi(t.client, '/sepp.v1.QueueService/Work', (b) => WorkResponse.decode(b));
    const ended = new Promise<End>((resolve) => {
      stream.on('status', (s: End) => resolve({ code: s.code, details: s.details }));
      stream.on('error', (e: ServiceError) => resolve({ code: e.code, details: e.details }));
    });
    const pushed: string[] = [];
    // The client's default limit, 4 MiB a message, is what decodes these: a larger one ends the stream.
    const allPushed = new Promise<void>((resolve) => {
      stream.on('data', (m: WorkResponse) => {
        if (m.kind?.$case === 'job') pushed.push(m.kind.value.jobId);
        if (m.kind?.$case === 'batch') pushed.push(...m.kind.value.jobs.map((j) => j.jobId));
        if (pushed.length >= ids.length) resolve();
      });
    });
    const batchResponses = d.chance(0.5);
    stream.write(
      encode({
        requestId: 0,
        kind: {
          $case: 'subscribe',
          value: { queues: [bigQueue.name], leaseDurationMs: 60_000, workerId: 'large', batchResponses },
        },
      }),
    );
    stream.write(
      encode({ requestId: 0, kind: { $case: 'credit', value: { jobs: fuzzLimits.maxReserveJobs } } }),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 30_000);
    });
    await Promise.race([allPushed, ended, late]);
    clearTimeout(timer);
    // Half-closed once the jobs are in (a half-close ends the stream at once, credit or not).
    stream.end();
    const end = await ended;
    const note = `round ${round}: ${ids.length} jobs (batch responses ${batchResponses})`;
    assert.equal(end.code, status.OK, `${note}: the stream ended ${status[end.code]} ${end.details}`);
    assertShort(end.details, `${note}: the status`);
    assert.deepEqual([...pushed].sort(), [...ids].sort(), `${note}: every job pushed once`);
    assert.deepEqual(await leasedInBigQueue(), [...ids].sort(), `${note}: leased = pushed`);
    await cleanUp(bigQueue.name);
  }
});

test('unary Reserve of large jobs × max_jobs: it answers with the jobs that fit and leases no other (issue 29, item 2)', async () => {
  const d = draw(mulberry32((seed ^ 0x29_22) >>> 0));
  try {
    for (let round = 0; round < 4; round++) {
      const ids = await enqueueLargeJobs(d, round % 2 === 0);
      const note = `round ${round}: ${ids.length} jobs of ${bigQueue.name}, max_jobs ${fuzzLimits.maxReserveJobs}`;
      let answer: string[];
      try {
        const { jobs } = await call(t.client, t.client.reserve, {
          maxResponseBytes: 0,
          queues: [bigQueue.name],
          maxJobs: fuzzLimits.maxReserveJobs,
          leaseDurationMs: 60_000,
          waitTimeoutMs: 0,
          workerId: 'large',
        });
        answer = jobs.map((j) => j.jobId).sort();
      } catch (error) {
        const { code, details } = error as ServiceError;
        assertShort(details, `${note}: the status`);
        return assert.fail(
          `${note}: Reserve answered ${status[code]} (${details}), ${(await leasedInBigQueue()).length} jobs left leased`,
        );
      }
      assert.ok(answer.length > 0, `${note}: a job that fits is answered`);
      assert.deepEqual(await leasedInBigQueue(), answer, `${note}: leased = answered`);
      await cleanUp(bigQueue.name);
    }
  } finally {
    await cleanUp(bigQueue.name);
  }
});

test('a caller cannot create queues without bound: past limits.max_queues a job for a new queue is refused, and ListQueues still answers (issue 29, item 3)', async () => {
  // A server of its own, as the fuzzer's is configured: it goes with its thousand queues,
  // where cleaning them up one by one (purge, dead letters, delete) cost more than the flood.
  const flood = await startTestServer({ clock: new FakeClock(), toml: fuzzToml });
  const { limits } = await call(flood.client, flood.client.getServerInfo, {});
  const maxQueues = limits?.maxQueues;
  const flooded = (maxQueues ?? 1000) + 2 * fuzzLimits.maxBatchJobs;
  const queues = Array.from({ length: flooded }, (_, i) => `flood-${i}`);
  const stream = rawBidi(flood.client, '/sepp.v1.QueueService/Produce', (b) => ProduceResponse.decode(b));
  const answers: ProduceResponse[] = [];
  stream.on('data', (a: ProduceResponse) => answers.push(a));
  const messages: Buffer[] = [];
  for (let i = 0; i < queues.length; i += fuzzLimits.maxBatchJobs) {
    const jobs = queues.slice(i, i + fuzzLimits.maxBatchJobs).map((queue) => testJob(queue));
    messages.push(
      Buffer.from(ProduceRequest.encode({ sequence: messages.length + 1, jobs, atomic: false }).finish()),
    );
  }
  try {
    // ~1,100 jobs for as many new queues, each a queue made: at load 37 (2026-12-06) it ran past
    // 30 s once. A hang is what the bound catches, and this stream is slow, not hung.
    const end = await drive(stream, messages, 'half-close', 120_000);
    assert.equal(end.code, status.OK, `the Produce stream ended ${status[end.code]} ${end.details}`);
    const rejections = answers.flatMap((a) =>
      a.results.flatMap((r) => (r.outcome?.$case === 'rejection' ? [r.outcome.value] : [])),
    );
    for (const r of rejections) assertShort(r.message, 'a rejection');
    for (const a of answers) assertShort(a.message, 'an answer');
    const queueCount = (await flood.server.engine.listQueues()).length;
    assert.ok(
      maxQueues !== undefined,
      `GetServerInfo states no max_queues limit: ${flooded} new queues, ${rejections.length} jobs refused, ` +
        `${queueCount} queues`,
    );
    assert.ok(queueCount <= maxQueues, 'no more queues than max_queues');
    // Refused job by job, or whole messages with RESOURCE_EXHAUSTED: either way the answer names the limit.
    const refusals = [
      ...rejections.map((r) => r.message),
      ...answers.filter((a) => a.code === status.RESOURCE_EXHAUSTED).map((a) => a.message),
    ];
    assert.ok(
      refusals.some((message) => message.includes('max_queues')),
      `a job for a queue past the limit is refused naming max_queues: ${refusals[0]}`,
    );
    // However many queues there are, the listing fits the client's 4 MiB (bounded, paged).
    await call(flood.client, flood.client.listQueues, { pageSize: 0, pageToken: '' });
  } finally {
    await flood.dispose();
  }
});
