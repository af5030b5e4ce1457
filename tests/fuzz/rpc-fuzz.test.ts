/**
 * Fuzzes every unary RPC with random bytes and with mutated valid messages
 * (huge and negative numbers, empty and over-long strings, invalid UTF-8,
 * deep maps), and every string, list and map field of every request made
 * oversize in turn (a 64 KiB name, 256 KiB in
 * `npm run test:long`; a thousand entries). Promises: no crash,
 * no hang (every call answers within its deadline), every answer a
 * documented status with a message of at most 1 KiB, and nothing stored from
 * a rejected request. SEPP_FUZZ_RUNS sets the number of cases
 * (default 1,500 in CI; `npm run test:long` uses 100,000) and SEPP_FUZZ_SECONDS
 * a time box per loop (tests/helpers/fuzz-budget.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { FuzzBudget } from '../helpers/fuzz-budget.ts';
import { rawUnary } from '../helpers/raw-grpc.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const defaultRuns = 1500;
const runs = Number(process.env.SEPP_FUZZ_RUNS ?? defaultRuns);
/** Replays a failure: SEPP_FUZZ_SEED and SEPP_FUZZ_PATH from fast-check's report. */
const replay =
  process.env.SEPP_FUZZ_SEED === undefined
    ? {}
    : {
        seed: Number(process.env.SEPP_FUZZ_SEED),
        ...(process.env.SEPP_FUZZ_PATH === undefined ? {} : { path: process.env.SEPP_FUZZ_PATH }),
      };
const documented = new Set([
  status.OK,
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.FAILED_PRECONDITION,
  status.RESOURCE_EXHAUSTED,
]);
const unary = Object.values(QueueServiceService).filter((m) => !m.requestStream && !m.responseStream);
const enqueuePaths = new Set([
  '/sepp.v1.QueueService/Enqueue',
  '/sepp.v1.QueueService/EnqueueBatch',
  '/sepp.v1.QueueService/EnqueueAtomic',
]);

let t: TestServer;
before(async () => {
  // `typed` refuses every type but its own thousand: its refusal must not list them all.
  const types = Array.from({ length: 1000 }, (_, i) => `"type-${i}-${'x'.repeat(40)}"`).join(', ');
  t = await startTestServer({
    // Relaxed: no fsync per commit; what a fuzzer checks is the answers, not durability.
    toml: `[server]\ndurability = "relaxed"\n[limits]\nmax_wait_ms = 0\n[queues.typed]\nallowed_types = [${types}]\n`,
  });
});
after(() => t.dispose());

const raw = (path: string, bytes: Buffer) => rawUnary(t.client, path, bytes);

/**
 * Every job stored, whatever its state: leases taken by fuzzed reserves expire on the
 * real clock and move their jobs back to ready (or dead) at any moment, so a count of
 * some states only would change under a rejected request. Nothing here deletes a job.
 */
const totalJobs = async () =>
  (await t.server.engine.listQueues()).reduce(
    (n, q) => n + Object.values(q.counts).reduce((sum, jobs) => sum + jobs, 0),
    0,
  );

/** Protobuf-ish bytes: random tags with varints, length-delimited fields (nested, UTF-8 or not), fixed ints. */
const field = fc.letrec((tie) => ({
  field: fc.oneof(
    { depthSize: 'small' },
    fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }))
      .map(([n, v]) => encodeVarintField(n, v)),
    fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.uint8Array({ maxLength: 64 }))
      .map(([n, b]) => encodeBytesField(n, Buffer.from(b))),
    fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.string({ maxLength: 300, unit: 'binary' }))
      .map(([n, s]) => encodeBytesField(n, Buffer.from(s))),
    fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.array(tie('field'), { maxLength: 4 }))
      .map(([n, fs]) => encodeBytesField(n, Buffer.concat(fs as Buffer[]))),
  ),
})).field as fc.Arbitrary<Buffer>;

function varint(value: bigint): Buffer {
  let v = BigInt.asUintN(64, value);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
}
function encodeVarintField(n: number, v: bigint): Buffer {
  return Buffer.concat([varint(BigInt(n << 3)), varint(v)]);
}
function encodeBytesField(n: number, bytes: Buffer): Buffer {
  return Buffer.concat([varint(BigInt((n << 3) | 2)), varint(BigInt(bytes.length)), bytes]);
}

test(`${runs} fuzzed unary calls: documented statuses only, nothing stored from a rejection`, async () => {
  const seen = new Map<status, number>();
  const budget = new FuzzBudget('unary fuzz', runs, defaultRuns);
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...unary),
      fc.oneof(
        fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
        fc.array(field, { maxLength: 6 }).map((fs) => Buffer.concat(fs)),
      ),
      async (method, bytes) => {
        budget.cases++;
        // The count is read only where the assertion below needs it: a rejected enqueue.
        const before = enqueuePaths.has(method.path) ? await totalJobs() : 0;
        const answer = await raw(method.path, bytes);
        seen.set(answer.code, (seen.get(answer.code) ?? 0) + 1);
        assert.ok(
          documented.has(answer.code),
          `${method.path} answered ${status[answer.code]}: ${answer.details}`,
        );
        if (answer.code !== status.OK) {
          assert.ok(answer.details.length > 0, `${method.path} ${status[answer.code]} without a message`);
          if (enqueuePaths.has(method.path))
            assert.equal(await totalJobs(), before, 'a rejected enqueue stored nothing');
        }
      },
    ),
    { ...budget.fastCheck, includeErrorInReport: true, ...replay },
  );
  budget.finish(`, statuses ${[...seen].map(([c, n]) => `${status[c]}=${n}`).join(' ')}`);
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});

test(`${runs} mutated valid messages: limits hold, rejections are typed, counters stay true`, async () => {
  const { call } = await import('../helpers/server.ts');
  const text = fc.oneof(
    fc.constantFrom('', 'q', 'emails', 'a'.repeat(129), 'bad name', 'ü', '../etc', '\u0000'),
    fc.string({ maxLength: 40 }),
  );
  const number = fc.oneof(
    fc.integer({ min: -10, max: 20 }),
    fc.constantFrom(0, -1, 2 ** 31 - 1, -(2 ** 31), Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
  );
  const job = fc.record({
    queue: text,
    type: text,
    payload: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    contentType: fc.oneof(text, fc.constant('application/json')),
    priority: number,
    schedule: fc.oneof(
      fc.constant(undefined),
      number.map((value) => ({ $case: 'runAtMs' as const, value })),
      number.map((value) => ({ $case: 'delayMs' as const, value: value * 86_400_000 })),
    ),
    maxAttempts: number,
    idempotencyKey: fc.oneof(text, fc.constant('k'.repeat(300))),
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 600 }), { maxKeys: 70 }),
    traceparent: fc.oneof(text, fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')),
    tracestate: text,
    expiry: fc.oneof(
      fc.constant(undefined),
      number.map((value) => ({ $case: 'expiresAtMs' as const, value })),
      number.map((value) => ({ $case: 'ttlMs' as const, value: value * 1000 })),
    ),
    uniqueWhileActive: fc.boolean(),
    group: fc.oneof(text, fc.constant('tenant-1'), fc.constant('g'.repeat(200))),
    dependsOn: fc.array(text, { maxLength: 3 }),
    onDependencyFailure: fc.integer({ min: 0, max: 5 }),
    timeoutMs: fc.integer({ min: -1, max: 3_000_000_000 }),
    debounceKey: fc.oneof(fc.constant(''), fc.constant('doc'), text),
    debounceMs: fc.integer({ min: -1, max: 40_000_000_000 }),
    debounceMaxMs: fc.integer({ min: -1, max: 40_000_000_000 }),
  });
  // A payload one byte over the default max_payload_bytes (1 MiB), shared by the jobs that carry it.
  const overLimit = Buffer.alloc(1024 * 1024 + 1);
  // Oversize payloads come in one batch of four, then in half its jobs; and five of them in one
  // batch of ~160: past grpc.max_message_bytes (4 MiB + 64 KiB), refused whole. Every job of
  // every batch had a half chance before: ~1,000 payloads of 1 MiB a run (~4 batches past the
  // message limit), most of this loop's CPU (encoded, sent, decoded); now ~250 in ~140 batches,
  // 2-10 past the limit (the report line counts both).
  const jobs = (minLength: number) =>
    fc.oneof(
      { weight: 120, arbitrary: fc.array(job, { minLength, maxLength: 5 }) },
      {
        weight: 40,
        arbitrary: fc
          .array(fc.tuple(job, fc.boolean()), { minLength, maxLength: 5 })
          .map((drawn) => drawn.map(([j, over]) => (over ? { ...j, payload: overLimit } : j))),
      },
      {
        weight: 1,
        arbitrary: fc
          .array(job, { minLength: 5, maxLength: 5 })
          .map((five) => five.map((j) => ({ ...j, payload: overLimit }))),
      },
    );
  const request = fc.oneof(
    jobs(0).map((jobs) => ({ kind: 'batch' as const, jobs })),
    jobs(1).map((jobs) => ({ kind: 'atomic' as const, jobs })),
    fc
      .record({
        queues: fc.array(text, { maxLength: 70 }),
        maxJobs: number,
        leaseDurationMs: number,
        waitTimeoutMs: number,
        workerId: text,
        maxResponseBytes: number,
      })
      .map((r) => ({ kind: 'reserve' as const, r })),
    fc
      .record({
        jobId: fc.oneof(text, fc.uuid()),
        attempt: number,
        errorMessage: fc.string({ maxLength: 10_000 }),
      })
      .map((r) => ({ kind: 'nack' as const, r })),
  );
  const c = t.client;
  const budget = new FuzzBudget('mutated messages', runs, defaultRuns);
  let oversize = 0;
  let pastMessageLimit = 0;
  await fc.assert(
    fc.asyncProperty(request, async (req) => {
      budget.cases++;
      if (req.kind === 'batch' || req.kind === 'atomic') {
        const over = req.jobs.filter((j) => j.payload === overLimit).length;
        if (over > 0) oversize++;
        if (over === 5) pastMessageLimit++;
      }
      // The count is read only where an assertion below needs it: a batch or an atomic batch.
      const before = req.kind === 'batch' || req.kind === 'atomic' ? await totalJobs() : 0;
      const outcome = await (async () => {
        switch (req.kind) {
          case 'batch':
            return call(c, c.enqueueBatch, { jobs: req.jobs });
          case 'atomic':
            return call(c, c.enqueueAtomic, { jobs: req.jobs });
          case 'reserve':
            return call(c, c.reserve, req.r);
          case 'nack':
            return call(c, c.nack, { ...req.r, directive: undefined, errorClass: '', errorStack: '' });
        }
      })().then(
        (response) => ({ code: status.OK, details: '', response }),
        (e: ServiceError) => ({ code: e.code, details: e.details, response: undefined }),
      );
      // Values the client cannot encode (an int32 field given 2^53) never reach the server.
      if (outcome.details.startsWith('Request message serialization failure')) return;
      assert.ok(
        documented.has(outcome.code),
        `${req.kind} answered ${status[outcome.code]}: ${outcome.details}`,
      );
      if (
        req.kind === 'atomic' &&
        outcome.response &&
        'committed' in outcome.response &&
        !outcome.response.committed
      ) {
        assert.equal(
          await totalJobs(),
          before,
          `a failed atomic batch stored nothing: ${JSON.stringify(outcome.response.rejections)}`,
        );
        assert.ok(outcome.response.rejections.length > 0);
      }
      if (req.kind === 'batch' && outcome.code !== status.OK) assert.equal(await totalJobs(), before);
    }),
    { ...budget.fastCheck, includeErrorInReport: true, ...replay },
  );
  budget.finish(`, ${oversize} batches with an oversize payload, ${pastMessageLimit} of five`);
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});

test('every string, list and map field of every unary request, oversize: each call answers, every message at most 1 KiB', async () => {
  const { checkOversizeAnswers, fuzzStringLength, oversizeCases } = await import('../helpers/oversize.ts');
  const cases = ['q', 'typed'].flatMap((queue) =>
    oversizeCases({ stringLength: fuzzStringLength, listItems: 1000, queue }).filter(
      (c) => !c.requestStream && c.method !== 'Events',
    ),
  );
  assert.ok(cases.length > 100, `${cases.length} cases`);
  const longest = await checkOversizeAnswers(t.client, cases);
  console.log(
    `oversize: ${cases.length} unary cases, the longest message ${longest.bytes} bytes (${longest.what})`,
  );
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});
