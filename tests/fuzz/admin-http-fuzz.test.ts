/**
 * Fuzzes the admin HTTP API of the real server over real sockets: every route
 * of the OpenAPI document, with and without a session and CSRF token, gets
 * bad JSON, wrong types, huge and negative numbers, over-long strings,
 * invalid UTF-8, wrong content types, bogus cookies and path parameters that
 * try to climb out (`..`, `%2e%2e`, `%2f`, NUL), oversize names and lists of
 * a thousand (issue 29, item 6). Raw sockets send what Node's
 * client refuses to: CR/LF and NUL in headers, broken request lines.
 *
 * Promises: no crash, no hang (every request answers within a bound), every
 * answer a documented status, every refusal a JSON error whose code matches
 * the status and whose message is at most 1 KiB, no stack trace or secret in any body, nothing stored from a
 * rejected request, the server healthy at the end. SEPP_FUZZ_RUNS sets the
 * number of cases (default 800; `npm run test:long` uses 100,000) and
 * SEPP_FUZZ_SECONDS a time box per loop (tests/helpers/fuzz-budget.ts).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { type AdminErrorCode, httpStatusOf } from '../../src/admin/http-errors.ts';
import { diskAssetSource } from '../../src/admin/index.ts';
import { hashPassword } from '../../src/admin/password.ts';
import { requestTooLargeStatus } from '../../src/api-schema/error-status.ts';
import { messageBytesMax } from '../../src/config/index.ts';
import { password, testScrypt } from '../helpers/admin.ts';
import { FuzzBudget } from '../helpers/fuzz-budget.ts';
import { casesOfRoutes } from '../helpers/fuzz-routes.ts';
import { type RawAnswer, sendExact, sendRaw } from '../helpers/http-raw.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const defaultRuns = 800;
const runs = Number(process.env.SEPP_FUZZ_RUNS ?? defaultRuns);
const answerBoundMs = 5000;
/** Statuses the API documents: its error table without 500, success, and the UI's revalidation. */
const documented = new Set([200, 304, ...Object.values(httpStatusOf).filter((status) => status !== 500)]);
const secretMarker = 'SECRET-MARKER-3f1c9a';
const roles = ['viewer', 'operator', 'admin'] as const;
type Role = (typeof roles)[number];

interface Route {
  method: string;
  path: string;
  query: string[];
  bodyFields: Record<string, { type?: unknown }>;
}

let t: TestServer;
let port: number;
let dir: string;
let passwordHash: string;
let routes: Route[];
const uiFiles: Record<string, string> = {
  'index.html': '<!doctype html><title>sepp</title><script src="/assets/app-ABCDEFGH.js"></script>',
  'assets/app-ABCDEFGH.js': 'console.log("sepp ui")',
};
const sessions = new Map<Role, { cookie: string; csrf: string }>();
const jobIds: string[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-httpfuzz-'));
  const ui = join(dir, 'ui');
  for (const [path, body] of Object.entries(uiFiles)) {
    mkdirSync(join(ui, path, '..'), { recursive: true });
    writeFileSync(join(ui, path), body);
  }
  // Files next to the UI, and a link out of it: no request may ever read them.
  writeFileSync(join(dir, 'secret.txt'), secretMarker);
  symlinkSync(join(dir, 'secret.txt'), join(ui, 'assets', 'link-ABCDEFGH.txt'));
  passwordHash = await hashPassword(password, testScrypt);
  const users = roles
    .map((role) => `[[admin.users]]\nname = "${role}"\nrole = "${role}"\npassword_hash = "${passwordHash}"\n`)
    .join('');
  // reports takes `welcome` and a thousand other types: refusing another must not list them all.
  const types = ['welcome', ...Array.from({ length: 1000 }, (_, i) => `type-${i}-${'x'.repeat(40)}`)];
  t = await startTestServer({
    toml: `[server]\ndurability = "relaxed"\n${users}[queues.reports]\nallowed_types = [${types.map((type) => `"${type}"`).join(', ')}]\n`,
    uiAssets: diskAssetSource(ui),
  });
  port = t.server.adminPort;
  const { engine } = t.server;
  for (let i = 0; i < 20; i++) {
    const { jobId } = await engine.enqueue({
      queue: i % 2 === 0 ? 'emails' : 'reports',
      type: 'welcome',
      payload: Buffer.from(`{"i":${i}}`),
      contentType: 'application/json',
      idempotencyKey: `key-${i}`,
    });
    jobIds.push(jobId);
  }
  for (const id of jobIds.slice(0, 4)) await engine.deadLetterJob(id);
  for (const role of roles) sessions.set(role, await login(role));
  const doc = JSON.parse(
    (await sendExact(port, { method: 'GET', target: '/api/openapi.json' })).body.toString(),
  );
  routes = openApiRoutes(doc);
  assert.ok(routes.length >= 23, `the OpenAPI document lists every route (${routes.length})`);
});

after(async () => {
  agent.destroy();
  await t?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Logs in from 127.0.0.2, another client as far as login throttling goes, so fuzzed failed logins cannot lock the harness out. */
async function login(role: Role): Promise<{ cookie: string; csrf: string }> {
  const answer = await sendExact(port, {
    method: 'POST',
    target: '/api/v1/session',
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify({ user: role, password })),
    localAddress: '127.0.0.2',
  });
  assert.equal(answer.status, 200, answer.body.toString());
  const setCookie = answer.headers['set-cookie']?.[0] ?? '';
  const body = JSON.parse(answer.body.toString()) as { csrfToken: string };
  return { cookie: setCookie.split(';')[0] ?? '', csrf: body.csrfToken };
}

interface OpenApiDoc {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string }[];
        requestBody?: { content: { 'application/json': { schema: { properties?: Route['bodyFields'] } } } };
      }
    >
  >;
}

function openApiRoutes(doc: OpenApiDoc): Route[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      bodyFields: op.requestBody?.content['application/json'].schema.properties ?? {},
    })),
  );
}

// --- What the server holds, to check that a refusal stored nothing. ---

interface Snapshot {
  queues: string;
  newestAuditId: number;
}

async function snapshot(): Promise<Snapshot> {
  const { engine } = t.server;
  // The bulk routes answer once an operation started; it runs on in slices. What an earlier,
  // accepted request started must end before a snapshot, or a refusal seems to change things.
  for (let waitedMs = 0; engine.listBulkOperations().some((op) => op.state === 'running'); waitedMs += 10) {
    assert.ok(waitedMs < 30_000, 'bulk operations still running after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const queues = JSON.stringify((await engine.listQueues()).map((q) => [q.name, q.paused, q.counts]));
  // Failed logins are audited on purpose (and after the answer), so they do not count as stored:
  // the newest other entry, a short page at a time (a snapshot per case, most find it at once).
  let cursor: string | null = null;
  do {
    const page = await engine.listAudit({ pageSize: 10, ...(cursor === null ? {} : { cursor }) });
    const newest = page.items.find((e) => e.action !== 'session.login_failed');
    if (newest !== undefined) return { queues, newestAuditId: newest.id };
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { queues, newestAuditId: 0 };
}

// --- Checking one answer. ---

/** A stack frame, or a source file of the server (the config page shows data paths, which is fine). */
const stackTrace = /\n\s+at |node:internal|\.[cm]?[jt]s:\d+|\bsrc\/(admin|engine|store)\//;

function checkAnswer(what: string, answer: RawAnswer, isHead: boolean): void {
  assert.ok(!answer.timedOut, `${what}: no answer within ${answerBoundMs} ms`);
  assert.ok(documented.has(answer.status), `${what}: undocumented status ${answer.status}: ${answer.body}`);
  const text = answer.body.toString('utf8');
  assert.doesNotMatch(text, stackTrace, `${what}: a stack trace or path in the answer`);
  assert.ok(!text.includes(passwordHash), `${what}: a password hash in the answer`);
  assert.ok(!text.includes(secretMarker), `${what}: a file from outside the UI directory`);
  if (answer.status >= 400 && !isHead) {
    const type = String(answer.headers['content-type'] ?? '');
    assert.match(type, /^application\/json/, `${what}: error ${answer.status} is not JSON: ${text}`);
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    const code = String(body.error?.code);
    // The table's status, or 413 for a resource_exhausted request over a per-call limit.
    const overCallLimit = code === 'resource_exhausted' && answer.status === requestTooLargeStatus;
    assert.equal(
      overCallLimit ? requestTooLargeStatus : httpStatusOf[code as AdminErrorCode],
      answer.status,
      `${what}: code ${code} with status ${answer.status}`,
    );
    assert.ok(
      typeof body.error?.message === 'string' && body.error.message.length > 0,
      `${what}: no message`,
    );
    const bytes = Buffer.byteLength(String(body.error?.message));
    assert.ok(bytes <= messageBytesMax, `${what}: a message of ${bytes} bytes: ${text.slice(0, 200)}…`);
  }
}

// --- Generators. ---

const nastyStrings = [
  '',
  '..',
  '.',
  '%2e%2e',
  '%2E%2E',
  '..%2f..%2fetc%2fpasswd',
  '%2f',
  'a%2fb',
  '%00',
  'a%00b',
  '%ff',
  '%c0%ae%c0%ae',
  '%',
  '%%',
  '%252e%252e',
  '..%5c..%5c',
  '%5c',
  '%20',
  'con',
  '\u00fc',
  '%F0%9F%92%A9',
  '%ED%A0%80',
  'x'.repeat(300),
  'x'.repeat(5000),
  'x'.repeat(12_000),
  'constructor',
  '__proto__',
];

/** A path segment: real names, junk, or traversal attempts, percent-encoded where Node would refuse it raw. */
const segment = (real: readonly string[]) =>
  fc.oneof(
    fc.constantFrom(...real),
    fc.constantFrom(...nastyStrings),
    fc.string({ maxLength: 40 }).map(encodeURIComponent),
    fc.string({ maxLength: 20, unit: 'binary' }).map((s) => encodeURIComponent(s).replace(/%2F/g, '/')),
  );

const queryValue = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '1',
    '50',
    '1000',
    '1001',
    '1e3',
    '1.5',
    '0x10',
    '99999999999999999999',
    '9007199254740993',
    '%D9%A1%D9%A2',
    'ready',
    'dead',
    'newest_first',
    'attempts_exhausted',
    'YQ',
    's1',
    'czE',
    'ZDE6MQ',
    'YTE',
  ),
  fc.constantFrom(...nastyStrings),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
);

const jsonScalar = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    1,
    9,
    10,
    2 ** 31,
    -(2 ** 31),
    2 ** 53,
    -(2 ** 53),
    1e308,
    -1e308,
    0.5,
    true,
    false,
    null,
    '',
    'emails',
    'welcome',
    'text',
    'base64',
    'aGVsbG8=',
    'attempts_exhausted',
    '\ud800',
    '\u0000',
    'x'.repeat(70_000),
  ),
  fc.string({ maxLength: 50 }),
  fc.integer(),
  fc.double(),
);

/** Oversize values: a long name, a thousand names (issue 29, item 6: a message must not quote them all). */
const oversizeValue = fc.constantFrom<unknown>(
  'a'.repeat(300_000),
  'not a name! '.repeat(25_000),
  Array.from({ length: 1000 }, (_, i) => `not a name! ${i} ${'x'.repeat(40)}`),
  Object.fromEntries(
    Array.from({ length: 1000 }, (_, i) => [`unknown key ${i} ${'x'.repeat(40)}`, 'not a value!']),
  ),
);

/** A value for a body field: any type, including lists of the seeded job ids. */
const jsonValue = () =>
  fc.oneof(
    { weight: 4, arbitrary: jsonScalar },
    oversizeValue,
    fc.array(jsonScalar, { maxLength: 5 }),
    fc.array(fc.constantFrom(...jobIds), { minLength: 1, maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 10 }), jsonScalar, { maxKeys: 5 }),
    fc.constant(JSON.parse('{"__proto__":{"admin":true},"constructor":"x"}') as unknown),
  );

const body = (route: Route) =>
  fc.oneof(
    fc.constant(undefined),
    // The documented fields, each present or not, with values of any type.
    fc
      .record(Object.fromEntries(Object.keys(route.bodyFields).map((k) => [k, jsonValue()])), {
        requiredKeys: [],
      })
      .chain((fields) =>
        fc
          .dictionary(fc.string({ maxLength: 12 }), jsonValue(), { maxKeys: 2 })
          .map((extra) => ({ ...extra, ...fields })),
      )
      .map((value) => Buffer.from(JSON.stringify(value))),
    fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')),
    // A thousand unknown keys (a queue's settings), or every documented field oversize.
    fc.constant(
      Buffer.from(
        JSON.stringify(
          Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`unknown ${i} ${'x'.repeat(40)}`, 1])),
        ),
      ),
    ),
    fc
      .tuple(...Object.keys(route.bodyFields).map(() => oversizeValue))
      .map((values) =>
        Buffer.from(
          JSON.stringify(Object.fromEntries(Object.keys(route.bodyFields).map((k, i) => [k, values[i]]))),
        ),
      ),
    // Broken JSON: truncated, junk, deep nesting.
    fc
      .tuple(fc.json({ maxDepth: 2 }), fc.nat())
      .map(([text, cut]) => Buffer.from(text.slice(0, cut % (text.length + 1)))),
    fc.constantFrom(
      '{',
      '{"a":}',
      'nul',
      '[1,2',
      '{"type":"x",}',
      "{'a':1}",
      '\ufeff{}',
      '[]',
      '"x"',
      '1e999',
    ),
    fc.constant('['.repeat(100_000)),
    fc.constant(`{"jobIds":[${'"x",'.repeat(5000)}"x"]}`),
    // Invalid UTF-8.
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
    fc.constant(
      Buffer.from([0x7b, 0x22, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d]),
    ),
  );

const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  ';',
);

const credential = fc.constantFrom('none', 'viewer', 'operator', 'admin', 'bogus', 'garbled');
const csrf = fc.constantFrom('right', 'right', 'none', 'wrong', 'huge', 'other-session');
const origin = fc.constantFrom('same', 'same', 'none', 'evil', 'null', 'cross-site');
const method = (route: Route) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(route.method) },
    fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'),
  );

interface Case {
  route: Route;
  method: string;
  target: string;
  credential: string;
  csrf: string;
  origin: string;
  contentType: string | undefined;
  body: Buffer | undefined;
}

const fuzzCase: fc.Arbitrary<Case> = casesOfRoutes(() => routes, caseOf);

function caseOf(route: Route): fc.Arbitrary<Case> {
  const path = fc
    .tuple(
      segment(['emails', 'reports', 'nope']),
      segment(jobIds),
      segment(['key-0', 'key-1', 'missing']),
      segment(['nightly', 'missing']),
    )
    .map(([queue, id, key, name]) =>
      route.path.replace('{queue}', queue).replace('{id}', id).replace('{key}', key).replace('{name}', name),
    );
  const query = fc
    .array(fc.tuple(fc.constantFrom(...route.query, 'limit', 'junk', ''), queryValue), { maxLength: 4 })
    .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`));
  return fc.record({
    route: fc.constant(route),
    method: method(route),
    target: fc.tuple(path, query).map(([p, q]) => p + q),
    credential,
    csrf,
    origin,
    contentType,
    body: body(route).map((b) => (typeof b === 'string' ? Buffer.from(b) : b)),
  });
}

function headersOf(c: Case): Record<string, string> {
  const headers: Record<string, string> = {};
  const session = sessions.get(c.credential as Role);
  if (session !== undefined) headers.cookie = session.cookie;
  if (c.credential === 'bogus') headers.cookie = `sepp_session=${'A'.repeat(43)}`;
  if (c.credential === 'garbled') headers.cookie = 'sepp_session=%E0%A4%A; sepp_session=; =x; ;;';
  if (c.csrf === 'right' && session !== undefined) headers['x-csrf-token'] = session.csrf;
  if (c.csrf === 'wrong') headers['x-csrf-token'] = 'x'.repeat(43);
  if (c.csrf === 'huge') headers['x-csrf-token'] = 'x'.repeat(8000);
  if (c.csrf === 'other-session') headers['x-csrf-token'] = sessions.get('admin')?.csrf ?? '';
  if (c.origin === 'same') headers.origin = `http://127.0.0.1:${port}`;
  if (c.origin === 'evil') headers.origin = 'https://evil.example';
  if (c.origin === 'null') headers.origin = 'null';
  if (c.origin === 'cross-site') headers['sec-fetch-site'] = 'cross-site';
  if (c.contentType !== undefined) headers['content-type'] = c.contentType;
  return headers;
}

test(`${runs} fuzzed admin API requests: documented answers, nothing stored from a refusal`, async () => {
  const byStatus = new Map<number, number>();
  const byRoute = new Map<string, number>();
  const budget = new FuzzBudget('admin fuzz', runs, defaultRuns);
  await fc.assert(
    fc.asyncProperty(fuzzCase, async (c) => {
      budget.cases++;
      const before = await snapshot();
      const answer = await sendExact(
        port,
        {
          method: c.method,
          target: c.target,
          headers: headersOf(c),
          ...(c.body === undefined || c.method === 'GET' || c.method === 'HEAD' ? {} : { body: c.body }),
          // One keep-alive pool for every case: a body the server answers before it has all of it
          // (a 401 to 300 KiB) is read and dropped, and the connection serves the next case.
          agent,
        },
        answerBoundMs,
      );
      const what = `${c.method} ${c.target.slice(0, 200)} as ${c.credential}/${c.csrf}/${c.origin}`;
      checkAnswer(what, answer, c.method === 'HEAD');
      byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
      byRoute.set(
        `${c.route.method} ${c.route.path}`,
        (byRoute.get(`${c.route.method} ${c.route.path}`) ?? 0) + 1,
      );
      if (answer.status >= 400)
        assert.deepEqual(
          await snapshot(),
          before,
          `${what}: refused (${answer.status}) but stored something`,
        );
      // A fuzzed logout ends a harness session: start a fresh one.
      if (c.method === 'DELETE' && c.route.path === '/api/v1/session' && answer.status === 200) {
        const role = c.credential as Role;
        if (sessions.has(role)) sessions.set(role, await login(role));
      }
    }),
    { ...budget.fastCheck, includeErrorInReport: true },
  );
  budget.finish(
    `, statuses ${[...byStatus]
      .sort()
      .map(([s, n]) => `${s}=${n}`)
      .join(' ')}`,
  );
  if (budget.cases >= 300) assert.equal(byRoute.size, routes.length, 'every route was fuzzed');
  assert.ok((byStatus.get(200) ?? 0) > 0, 'some requests got through');
});

// --- Raw sockets: what node:http will not send. ---

const rawTarget = fc.oneof(
  fc.constantFrom(
    '/api/v1/session',
    '/api/v1/queues',
    '/../../etc/passwd',
    '/%2e%2e/%2e%2e/secret.txt',
    '/assets/..%2f..%2fsecret.txt',
    '/assets/%2e%2e/%2e%2e/secret.txt',
    '/assets/link-ABCDEFGH.txt',
    '/assets\\..\\..\\secret.txt',
    '/..%5c..%5csecret.txt',
    '//secret.txt',
    '/api/v1/jobs/..%2f..%2f',
    '*',
    'http://evil.example/api/v1/session',
    '/index.html%00.js',
    '/index.html\u0000',
    '/ space',
    '/\u00ff',
  ),
  fc.string({ maxLength: 40, unit: 'binary' }).map((s) => `/${s}`),
);
const rawHeaderValue = fc.oneof(
  fc.constantFrom(
    'a\rb',
    'a\nb',
    'a\r\nInjected: yes',
    'a\u0000b',
    ' folded\r\n continued',
    '\u00ff\u00fe',
    'x'.repeat(20_000),
  ),
  fc.string({ maxLength: 30, unit: 'binary' }),
);
const rawHeaderName = fc.constantFrom(
  'Host',
  'Cookie',
  'X-CSRF-Token',
  'Origin',
  'Content-Type',
  'X-Anything',
  'Bad Name',
  'Bad:Name',
  '',
);

test(`${Math.ceil(runs / 4)} raw requests with broken framing: a JSON answer, never a hang or a silent close`, async () => {
  const statuses = new Map<number, number>();
  const raw = new FuzzBudget('admin raw fuzz', Math.ceil(runs / 4), Math.ceil(defaultRuns / 4));
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'HEAD', 'G ET', 'get', 'BREW', ''),
      rawTarget,
      fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 extra', ''),
      fc.array(fc.tuple(rawHeaderName, rawHeaderValue), { maxLength: 3 }),
      fc.boolean(),
      async (verb, target, version, headers, withHost) => {
        raw.cases++;
        const before = await snapshot();
        const lines = [`${verb} ${target} ${version}`.trimEnd()];
        if (withHost) lines.push(`Host: 127.0.0.1:${port}`);
        for (const [name, value] of headers) lines.push(`${name}: ${value}`);
        lines.push('Connection: close', '', '');
        const bytes = Buffer.from(lines.join('\r\n'), 'latin1');
        const answer = await sendRaw(port, bytes, answerBoundMs);
        const what = `raw ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`;
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        checkAnswer(what, answer, verb === 'HEAD');
        assert.equal(answer.headers.injected, undefined, `${what}: a header was injected into the answer`);
        assert.deepEqual(await snapshot(), before, `${what}: stored something`);
      },
    ),
    { ...raw.fastCheck, includeErrorInReport: true },
  );
  raw.finish(
    `, statuses ${[...statuses]
      .sort()
      .map(([s, n]) => `${s}=${n}`)
      .join(' ')}`,
  );
});

test('bodies over the limit are refused with 413 before they are read', async () => {
  const admin = sessions.get('admin');
  assert.ok(admin);
  const head = (length: string) =>
    Buffer.from(
      `POST /api/v1/queues/emails/jobs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${admin.cookie}\r\n` +
        `X-CSRF-Token: ${admin.csrf}\r\nContent-Type: application/json\r\n${length}\r\n`,
    );
  const before = await snapshot();
  // A declared length over the limit, and only a few bytes of it sent: the answer comes anyway.
  for (const declared of [2 * 1024 * 1024 + 1, 100 * 1024 * 1024, 2 ** 53 - 1]) {
    const answer = await sendRaw(
      port,
      Buffer.concat([head(`Content-Length: ${declared}\r\n`), Buffer.from('{"type"')]),
      2000,
    );
    assert.equal(answer.status, 413, `Content-Length ${declared}: ${answer.status} ${answer.body}`);
    checkAnswer(`Content-Length ${declared}`, answer, false);
  }
  // Chunked, with no length up front: counted while read, refused once past the limit.
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const chunks = Array.from({ length: 40 }, () =>
    Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]),
  );
  const chunked = await sendRaw(
    port,
    Buffer.concat([head('Transfer-Encoding: chunked\r\n'), ...chunks, Buffer.from('0\r\n\r\n')]),
    answerBoundMs,
  );
  assert.equal(chunked.status, 413, `chunked: ${chunked.status} ${chunked.body}`);
  checkAnswer('chunked', chunked, false);
  // Exactly the limit is not "over" it: refused for its content, not its size.
  const atLimit = Buffer.alloc(2 * 1024 * 1024, 0x20);
  const answer = await sendRaw(
    port,
    Buffer.concat([head(`Content-Length: ${atLimit.length}\r\n`), atLimit]),
    answerBoundMs,
  );
  assert.equal(answer.status, 400, `${answer.status} ${answer.body}`);
  assert.deepEqual(await snapshot(), before);
});

test('the server is healthy after the fuzzing', async () => {
  const admin = sessions.get('admin');
  assert.ok(admin);
  const overview = await sendExact(port, {
    method: 'GET',
    target: '/api/v1/overview',
    headers: { cookie: admin.cookie },
  });
  assert.equal(overview.status, 200);
  const enqueue = await sendExact(port, {
    method: 'POST',
    target: '/api/v1/queues/emails/jobs',
    headers: {
      cookie: admin.cookie,
      'x-csrf-token': admin.csrf,
      'content-type': 'application/json',
      origin: `http://127.0.0.1:${port}`,
    },
    body: Buffer.from(JSON.stringify({ type: 'after-fuzz', payload: 'ok' })),
  });
  assert.equal(enqueue.status, 200, enqueue.body.toString());
  const index = await sendExact(port, { method: 'GET', target: '/' });
  assert.equal(index.body.toString(), uiFiles['index.html']);
  assert.deepEqual(await t.server.engine.counterMismatches(), []);
});
