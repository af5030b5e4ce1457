/**
 * Fuzzes the HTTP/JSON API of the real server over real sockets, with the
 * admin fuzz's rules: every operation of its OpenAPI document, with every
 * kind of credential, gets bodies of every shape (the documented fields with
 * values of any type, unknown fields, broken and deeply nested JSON, invalid
 * UTF-8, huge strings), every content type, other methods, junk path
 * parameters and query values; raw sockets send broken framing.
 *
 * Promises: no crash, no hang (every request answers within a bound), every
 * answer a documented status, every refusal the one JSON error shape with
 * the status its code maps to, no stack trace or key in any body, nothing
 * stored from a refused request, every message in an answer at most 1 KiB
 * (issue 29, item 6), and the server healthy at the end (its counters agree
 * with its rows). Then the answers that grow with stored data (issue 29): a
 * reserve of large jobs × maxJobs leases only what it answers (item 2), and a
 * caller cannot create queues without bound (item 3). SEPP_FUZZ_RUNS sets the
 * number of cases (default 800; `npm run test:long` uses 100,000) and
 * SEPP_FUZZ_SECONDS a time box per loop (tests/helpers/fuzz-budget.ts).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { requestTooLargeStatus } from '../../src/api-schema/error-status.ts';
import { messageBytesMax } from '../../src/config/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { type HttpErrorCode, httpStatusOf } from '../../src/http/errors.ts';
import { keys, keysToml } from '../helpers/access-table.ts';
import { FuzzBudget } from '../helpers/fuzz-budget.ts';
import { casesOfRoutes } from '../helpers/fuzz-routes.ts';
import { sendRaw } from '../helpers/http-raw.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const defaultRuns = 800;
const runs = Number(process.env.SEPP_FUZZ_RUNS ?? defaultRuns);
/** A queue whose jobs may be large (issue 29, item 2): a few of them make an answer of several MiB. */
const bigQueue = { name: 'big', maxPayloadBytes: 1024 * 1024 };
/** Strings are capped at 1 Mi characters (json-input.ts), base64 payloads not: 768 KiB is that cap's payload. */
const base64PayloadBytesMax = 768 * 1024;
const answerBoundMs = 5000;
const documented = new Set([200, ...Object.values(httpStatusOf).filter((status) => status !== 500)]);

interface Route {
  method: string;
  path: string;
  operationId: string;
  query: string[];
  bodyFields: string[];
}

let t: TestServer;
let port: number;
let routes: Route[];
const jobIds: string[] = [];
const batchIds: string[] = [];

before(async () => {
  t = await startTestServer({
    http: true,
    // Time stands still: no lease expires and no retry comes due between a request and its check.
    clock: new FakeClock(Date.now()),
    // No long waits: every long-poll and outcome wait answers at once.
    toml:
      `${keysToml}[server]\ndurability = "relaxed"\n[limits]\nmax_wait_ms = 0\n` +
      `[queues.fz]\nmax_payload_bytes = "4KiB"\n` +
      `[queues.${bigQueue.name}]\nmax_payload_bytes = ${bigQueue.maxPayloadBytes}\n`,
  });
  port = Number(new URL(t.httpUrl).port);
  const { engine } = t.server;
  for (let i = 0; i < 20; i++) {
    const { jobId } = await engine.enqueue({
      queue: i % 2 === 0 ? 'fz' : 'other',
      type: 'welcome',
      payload: Buffer.from(`{"i":${i}}`),
      contentType: 'application/json',
    });
    jobIds.push(jobId);
  }
  await engine.reserve({ queues: ['fz'], maxJobs: 5 });
  // An open batch and a sealed one, so that /v1/batches/{batchId}… meets real ids too (issue 33).
  for (const seal of [false, true]) {
    const { batch } = await engine.createBatch({
      jobs: [{ queue: 'fz', type: 'member', payload: Buffer.from('{}'), contentType: 'application/json' }],
      seal,
    });
    batchIds.push(batch.id);
  }
  const doc = (await send({ method: 'GET', target: '/v1/openapi.json', headers: {} })).body;
  routes = openApiRoutes(JSON.parse(doc) as OpenApiDoc);
  assert.equal(routes.length, 24, 'every operation of the document (15, and 9 of workflows)');
});

after(() => t?.dispose());

interface OpenApiDoc {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        parameters?: { name: string; in: string }[];
        requestBody?: {
          content: {
            'application/json': { schema: { properties?: Record<string, unknown>; $ref?: string } };
          };
        };
      }
    >
  >;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
}

function openApiRoutes(doc: OpenApiDoc): Route[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, op]) => {
      const schema = op.requestBody?.content['application/json'].schema;
      const resolved =
        schema?.$ref === undefined ? schema : doc.components.schemas[schema.$ref.split('/').pop() ?? ''];
      return {
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        bodyFields: Object.keys(resolved?.properties ?? {}),
      };
    }),
  );
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  timedOut: boolean;
}

/** One request; an event stream counts as answered once its head arrives (it is then closed). */
function send(req: {
  method: string;
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
}): Promise<Answer> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      outgoing.destroy();
      resolve({ status: 0, headers: {}, body: '', timedOut: true });
    }, answerBoundMs);
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.target,
        headers: {
          ...(req.body === undefined ? {} : { 'content-length': String(req.body.length) }),
          ...req.headers,
        },
        agent: false,
      },
      (res) => {
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '', timedOut: false });
          outgoing.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
            timedOut: false,
          });
        });
        res.on('error', () => {});
      },
    );
    outgoing.on('error', () => {});
    outgoing.end(req.body);
  });
}

// --- What the server holds, to check that a refusal stored nothing. ---

async function snapshot(): Promise<string> {
  const { engine } = t.server;
  const queues = (await engine.listQueues()).map((q) => [q.name, q.paused, q.counts]);
  const audit = (await engine.listAudit({ pageSize: 1 })).items[0]?.id ?? 0;
  return JSON.stringify({ queues, audit });
}

const stackTrace = /\n\s+at |node:internal|\.[cm]?[jt]s:\d+|\bsrc\/(http|engine|store)\//;

/** Every `message` in a JSON answer (an error's, a rejected job's) is at most 1 KiB (issue 29, item 6). */
function checkMessages(what: string, value: unknown): void {
  if (Array.isArray(value)) for (const item of value) checkMessages(what, item);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, field] of Object.entries(value)) {
      if (key === 'message' && typeof field === 'string') {
        const bytes = Buffer.byteLength(field);
        assert.ok(bytes <= messageBytesMax, `${what}: a message of ${bytes} bytes: ${field.slice(0, 200)}…`);
      } else checkMessages(what, field);
    }
  }
}

function checkAnswer(what: string, answer: Answer): void {
  assert.ok(!answer.timedOut, `${what}: no answer within ${answerBoundMs} ms`);
  assert.ok(documented.has(answer.status), `${what}: undocumented status ${answer.status}: ${answer.body}`);
  assert.doesNotMatch(answer.body, stackTrace, `${what}: a stack trace or path in the answer`);
  for (const key of Object.values(keys))
    assert.ok(!answer.body.includes(key), `${what}: a key in the answer`);
  if (String(answer.headers['content-type']).startsWith('application/json') && answer.body !== '')
    checkMessages(what, JSON.parse(answer.body));
  if (answer.status >= 400) {
    assert.match(String(answer.headers['content-type']), /^application\/json/, `${what}: ${answer.body}`);
    const body = JSON.parse(answer.body) as { error?: { code?: unknown; message?: unknown } };
    const code = String(body.error?.code);
    // The table's status, or 413 for a resource_exhausted request over a per-call limit.
    const overCallLimit = code === 'resource_exhausted' && answer.status === requestTooLargeStatus;
    assert.equal(
      overCallLimit ? requestTooLargeStatus : httpStatusOf[code as HttpErrorCode],
      answer.status,
      `${what}: code ${code} with status ${answer.status}`,
    );
    if (overCallLimit) assert.equal(answer.headers['retry-after'], undefined, what);
    assert.ok(
      typeof body.error?.message === 'string' && body.error.message.length > 0,
      `${what}: no message`,
    );
    if (answer.status === 429 || answer.status === 503)
      assert.equal(answer.headers['retry-after'], '1', what);
  }
}

// --- Generators. ---

const nasty = [
  '',
  '..',
  '%2e%2e',
  '%2f',
  '%00',
  '%ff',
  'not-a-uuid',
  '01890F6E-7C3A-7000-8000-000000000000',
  '01890f6e-7c3a-7000-8000-000000000000',
  'x'.repeat(300),
  '__proto__',
  'constructor',
];

const jsonScalar = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    1,
    9,
    10,
    1000,
    2 ** 31,
    2 ** 53,
    -(2 ** 53),
    1e308,
    0.5,
    true,
    false,
    null,
    '',
    'fz',
    'other',
    'welcome',
    '1',
    '-5',
    '99999999999999999999',
    'AAE=',
    'not*base64',
    'application/json',
    'text/plain',
    '\u0000',
    '\ud800',
    'x'.repeat(70_000),
  ),
  fc.string({ maxLength: 40 }),
  fc.integer(),
  fc.double(),
);

const jsonValue = () =>
  fc.oneof(
    { weight: 4, arbitrary: jsonScalar },
    fc.array(jsonScalar, { maxLength: 4 }),
    fc.array(fc.constantFrom(...jobIds, 'fz', 'other'), { minLength: 1, maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 8 }), jsonScalar, { maxKeys: 4 }),
    fc.array(
      fc.record(
        {
          queue: fc.constantFrom('fz', 'other', ''),
          type: fc.constantFrom('t', ''),
          jobId: fc.constantFrom(...jobIds),
          attempt: jsonScalar,
        },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    ),
    fc.constant(JSON.parse('{"__proto__":{"admin":true},"constructor":"x"}') as unknown),
  );

const body = (route: Route) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 6,
      arbitrary: fc
        .record(Object.fromEntries(route.bodyFields.map((k) => [k, jsonValue()])), { requiredKeys: [] })
        .chain((fields) =>
          fc
            .dictionary(fc.string({ maxLength: 10 }), jsonValue(), { maxKeys: 1 })
            .map((extra) => ({ ...extra, ...fields })),
        )
        .map((value) => Buffer.from(JSON.stringify(value))),
    },
    fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')),
    fc
      .tuple(fc.json({ maxDepth: 2 }), fc.nat())
      .map(([text, cut]) => Buffer.from(text.slice(0, cut % (text.length + 1)))),
    fc
      .constantFrom(
        '{',
        '{"a":}',
        'nul',
        '[1,2',
        "{'a':1}",
        '\ufeff{}',
        '[]',
        '"x"',
        '1e999',
        '{"payload":1e400}',
      )
      .map((s) => Buffer.from(s)),
    fc.constant(Buffer.from('['.repeat(100_000))),
    fc.constant(Buffer.from(`{"queues":[${'"x",'.repeat(5000)}"x"]}`)),
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
    fc.constant(Buffer.from([0x7b, 0x22, 0x71, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d])),
  );

const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/jsonx',
);
const credential = fc.constantFrom('none', 'producer', 'worker', 'admin', 'admin', 'bogus', 'garbled', 'two');
const method = (route: Route) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(route.method) },
    fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS'),
  );
const queryValue = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '-1',
    '1.5',
    'true',
    'false',
    'yes',
    '99999999999999999999',
    'fz',
    'fz,other',
    'enqueued',
    'bogus',
    'abc:1',
    `${'f'.repeat(16)}:0`,
  ),
  fc.constantFrom(...nasty),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);

interface Case {
  route: Route;
  method: string;
  target: string;
  credential: string;
  contentType: string | undefined;
  lastEventId: string | undefined;
  body: Buffer | undefined;
}

const fuzzCase: fc.Arbitrary<Case> = casesOfRoutes(() => routes, caseOf);

function caseOf(route: Route): fc.Arbitrary<Case> {
  // Every path parameter ({jobId}, {batchId}) gets a stored id of either kind, or a nasty one.
  const path = fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(...jobIds) },
      { weight: 2, arbitrary: fc.constantFrom(...batchIds) },
      fc.constantFrom(...nasty),
    )
    .map((id) => route.path.replace(/\{\w+\}/g, id));
  const query = fc
    .array(fc.tuple(fc.constantFrom(...route.query, 'junk'), queryValue), { maxLength: 3 })
    .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));
  return fc.record({
    route: fc.constant(route),
    method: method(route),
    target: fc.tuple(path, query).map(([p, q]) => p + q),
    credential,
    contentType,
    lastEventId: fc.option(queryValue, { nil: undefined }),
    body: body(route),
  });
}

function headersOf(c: Case): Record<string, string> {
  const headers: Record<string, string> = {};
  const key = { producer: keys.producer, worker: keys.worker, admin: keys.admin }[c.credential];
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (c.credential === 'bogus') headers.authorization = `Bearer ${keys.unknown}`;
  if (c.credential === 'garbled') headers.authorization = 'Bearer \u00ff\u00fe x';
  if (c.contentType !== undefined) headers['content-type'] = c.contentType;
  // Header values must be visible ASCII for Node's client; the query's encoded form is that.
  if (c.lastEventId !== undefined) headers['last-event-id'] = c.lastEventId;
  return headers;
}

test(`${runs} fuzzed HTTP API requests: documented answers, nothing stored from a refusal`, async () => {
  const byStatus = new Map<number, number>();
  const byRoute = new Map<string, number>();
  const budget = new FuzzBudget('http fuzz', runs, defaultRuns);
  // What a refusal was checked against is the next case's "before": the server's clock is a
  // FakeClock nothing here moves, so between two cases nothing changes but what a request
  // did (a snapshot reads every queue's counts: it was a third of the loop's CPU).
  let unchanged: string | undefined;
  await fc.assert(
    fc.asyncProperty(fuzzCase, async (c) => {
      budget.cases++;
      const before = unchanged ?? (await snapshot());
      unchanged = undefined;
      const headers = headersOf(c);
      if (c.credential === 'two') headers.authorization = `Bearer ${keys.admin}`;
      const answer = await send({
        method: c.method,
        target: c.target,
        headers,
        ...(c.body === undefined || c.method === 'GET' || c.method === 'HEAD' ? {} : { body: c.body }),
      });
      const what = `${c.method} ${c.target.slice(0, 200)} as ${c.credential} (${c.contentType}): ${c.body?.subarray(0, 200).toString()}`;
      if (c.method === 'HEAD') assert.ok(!answer.timedOut && documented.has(answer.status), what);
      else checkAnswer(what, answer);
      byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
      byRoute.set(c.route.operationId, (byRoute.get(c.route.operationId) ?? 0) + 1);
      // A refused ack or extend of a job whose cancel was asked for ends it cancelled (the
      // engine's documented rule for job_cancelled): the one refusal that changes a job.
      const cancelled = answer.status === 409 && answer.body.includes('"job_cancelled"');
      if (answer.status >= 400 && !cancelled) {
        const after = await snapshot();
        assert.equal(after, before, `${what}: refused (${answer.status}) but stored something`);
        unchanged = after;
      }
    }),
    { ...budget.fastCheck, includeErrorInReport: true },
  );
  budget.finish(
    `, statuses ${[...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}=${n}`)
      .join(' ')}`,
  );
  if (budget.cases >= 300) assert.equal(byRoute.size, routes.length, 'every operation was fuzzed');
  assert.ok((byStatus.get(200) ?? 0) > 0, 'some requests got through');
});

test(`${Math.ceil(runs / 4)} raw requests with broken framing: a JSON answer, never a hang`, async () => {
  const raw = new FuzzBudget('http raw fuzz', Math.ceil(runs / 4), Math.ceil(defaultRuns / 4));
  let unchanged: string | undefined;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'HEAD', 'G ET', 'get', ''),
      fc.oneof(
        fc.constantFrom(
          '/v1/jobs',
          '/v1/reserve',
          '/v1/events',
          '*',
          'http://evil.example/v1/jobs',
          '/v1/jobs\u0000',
          '/\u00ff',
        ),
        fc.string({ maxLength: 30, unit: 'binary' }).map((s) => `/${s}`),
      ),
      fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', ''),
      fc.array(
        fc.tuple(
          fc.constantFrom(
            'Authorization',
            'Content-Length',
            'Transfer-Encoding',
            'Content-Type',
            'Bad Name',
            '',
          ),
          fc.oneof(
            fc.constantFrom(
              'a\rb',
              'a\u0000b',
              '-1',
              '1e3',
              'chunked',
              `Bearer ${keys.admin}`,
              'x'.repeat(20_000),
            ),
            fc.string({ maxLength: 20, unit: 'binary' }),
          ),
        ),
        { maxLength: 3 },
      ),
      async (verb, target, version, headers) => {
        raw.cases++;
        // As above: the last case's snapshot when it was checked unchanged.
        const before = unchanged ?? (await snapshot());
        unchanged = undefined;
        const lines = [`${verb} ${target} ${version}`.trimEnd(), 'Host: 127.0.0.1'];
        for (const [name, value] of headers) lines.push(`${name}: ${value}`);
        lines.push('Connection: close', '', '');
        const bytes = Buffer.from(lines.join('\r\n'), 'latin1');
        const answer = await sendRaw(port, bytes, answerBoundMs);
        const what = `raw ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`;
        // A well-formed GET /v1/events with a valid key is an event stream: it stays open by design.
        const eventStream =
          answer.status === 200 && String(answer.headers['content-type']).startsWith('text/event-stream');
        assert.ok(!answer.timedOut || answer.status === 0 || eventStream, what);
        if (answer.status !== 0 && verb !== 'HEAD' && !eventStream) {
          checkAnswer(what, {
            status: answer.status,
            headers: answer.headers,
            body: answer.body.toString(),
            timedOut: false,
          });
        }
        const after = await snapshot();
        assert.equal(after, before, `${what}: stored something`);
        unchanged = after;
      },
    ),
    { ...raw.fastCheck, includeErrorInReport: true },
  );
  raw.finish();
});

// ------------------------------------------------- answers that grow with stored data

/** A JSON request with the key of `role`. */
const jsonAs = (role: 'producer' | 'worker', body: unknown) => ({
  headers: { authorization: `Bearer ${keys[role]}`, 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify(body)),
});

/** Ends every job of `queue`: the ready ones purged, the leased ones acked. */
async function emptyQueue(queue: string): Promise<void> {
  const { engine } = t.server;
  await engine.purgeQueue(queue);
  for (const job of (await engine.listJobs({ queue, state: 'leased', pageSize: 100 })).items)
    await engine.ack({ jobId: job.id, attempt: job.attempt });
}

test('large jobs × maxJobs over POST /v1/reserve: every job it leases is in its answer (issue 29, item 2)', async () => {
  const { engine } = t.server;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 256 * 1024, max: bigQueue.maxPayloadBytes }), {
        minLength: 2,
        maxLength: 8,
      }),
      fc.integer({ min: 1, max: 10 }),
      // The answer's budget: the default (http.max_request_bytes), or less than one job, or a few.
      fc.constantFrom(0, 512 * 1024, 3 * 1024 * 1024),
      async (sizes, maxJobs, maxResponseBytes) => {
        try {
          for (const size of sizes) {
            const enqueued = await send({
              method: 'POST',
              target: '/v1/jobs',
              ...jsonAs('producer', {
                queue: bigQueue.name,
                type: 't',
                payloadBase64: Buffer.alloc(size, 0x61).toString('base64'),
              }),
            });
            checkAnswer('the enqueue', enqueued);
            assert.equal(enqueued.status, 200, enqueued.body.slice(0, 300));
          }
          const answer = await send({
            method: 'POST',
            target: '/v1/reserve',
            ...jsonAs('worker', {
              queues: [bigQueue.name],
              maxJobs,
              leaseDurationMs: 60_000,
              maxResponseBytes,
            }),
          });
          const what = `reserve of ${maxJobs} (maxResponseBytes ${maxResponseBytes}) from ${sizes.length} jobs of ${sizes.join(', ')} bytes`;
          checkAnswer(what, answer);
          const leased = (
            await engine.listJobs({ queue: bigQueue.name, state: 'leased', pageSize: 100 })
          ).items
            .map((j) => j.id)
            .sort();
          const answered =
            answer.status === 200
              ? (JSON.parse(answer.body) as { jobs: { jobId: string }[] }).jobs.map((j) => j.jobId).sort()
              : [];
          assert.deepEqual(leased, answered, `${what}: answered ${answer.status}; leased = answered`);
          assert.ok(
            answer.body.length <= (maxResponseBytes || Number.POSITIVE_INFINITY),
            `${what}: within its budget`,
          );
          if (answer.status === 413) {
            assert.match(answer.body, /resource_exhausted/, `${what}: the first job alone does not fit`);
            const first = (await engine.listJobs({ queue: bigQueue.name, state: 'ready', pageSize: 100 }))
              .items;
            assert.ok(
              first.every((j) => j.attempt === 0),
              `${what}: no attempt counted`,
            );
          } else assert.ok(answered.length > 0, `${what}: a job that fits is answered`);
        } finally {
          await emptyQueue(bigQueue.name);
        }
      },
    ),
    { numRuns: 6, includeErrorInReport: true },
  );
});

test("a payload up to its queue's max_payload_bytes is taken as payloadBase64, as over gRPC; one byte more is refused naming the setting", async () => {
  try {
    for (const size of [base64PayloadBytesMax, base64PayloadBytesMax + 3, bigQueue.maxPayloadBytes]) {
      const answer = await send({
        method: 'POST',
        target: '/v1/jobs',
        ...jsonAs('producer', {
          queue: bigQueue.name,
          type: 't',
          payloadBase64: Buffer.alloc(size, 0x61).toString('base64'),
        }),
      });
      checkAnswer(`a payload of ${size} bytes`, answer);
      assert.equal(answer.status, 200, `a payload of ${size} bytes: ${answer.body}`);
    }
    const over = await send({
      method: 'POST',
      target: '/v1/jobs',
      ...jsonAs('producer', {
        queue: bigQueue.name,
        type: 't',
        payloadBase64: Buffer.alloc(bigQueue.maxPayloadBytes + 1, 0x61).toString('base64'),
      }),
    });
    checkAnswer('a payload over the limit', over);
    assert.match(over.body, /max_payload_bytes/, 'the refusal names the setting');
  } finally {
    await t.server.engine.purgeQueue(bigQueue.name);
  }
});

test('a caller cannot create queues without bound: past limits.max_queues a job for a new queue is refused, and listings stay bounded (issue 29, item 3)', async () => {
  const { engine } = t.server;
  const maxQueues: number | undefined = engine.limits.maxQueues;
  const flooded = (maxQueues ?? 1000) + 100;
  const queues = Array.from({ length: flooded }, (_, i) => `flood-${i}`);
  const refusals: string[] = [];
  try {
    for (let i = 0; i < queues.length; i += 100) {
      const answer = await send({
        method: 'POST',
        target: '/v1/jobs/batch',
        headers: { authorization: `Bearer ${keys.producer}`, 'content-type': 'application/json' },
        body: Buffer.from(
          JSON.stringify({ jobs: queues.slice(i, i + 100).map((queue) => ({ queue, type: 't' })) }),
        ),
      });
      checkAnswer(`the batch from flood-${i}`, answer);
      if (answer.status !== 200) refusals.push(answer.body);
      else {
        const { results } = JSON.parse(answer.body) as { results: { rejection?: { message: string } }[] };
        for (const r of results) if (r.rejection !== undefined) refusals.push(r.rejection.message);
      }
    }
    const listed = (await engine.listQueues()).length;
    assert.ok(
      maxQueues !== undefined,
      `the server has no max_queues limit: ${flooded} new queues, ${refusals.length} jobs refused, ${listed} queues`,
    );
    assert.ok(listed <= maxQueues, `${listed} queues, max_queues ${maxQueues}`);
    assert.ok(
      refusals.some((message) => message.includes('max_queues')),
      `a job for a queue past the limit is refused naming max_queues: ${refusals[0]}`,
    );
  } finally {
    const made = new Set((await engine.listQueues()).map((q) => q.name));
    for (const queue of queues) {
      if (!made.has(queue)) continue;
      await emptyQueue(queue);
      await engine.deleteQueue(queue);
    }
  }
});

test('after all that the server is healthy: it answers, and its counters agree with its rows', async () => {
  const answer = await send({ method: 'GET', target: '/v1/openapi.json', headers: {} });
  assert.equal(answer.status, 200);
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});
