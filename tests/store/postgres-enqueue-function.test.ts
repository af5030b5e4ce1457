/**
 * Enqueue inside the application's own transaction (issue 38): `sepp.enqueue` (the
 * function of migration schema/postgres/0002) and the TypeScript helper over it
 * (`@sepp-queue/client/pg`), against a sepp server on the same schema. The job exists
 * iff the transaction commits (committed, rolled back, savepoint rolled back); two
 * transactions with one idempotency key store one job; the function's refusals answer
 * a SQLSTATE and sepp's rejection reason; a role with EXECUTE on the function only can
 * enqueue and read nothing; the commit's NOTIFY wakes a waiting worker with no poll;
 * the row it writes is the row an enqueue over gRPC writes; counts match the rows;
 * transactions left open after their enqueue do not make the next one wait (schema 22: a
 * counter shard each, of as many as the database has connections), a first grouped job's
 * holds its queue's row, and docs/postgres.md's query finds them and its bounds apply;
 * transactions open at once each fill max_depth; an advisory lock the application's role
 * takes stalls a server's writes until docs/postgres.md's grant gives the locks to sepp's role;
 * a cancel or timeout any role NOTIFYs on the servers' channel reaches no worker.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { enqueueInTransaction } from '../../clients/typescript/src/pg.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { useCluster } from '../helpers/postgres.ts';
import { countMismatches } from '../helpers/postgres-counts.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { collect, creditMessage, openWork, subscribeMessage } from '../helpers/streams.ts';

const postgres = useCluster('txn');
const storeToml = (schema: string) => postgres.storeToml(schema);

const queuesToml = `
[queues.mail]
[queues.small]
max_payload_bytes = 1024
[queues.typed]
allowed_types = ["send"]
[queues.shallow]
max_depth = 2
`;

function server(schema: string, options: { clock?: FakeClock; toml?: string } = {}): Promise<TestServer> {
  const { toml = '', ...rest } = options;
  return startTestServer({ toml: `${toml}${queuesToml}\n${storeToml(schema)}`, ...rest });
}

async function connect(
  config: pg.ClientConfig = postgres.cluster.connection(postgres.database),
): Promise<pg.Client> {
  const client = new pg.Client(config);
  client.on('error', () => {});
  await client.connect();
  return client;
}

const mismatches = (schema: string) => countMismatches(postgres.cluster, postgres.database, schema);

const reserve = (t: TestServer, queue: string, maxJobs = 10, waitTimeoutMs = 0) =>
  call(t.client, t.client.reserve, {
    queues: [queue],
    maxJobs,
    leaseDurationMs: 60_000,
    waitTimeoutMs,
    workerId: 'w',
    maxResponseBytes: 0,
  });

async function counts(t: TestServer, queue: string) {
  const { queues } = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' });
  return queues.find((q) => q.name === queue)?.counts;
}

async function jobExists(t: TestServer, id: string): Promise<boolean> {
  return call(t.client, t.client.getJob, { jobId: id }).then(
    () => true,
    () => false,
  );
}

test('committed: the job exists only after the commit; rolled back: never; counts stay exact', async () => {
  const t = await server('commits');
  const app = await connect();
  try {
    await app.query('BEGIN');
    const { id, deduplicated } = await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'send', json: { order: 1 } },
      { schema: 'commits' },
    );
    assert.equal(deduplicated, false);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(await jobExists(t, id), false, 'visible before the commit');
    assert.equal((await counts(t, 'mail'))?.ready, 0);
    await app.query('COMMIT');
    assert.equal(await jobExists(t, id), true);
    assert.equal((await counts(t, 'mail'))?.ready, 1);
    const { jobs } = await reserve(t, 'mail');
    assert.deepEqual(
      jobs.map((j) => [j.jobId, j.type, j.contentType, Buffer.from(j.payload).toString()]),
      [[id, 'send', 'application/json', '{"order":1}']],
    );

    await app.query('BEGIN');
    const rolledBack = await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'send' },
      { schema: 'commits' },
    );
    await app.query('ROLLBACK');
    assert.equal(await jobExists(t, rolledBack.id), false);
    assert.deepEqual([(await counts(t, 'mail'))?.ready, (await counts(t, 'mail'))?.leased], [0, 1]);
  } finally {
    await app.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('commits'), []);
});

test('a savepoint rolled back takes its job with it; the rest of the transaction commits', async () => {
  const t = await server('savepoints');
  const app = await connect();
  try {
    await app.query('BEGIN');
    const kept = await enqueueInTransaction(app, { queue: 'mail', type: 'a' }, { schema: 'savepoints' });
    await app.query('SAVEPOINT s');
    const dropped = await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'b', idempotencyKey: 'k' },
      { schema: 'savepoints' },
    );
    await app.query('ROLLBACK TO SAVEPOINT s');
    // The key went with the savepoint: it is free again in the same transaction.
    const again = await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'c', idempotencyKey: 'k' },
      { schema: 'savepoints' },
    );
    assert.equal(again.deduplicated, false);
    await app.query('COMMIT');
    assert.equal(await jobExists(t, kept.id), true);
    assert.equal(await jobExists(t, dropped.id), false);
    assert.equal(await jobExists(t, again.id), true);
    assert.equal((await counts(t, 'mail'))?.ready, 2);
  } finally {
    await app.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('savepoints'), []);
});

test('two transactions enqueue one idempotency key at once: one job; a rollback frees the key', async () => {
  const t = await server('keys');
  const [a, b] = [await connect(), await connect()];
  try {
    const enqueue = (c: pg.Client, type: string) =>
      enqueueInTransaction(c, { queue: 'mail', type, idempotencyKey: 'order-7' }, { schema: 'keys' });
    await a.query('BEGIN');
    await b.query('BEGIN');
    const first = await enqueue(a, 'first');
    // b waits for a's transaction (the key's lock) …
    let bDone = false;
    const second = enqueue(b, 'second').then((r) => {
      bDone = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(bDone, false, 'b did not wait for a');
    await a.query('COMMIT');
    // … and then finds a's job.
    assert.deepEqual(await second, { id: first.id, deduplicated: true });
    await b.query('COMMIT');

    // A rolled-back holder frees the key for the waiter.
    await a.query('BEGIN');
    await b.query('BEGIN');
    const gone = await enqueueInTransaction(
      a,
      { queue: 'mail', type: 'x', idempotencyKey: 'order-8' },
      { schema: 'keys' },
    );
    const waiter = enqueueInTransaction(
      b,
      { queue: 'mail', type: 'y', idempotencyKey: 'order-8' },
      { schema: 'keys' },
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await a.query('ROLLBACK');
    const taken = await waiter;
    assert.equal(taken.deduplicated, false);
    assert.notEqual(taken.id, gone.id);
    await b.query('COMMIT');

    // Under REPEATABLE READ the waiter's snapshot cannot see the other's job: 40001, retry.
    await a.query('BEGIN');
    await b.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await b.query('SELECT 1');
    await enqueueInTransaction(
      a,
      { queue: 'mail', type: 'x', idempotencyKey: 'order-9' },
      { schema: 'keys' },
    );
    const refused = enqueueInTransaction(
      b,
      { queue: 'mail', type: 'y', idempotencyKey: 'order-9' },
      { schema: 'keys' },
    ).catch((error: { code?: string }) => error.code);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await a.query('COMMIT');
    assert.equal(await refused, '40001');
    await b.query('ROLLBACK');

    const { jobs } = await reserve(t, 'mail', 100);
    assert.deepEqual(jobs.map((j) => j.idempotencyKey).sort(), ['order-7', 'order-8', 'order-9']);
  } finally {
    await a.end();
    await b.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('keys'), []);
});

test('keys, priorities, scheduling and groups behave as over gRPC: the same row, dedup across both', async () => {
  const t = await server('parity');
  const app = await connect();
  try {
    const runAtMs = Date.now() + 3_600_000;
    const grpc = await call(t.client, t.client.enqueue, {
      job: testJob('mail', {
        type: 'send',
        payload: Buffer.from('p'),
        contentType: 'text/plain',
        priority: 7,
        maxAttempts: 3,
        idempotencyKey: 'grpc-key',
        metadata: { a: 'b' },
        group: 'tenant-1',
        schedule: { $case: 'runAtMs', value: runAtMs },
        timeoutMs: 5000,
      }),
    });
    const sql = await enqueueInTransaction(
      app,
      {
        queue: 'mail',
        type: 'send',
        payload: 'p',
        contentType: 'text/plain',
        priority: 7,
        maxAttempts: 3,
        idempotencyKey: 'sql-key',
        metadata: { a: 'b' },
        group: 'tenant-1',
        runAt: runAtMs,
        executionTimeoutMs: 5000,
      },
      { schema: 'parity' },
    );
    const columns = `state, priority, payload, content_type, metadata_json, max_attempts, lease_ms, run_at_ms,
      expires_at_ms, group_key, attempt, attempt_base, timeout_ms`;
    const rows = await app.query(`SELECT ${columns} FROM parity.jobs WHERE id = ANY($1) ORDER BY seq`, [
      [grpc.jobId, sql.id],
    ]);
    assert.equal(rows.rows.length, 2);
    assert.deepEqual(rows.rows[1], rows.rows[0]);
    assert.equal(rows.rows[0].state, 'scheduled');
    assert.equal(Number(rows.rows[0].timeout_ms), 5000, 'timeout_ms reaches the row (migration 0006)');
    assert.deepEqual((await counts(t, 'mail'))?.scheduled, 2);

    // A key taken over gRPC is a duplicate for the function, and the other way round.
    const dupOfGrpc = await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'send', idempotencyKey: 'grpc-key' },
      { schema: 'parity' },
    );
    assert.deepEqual(dupOfGrpc, { id: grpc.jobId, deduplicated: true });
    const dupOfSql = await call(t.client, t.client.enqueue, {
      job: testJob('mail', { idempotencyKey: 'sql-key' }),
    });
    assert.deepEqual([dupOfSql.jobId, dupOfSql.deduplicated], [sql.id, true]);

    // Priorities: the higher one is leased first; a grouped job is leased once the
    // servers read the queue's group mark (their refresh, within a second).
    await enqueueInTransaction(app, { queue: 'mail', type: 'low', priority: 1 }, { schema: 'parity' });
    await enqueueInTransaction(app, { queue: 'mail', type: 'high', priority: 8 }, { schema: 'parity' });
    await enqueueInTransaction(
      app,
      { queue: 'mail', type: 'grouped', group: 'g', priority: 0 },
      { schema: 'parity' },
    );
    const leased: string[] = [];
    for (let i = 0; i < 50 && leased.length < 3; i++) {
      const { jobs } = await reserve(t, 'mail', 1);
      leased.push(...jobs.map((j) => j.type));
      if (jobs.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(leased.slice(0, 2), ['high', 'low']);
    assert.equal(leased[2], 'grouped');
  } finally {
    await app.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('parity'), []);
});

test("the commit's NOTIFY wakes a worker waiting on the server, with no poll", async () => {
  // The server's clock never moves: its once-a-second poll never runs, nor does its wait end.
  const clock = new FakeClock(Date.now());
  const t = await server('wakes', { clock });
  const app = await connect();
  try {
    await call(t.client, t.client.enqueue, { job: testJob('mail') });
    assert.equal((await reserve(t, 'mail', 1)).jobs.length, 1);
    const waiting = reserve(t, 'mail', 1, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await app.query('BEGIN');
    const { id } = await enqueueInTransaction(app, { queue: 'mail', type: 'send' }, { schema: 'wakes' });
    await app.query('COMMIT');
    const { jobs } = await waiting;
    assert.deepEqual(
      jobs.map((j) => j.jobId),
      [id],
    );
  } finally {
    await app.end();
    await t.dispose();
  }
});

/** Calls the function with raw SQL; resolves with the error's SQLSTATE and DETAIL, or 'ok'. */
async function refusal(c: pg.Client, sql: string, values: unknown[] = []) {
  return c.query(sql, values).then(
    () => 'ok',
    (error: { code?: string; detail?: string; message: string }) =>
      `${error.code} ${error.detail ?? '-'}: ${error.message}`,
  );
}

/**
 * A refusal over one of the engine's limits, which the function takes from the one server running
 * on the schema (schema/postgres/0020): the message names the limit, the setting and how to raise it.
 */
function overServerLimit(answer: string, problem: string, limit: string, setting: string): RegExp {
  const text =
    `${answer}: sepp.enqueue: ${problem}, over the limit of ${limit} (limits.${setting} of the one sepp ` +
    'server running on this schema: raise it in its sepp.toml and reload it)';
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

test("the function's refusals: a SQLSTATE, sepp's reason and a message that names the problem", async () => {
  // Engine limits above the defaults: the function follows the server's, and says whose they are.
  const t = await server('refusals', {
    toml: '[limits]\nmax_idempotency_key_bytes = 1024\nmax_name_length = 200\nmax_metadata_entries = 100\n',
  });
  const app = await connect();
  try {
    // A queue at its max_depth (2): two jobs fill it.
    for (let i = 0; i < 2; i++) await call(t.client, t.client.enqueue, { job: testJob('shallow') });
    const e = (args: string) => refusal(app, `SELECT * FROM refusals.enqueue(${args})`);
    const cases: [string, RegExp][] = [
      ["'nope', 't', ''::bytea", /^42704 unknown_queue: sepp\.enqueue: queue nope does not exist/],
      ["'', 't', ''::bytea", /^22023 invalid_name: sepp\.enqueue: queue is empty/],
      ["'mail', 'a b', ''::bytea", /^22023 invalid_name: .*type "a b" may use only letters/],
      [
        `'mail', '${'t'.repeat(201)}', ''::bytea`,
        overServerLimit(
          '22023 invalid_name',
          'type is 201 characters long',
          '200 characters',
          'max_name_length',
        ),
      ],
      ["'mail', 't', NULL", /^22023 invalid_job: sepp\.enqueue: payload must be bytes/],
      [
        "'small', 't', decode(repeat('00', 1025), 'hex')",
        /^54000 payload_too_large: .*1025 bytes, the limit for queue small is 1024/,
      ],
      [
        "'typed', 'other', ''::bytea",
        /^22023 job_type_not_allowed: .*job type other is not allowed on queue typed/,
      ],
      [
        "'shallow', 't', ''::bytea",
        /^53400 queue_full: .*queue shallow holds 2 unfinished jobs, its max_depth is 2/,
      ],
      ["'mail', 't', '', '[]'", /^22023 invalid_job: .*options must be a JSON object/],
      ["'mail', 't', '', '{\"colour\": 1}'", /^22023 invalid_job: .*unknown option "colour"/],
      ["'mail', 't', '', '{\"depends_on\": [\"x\"]}'", /^0A000 invalid_job: .*depends_on is not supported/],
      [
        "'mail', 't', '', '{\"priority\": 10}'",
        /^22023 invalid_job: .*priority is 10; it must be an integer from 0 to 9/,
      ],
      [
        "'mail', 't', '', '{\"priority\": 1.5}'",
        /^22023 invalid_job: .*priority must be an integer, not 1\.5/,
      ],
      ["'mail', 't', '', '{\"priority\": \"high\"}'", /^22023 invalid_job: .*priority must be an integer/],
      ["'mail', 't', '', '{\"max_attempts\": 0}'", /^22023 invalid_job: .*max_attempts is 0/],
      ["'mail', 't', '', '{\"lease_ms\": 10}'", /^22023 invalid_job: .*lease_ms is 10/],
      [
        "'mail', 't', '', '{\"timeout_ms\": -5}'",
        /^22023 invalid_job: .*timeout_ms is -5; it must be an integer from 1/,
      ],
      ["'mail', 't', '', '{\"debounce_key\": \"k\"}'", /^22023 invalid_job: .*unknown option "debounce_key"/],
      [
        "'mail', 't', '', '{\"run_at_ms\": 1, \"delay_ms\": 1}'",
        /^22023 invalid_job: .*give run_at_ms or delay_ms, not both/,
      ],
      ["'mail', 't', '', '{\"delay_ms\": -1}'", /^22023 invalid_job: .*delay_ms is -1/],
      [
        "'mail', 't', '', '{\"delay_ms\": 40000000000}'",
        overServerLimit(
          '22023 scheduled_too_far',
          'the job is scheduled 463 days ahead',
          '365 days',
          'max_schedule_ahead_ms',
        ),
      ],
      ["'mail', 't', '', '{\"ttl_ms\": 0}'", /^22023 invalid_job: .*ttl_ms is 0/],
      [
        "'mail', 't', '', '{\"delay_ms\": 5000, \"ttl_ms\": 1000}'",
        /^22023 invalid_job: .*expire before it is due/,
      ],
      [
        "'mail', 't', '', '{\"unique_while_active\": true}'",
        /^22023 invalid_job: .*unique_while_active needs an idempotency_key/,
      ],
      [
        `'mail', 't', '', '{"idempotency_key": "${'k'.repeat(1025)}"}'`,
        overServerLimit(
          '22023 invalid_job',
          'idempotency_key is 1025 bytes',
          '1024 bytes',
          'max_idempotency_key_bytes',
        ),
      ],
      [
        `'mail', 't', '', '{"metadata": ${JSON.stringify(Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 'v'])))}}'`,
        overServerLimit(
          '54000 metadata_too_large',
          'metadata has 101 entries',
          '100 entries',
          'max_metadata_entries',
        ),
      ],
      [
        "'mail', 't', '', '{\"metadata\": {\"a\": 1}}'",
        /^22023 invalid_job: .*metadata value of a must be a string/,
      ],
      ["'mail', 't', '', '{\"group\": \"a/b\"}'", /^22023 invalid_name: .*group "a\/b" may use only/],
      [
        "'mail', 't', '', '{\"content_type\": \"\\u00e9\"}'",
        /^22023 invalid_job: .*content_type must be 1–255 printable ASCII/,
      ],
      // U+0000: PostgreSQL's own input functions refuse it before the function runs.
      [
        "'mail', 't', '', '{\"idempotency_key\": \"a\\u0000b\"}'",
        /^22P05 .*unsupported Unicode escape sequence/,
      ],
    ];
    const answers = [];
    for (const [args, expected] of cases) {
      const answer = await e(args);
      answers.push(answer);
      assert.match(answer, expected, args);
    }
    // A NUL in a text argument, sent as a parameter: refused by PostgreSQL's text input.
    assert.match(
      await refusal(app, 'SELECT * FROM refusals.enqueue($1, $2, $3)', ['mail', 'a\u0000b', Buffer.from('')]),
      /^22021 /,
    );
    assert.equal((await counts(t, 'mail'))?.ready, 0, 'a refusal stored a job');
    // Within the server's limits, above the defaults: taken, as over gRPC.
    const { rows } = await app.query<{ job_id: string }>(
      "SELECT job_id FROM refusals.enqueue('mail', 't', '', $1)",
      [
        {
          idempotency_key: 'k'.repeat(300),
          metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])),
        },
      ],
    );
    assert.equal(await jobExists(t, rows[0]!.job_id), true);
  } finally {
    await app.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('refusals'), []);
});

test('transactions left open after sepp.enqueue: 64 do not make the next wait; a first grouped one holds its queue row; docs/postgres.md finds them and bounds them', async () => {
  const t = await server('held_open');
  const open = await Promise.all(Array.from({ length: 64 }, () => connect()));
  const [next, grouped] = await Promise.all([connect(), connect()]);
  const enqueue = (app: pg.Client, queue = 'mail', options = {}) =>
    app.query(`SELECT job_id FROM held_open.enqueue($1, 'send', ''::bytea, $2)`, [queue, options]);
  const shopApp = {
    ...postgres.cluster.connection(postgres.database),
    user: 'shop_app',
    password: 'shop-app',
  };
  try {
    const pids: number[] = [];
    for (const app of open) {
      await app.query('BEGIN');
      pids.push((await app.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await enqueue(app);
    }
    // 64 shards were the function's before schema 22: the next one waited for one of these to end.
    await next.query(`BEGIN; SET LOCAL lock_timeout = '1s'`);
    await enqueue(next);
    await next.query('COMMIT');
    const idle = (await next.query(docsExample('held-open-find'))).rows.map((row) => row.pid);
    assert.deepEqual(
      pids.filter((pid) => !idle.includes(pid)),
      [],
      'docs/postgres.md’s query finds them',
    );
    await Promise.all(open.map((app, i) => app.query(i % 2 === 0 ? 'COMMIT' : 'ROLLBACK')));
    assert.equal((await counts(t, 'mail'))?.ready, 33);

    // The first grouped job of a queue: its row stays locked until the transaction ends.
    await grouped.query('BEGIN');
    await enqueue(grouped, 'small', { group: 'g' });
    await next.query(`BEGIN; SET LOCAL lock_timeout = '100ms'`);
    await assert.rejects(
      next.query(`UPDATE held_open.queues SET paused = paused WHERE name = 'small'`),
      (error: { code?: string }) => error.code === '55P03',
    );
    await next.query('ROLLBACK');
    await grouped.query('COMMIT');

    // The bounds docs/postgres.md gives the application's role.
    await next.query(`CREATE ROLE shop_app LOGIN PASSWORD '${shopApp.password}'`);
    await next.query(docsExample('held-open-role'));
    const app = await connect(shopApp);
    try {
      const shown = await app.query('SHOW idle_in_transaction_session_timeout; SHOW lock_timeout');
      assert.deepEqual(
        (shown as unknown as pg.QueryResult[]).map((r) => Object.values(r.rows[0])[0]),
        ['30s', '5s'],
      );
    } finally {
      await app.end();
    }
  } finally {
    await Promise.all([...open, next, grouped].map((app) => app.end()));
    await t.dispose();
  }
  assert.deepEqual(await mismatches('held_open'), []);
});

test('jobs waiting on dependencies count toward max_depth and hold their key, as over gRPC', async () => {
  const t = await server('waiting');
  const app = await connect();
  try {
    // A gate that stays unfinished, and jobs waiting on it: two fill `shallow` (max_depth 2),
    // one holds a key in `mail` with unique_while_active.
    const gate = await call(t.client, t.client.enqueue, { job: testJob('mail') });
    const waiting = { dependsOn: [gate.jobId] };
    for (let i = 0; i < 2; i++) await call(t.client, t.client.enqueue, { job: testJob('shallow', waiting) });
    const keyed = await call(t.client, t.client.enqueue, {
      job: testJob('mail', { ...waiting, idempotencyKey: 'order-5', uniqueWhileActive: true }),
    });
    const stateOf = async (jobId: string) => (await call(t.client, t.client.getJob, { jobId })).job?.state;
    assert.equal(await stateOf(keyed.jobId), JobState.WAITING);

    assert.match(
      await refusal(app, "SELECT * FROM waiting.enqueue('shallow', 't', ''::bytea)"),
      /^53400 queue_full: .*queue shallow holds 2 unfinished jobs, its max_depth is 2/,
    );
    const { rows } = await app.query<{ job_id: string; deduplicated: boolean }>(
      `SELECT * FROM waiting.enqueue('mail', 't', ''::bytea,
         '{"idempotency_key": "order-5", "unique_while_active": true}')`,
    );
    assert.deepEqual(rows, [{ job_id: keyed.jobId, deduplicated: true }]);
    assert.equal((await counts(t, 'mail'))?.ready, 1, 'only the gate is ready');
  } finally {
    await app.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('waiting'), []);
});

test('a role with EXECUTE on sepp.enqueue only: enqueues, and reads or writes no table', async () => {
  const t = await server('roles');
  const admin = await connect();
  const password = 'app-password-roles';
  try {
    await admin.query(`CREATE ROLE app_roles LOGIN PASSWORD '${password}'`);
    // Without the grants: no access at all (EXECUTE is revoked from PUBLIC).
    await admin.query('GRANT USAGE ON SCHEMA roles TO app_roles');
    const app = await connect({
      ...postgres.cluster.connection(postgres.database),
      user: 'app_roles',
      password,
    });
    try {
      assert.match(
        await refusal(app, "SELECT * FROM roles.enqueue('mail', 't', ''::bytea)"),
        /^42501 .*permission denied for function enqueue/,
      );
      // The grant docs/postgres.md gives.
      await admin.query('GRANT EXECUTE ON FUNCTION roles.enqueue(text, text, bytea, jsonb) TO app_roles');
      const { id } = await enqueueInTransaction(app, { queue: 'mail', type: 't' }, { schema: 'roles' });
      assert.equal(await jobExists(t, id), true);
      for (const table of [
        'jobs',
        'queues',
        'queue_counts',
        'idempotency_keys',
        'admin_sessions',
        'server_limits',
      ]) {
        assert.match(await refusal(app, `SELECT 1 FROM roles.${table} LIMIT 1`), /^42501 /, table);
      }
      assert.match(await refusal(app, "DELETE FROM roles.jobs WHERE queue = 'mail'"), /^42501 /);
      assert.match(
        await refusal(app, "SELECT roles.enqueue_refuse('22023', 'x', 'y')"),
        /^42501 .*permission denied for function enqueue_refuse/,
      );
      assert.match(
        await refusal(app, "SELECT roles.enqueue_over_server_limit('x', 'y', 'z', 1)"),
        /^42501 .*permission denied for function enqueue_over_server_limit/,
      );
      assert.match(
        await refusal(app, 'SELECT roles.enqueue_counter_shard()'),
        /^42501 .*permission denied for function enqueue_counter_shard/,
      );
      // Every function of the schema, those later migrations add too: the role may run enqueue alone.
      const runnable = await admin.query<{ f: string }>(
        `SELECT p.oid::regprocedure::text AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'roles' AND has_function_privilege('app_roles', p.oid, 'EXECUTE') ORDER BY 1`,
      );
      assert.deepEqual(
        runnable.rows.map((r) => r.f),
        ['roles.enqueue(text,text,bytea,jsonb)'],
      );
      // The fixed search_path: a table the caller's own path puts first is not used.
      await admin.query(
        'CREATE SCHEMA evil; CREATE TABLE evil.jobs (id text); GRANT ALL ON SCHEMA evil TO app_roles',
      );
      await app.query('SET search_path = evil, roles');
      const other = await enqueueInTransaction(app, { queue: 'mail', type: 't' }, { schema: 'roles' });
      assert.equal(await jobExists(t, other.id), true);
      assert.equal((await admin.query('SELECT count(*)::int AS n FROM evil.jobs')).rows[0].n, 0);
    } finally {
      await app.end();
    }
  } finally {
    await admin.end();
    await t.dispose();
  }
});

/** The SQL block after `<!-- example: NAME -->` in docs/postgres.md. */
function docsExample(name: string): string {
  const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'postgres.md'), 'utf8');
  const found = new RegExp(`<!-- example: ${name} -->\\n\`\`\`sql\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(docs);
  assert.ok(found, `docs/postgres.md has the example ${name}`);
  return found[1]!;
}

test("docs/postgres.md's worked example: the order and its receipt job, rolled back and committed", async () => {
  // The docs' schema is `sepp`, and its queue `emails`.
  const t = await startTestServer({ toml: `[queues.emails]\n${storeToml('sepp')}` });
  const app = await connect();
  try {
    await app.query('CREATE SCHEMA shop');
    await app.query('CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, total_cents int)');
    await app.query(docsExample('receipt-rolled-back'));
    const orders = async () =>
      (await app.query('SELECT id FROM shop.orders ORDER BY id')).rows.map((r) => r.id);
    assert.deepEqual(await orders(), []);
    assert.equal((await counts(t, 'emails'))?.ready, 0);
    // The committed block, split before its COMMIT: the job is not there until the commit.
    const committed = docsExample('receipt-committed');
    const [body, commit] = committed.split(/^(?=COMMIT;)/m);
    assert.equal(commit?.trim(), 'COMMIT;');
    await app.query(body!);
    assert.equal((await counts(t, 'emails'))?.ready, 0, 'the job showed before the commit');
    await app.query(commit!);
    assert.deepEqual(await orders(), [42]);
    assert.equal((await counts(t, 'emails'))?.ready, 1);
    const { jobs } = await reserve(t, 'emails');
    assert.deepEqual(
      jobs.map((j) => [j.type, j.idempotencyKey, j.contentType, Buffer.from(j.payload).toString()]),
      [['send_receipt', 'receipt-42', 'application/json', '{"order": 42}']],
    );
  } finally {
    await app.end();
    await t.dispose();
  }
});

test('the Python helper (sepp.pg with psycopg2): rolled back, committed, deduplicated', async () => {
  const t = await server('python');
  const script = `
import os, sys, psycopg2
from sepp.pg import enqueue_in_transaction
conn = psycopg2.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user=os.environ["PGUSER"], dbname=os.environ["DB"])
with conn.cursor() as cur:
    gone = enqueue_in_transaction(cur, "mail", "py", json={"n": 1}, schema="python")
conn.rollback()
with conn, conn.cursor() as cur:
    kept = enqueue_in_transaction(cur, "mail", "py", "text", idempotency_key="py-1", priority=3, schema="python")
with conn, conn.cursor() as cur:
    again = enqueue_in_transaction(cur, "mail", "py", b"", idempotency_key="py-1", schema="python")
try:
    with conn, conn.cursor() as cur:
        enqueue_in_transaction(cur, "mail", "py", priority=10, schema="python")
except psycopg2.Error as error:
    refused = f"{error.pgcode} {error.diag.message_detail}"
print(gone.id, kept.id, again.id, again.deduplicated, refused)
`;
  try {
    const run = spawnSync('/usr/bin/python3', ['-c', script], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        PYTHONPATH: join(import.meta.dirname, '..', '..', 'clients', 'python', 'src'),
        PORT: String(postgres.cluster.port),
        PGUSER: postgres.cluster.user,
        PGPASSWORD: postgres.cluster.password,
        DB: postgres.database,
      },
    });
    assert.equal(run.status, 0, run.stderr);
    const [gone, kept, again, deduplicated, ...refused] = run.stdout.trim().split(' ');
    assert.equal(await jobExists(t, gone!), false);
    assert.equal(await jobExists(t, kept!), true);
    assert.deepEqual([again, deduplicated], [kept, 'True']);
    assert.deepEqual(refused, ['22023', 'invalid_job']);
    const { jobs } = await reserve(t, 'mail');
    assert.deepEqual(
      jobs.map((j) => [j.jobId, j.priority, j.contentType, Buffer.from(j.payload).toString()]),
      [[kept, 3, 'text/plain; charset=utf-8', 'text']],
    );
  } finally {
    await t.dispose();
  }
  assert.deepEqual(await mismatches('python'), []);
});

test('max_depth counts what is committed and the transaction’s own: transactions open at once each fill it (docs/postgres.md)', async () => {
  const t = await server('depthtx');
  const [a, b] = [await connect(), await connect()];
  const enqueue = "SELECT * FROM depthtx.enqueue('shallow', 't', ''::bytea)";
  try {
    for (const c of [a, b]) {
      await c.query('BEGIN');
      for (let i = 0; i < 2; i++) await c.query(enqueue);
      await c.query('SAVEPOINT third');
      assert.match(
        await refusal(c, enqueue),
        /^53400 queue_full: .*holds 2 unfinished jobs/,
        'its own jobs count',
      );
      await c.query('ROLLBACK TO SAVEPOINT third');
    }
    await a.query('COMMIT');
    await b.query('COMMIT');
    assert.equal(
      (await counts(t, 'shallow'))?.ready,
      4,
      'each saw only its own: 2 + 2 past a max_depth of 2',
    );
    assert.match(
      await refusal(a, enqueue),
      /^53400 queue_full: .*holds 4 unfinished jobs, its max_depth is 2/,
    );
  } finally {
    await a.end();
    await b.end();
    await t.dispose();
  }
  assert.deepEqual(await mismatches('depthtx'), []);
});

test('an advisory lock any role may take stalls a server’s writes; docs/postgres.md’s grant to sepp’s role stops it', async () => {
  const admin = await connect();
  const dir = mkdtempSync(join(tmpdir(), 'sepp-locks-'));
  const role = 'sepp_locks';
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, 'sepp-locks-password', { mode: 0o600 });
  // sepp on a role of its own that owns its schema (docs/postgres.md, least privilege), not the superuser.
  await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'sepp-locks-password'`);
  await admin.query(`CREATE SCHEMA locks AUTHORIZATION ${role}`);
  const url = postgres.cluster.urlWithoutPassword(postgres.database).replace(/\/\/[^@/]+@/, `//${role}@`);
  const t = await startTestServer({
    toml:
      `[queues.capped]\nmax_leased = 5\n${queuesToml}\n` +
      `[store]\nkind = "postgres"\nurl = "${url}"\npassword_file = "${passwordFile}"\nschema = "locks"\n`,
  });
  await admin.query("CREATE ROLE app_locks LOGIN PASSWORD 'app-locks-password'");
  await admin.query('GRANT USAGE ON SCHEMA locks TO app_locks');
  await admin.query('GRANT EXECUTE ON FUNCTION locks.enqueue(text, text, bytea, jsonb) TO app_locks');
  const app = await connect({
    ...postgres.cluster.connection(postgres.database),
    user: 'app_locks',
    password: 'app-locks-password',
  });
  // The class of a queue's limit lock (src/store/postgres/limits.ts): the source is public.
  const limitLock = "pg_advisory_lock(x'5e9b'::int, hashtext('capped'))";
  try {
    await call(t.client, t.client.enqueue, { job: testJob('capped') });
    await app.query(`SELECT ${limitLock}`);
    const reserved = reserve(t, 'capped', 1);
    // The server's writer waits for the lock...
    while (
      (
        await admin.query(
          "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = x'5e9b'::int::oid",
        )
      ).rowCount === 0
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // ...and every write of that server with it: an enqueue into another queue.
    let answered = false;
    const other = call(t.client, t.client.enqueue, { job: testJob('mail') }).then(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(answered, false, 'the enqueue into mail waits for the application’s lock');
    await app.query(`SELECT pg_advisory_unlock(x'5e9b'::int, hashtext('capped'))`);
    await Promise.all([reserved, other]);

    // The docs' statements, as a superuser, for this role.
    await admin.query(docsExample('advisory-locks-to-sepp').replace('TO sepp', `TO ${role}`));
    assert.match(
      await refusal(app, `SELECT ${limitLock}`),
      /^42501 .*permission denied for function pg_advisory_lock/,
    );
    assert.match(
      await refusal(app, 'SELECT pg_try_advisory_xact_lock(24219, 1)'),
      /^42501 .*permission denied for function pg_try_advisory_xact_lock/,
    );
    // sepp goes on: its servers' locks, and sepp.enqueue's (it runs as sepp's role).
    const { id } = await enqueueInTransaction(
      app,
      { queue: 'capped', type: 't', idempotencyKey: 'k-1' },
      { schema: 'locks' },
    );
    assert.equal(await jobExists(t, id), true);
    assert.equal((await reserve(t, 'capped', 1)).jobs.length, 1);
  } finally {
    // Function privileges are the database's: the other tests' roles get theirs back.
    await admin.query(
      docsExample('advisory-locks-to-sepp')
        .replace('TO sepp', `TO ${role}`)
        .replace('REVOKE', 'GRANT')
        .replace('FROM PUBLIC', 'TO PUBLIC'),
    );
    await app.end();
    await admin.end();
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

const jobsOf = (m: WorkResponse) =>
  m.kind?.$case === 'job' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.jobs : [];
const stopsOf = (m: WorkResponse) => [
  ...(m.kind?.$case === 'cancel' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.cancels : []),
  ...(m.kind?.$case === 'timeout' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.timeouts : []),
];

test('a NOTIFY any role may send on the servers’ channel neither cancels nor times out a running job', async () => {
  // Two servers on one schema: a cancel through `a` reaches the worker on `b` by the channel.
  const [a, b] = [await server('forged'), await server('forged')];
  const admin = await connect();
  await admin.query("CREATE ROLE app_forged LOGIN PASSWORD 'app-forged-password'");
  const app = await connect({
    ...postgres.cluster.connection(postgres.database),
    user: 'app_forged',
    password: 'app-forged-password',
  });
  try {
    const forged = (await call(a.client, a.client.enqueue, { job: testJob('mail') })).jobId;
    const real = (await call(a.client, a.client.enqueue, { job: testJob('mail') })).jobId;
    const worker = openWork(b.client);
    worker.write(subscribeMessage(['mail'], { workerId: 'holder', leaseDurationMs: 60_000 }));
    worker.write(creditMessage(2));
    await collect(worker, (seen) => seen.flatMap(jobsOf).length === 2);
    const told = collect(worker, (seen) => seen.flatMap(stopsOf).some((n) => n.jobId === real));
    // A role with no grant at all sends what a server would (signals.ts), for the running job.
    for (const payload of [
      { s: 'forged', c: [[forged, 'mail', 1, null, 'key:ops', Date.now()]] },
      { s: 'forged', t: [[forged, 'mail', 1, null, Date.now()]] },
    ]) {
      await app.query('SELECT pg_notify($1, $2)', ['sepp_forged', JSON.stringify(payload)]);
    }
    // A real cancel through `a`, signalled after the forged ones: it reaches the worker, they do not.
    await call(a.client, a.client.cancelJob, { jobId: real });
    const stops = (await told).flatMap(stopsOf);
    assert.deepEqual(
      stops.map((n) => n.jobId),
      [real],
    );
    assert.equal((await call(a.client, a.client.getJob, { jobId: forged })).job?.state, JobState.LEASED);
    worker.cancel();
  } finally {
    await app.end();
    await admin.end();
    await a.dispose();
    await b.dispose();
  }
});
