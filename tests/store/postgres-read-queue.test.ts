/**
 * The PostgreSQL store's reads wait for a read connection in a bounded queue
 * (store.max_waiting_reads, src/store/postgres/readers.ts), of which each API key has a share
 * (store.max_waiting_reads_per_key, src/engine/read-shares.ts). With the server's one read
 * connection held (a read blocked on a table an outside transaction locked): one key's flood
 * of GetJob gets its share waiting and the rest RESOURCE_EXHAUSTED at once (its GET over the
 * HTTP API 429), another key's read still waits and is served; an admin user's flood of the
 * admin API's reads gets that user's share the same way (429 beyond it), another user's read
 * still waits; past the whole queue every read is refused, the admin API's queue list with 429
 * and Retry-After, in one
 * `store.reads_refused` log line, the refusals counted by reason in `/metrics`; /readyz
 * stays ready and enqueues (the writer's connection) go on. Once the connection is free
 * every waiting read answers.
 *
 * The same server's `server.started` line shows where its store is — user, host, port,
 * database and the URL's parameters — and not the password, which the run's secret check
 * (tests/helpers/secret-log.ts) looks for in every captured line.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { hashPassword } from '../../src/admin/password.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { password, testScrypt } from '../helpers/admin.ts';
import { answered, within } from '../helpers/bounded.ts';
import { useCluster } from '../helpers/postgres.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { apiKeysToml, call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { waitFor } from '../helpers/steady-load.ts';

const postgres = useCluster('readq');
const schema = 'readq';
/*
 * The server's own reads (its once-a-second looks at the queues and the tables' statistics)
 * may wait too, a few at most: the queue is large enough that they never decide an outcome
 * the test counts on.
 */
const maxWaitingReads = 12;
const perKey = 3;
const names = ['a', 'b', 'c', 'd', 'e'] as const;
const keys = Object.fromEntries(names.map((n) => [n, randomBytes(24).toString('hex')])) as Record<
  (typeof names)[number],
  string
>;
const lines: Record<string, unknown>[] = [];
/** Admin users, each with a share of the read queue of their own. */
const adminUsers = ['ann', 'bob'] as const;
let server: TestServer | undefined;
let started: Promise<TestServer> | undefined;

/** The server, started at the first test (the cluster's own `before` is not waited for by another). */
function serverUp(): Promise<TestServer> {
  started ??= (async () => {
    const { cluster, database } = postgres;
    // Parameters in the URL's query: they are shown in the start line, as the user is.
    const url = `${cluster.urlWithoutPassword(database)}?sslmode=disable&application_name=sepp_readq`;
    const passwordHash = await hashPassword(password, testScrypt);
    server = await within(
      startTestServer({
        http: true,
        toml:
          apiKeysToml(names.map((name) => ({ name, role: 'admin' as const, key: keys[name] }))) +
          adminUsers
            .map(
              (name) =>
                `[[admin.users]]\nname = "${name}"\nrole = "viewer"\npassword_hash = "${passwordHash}"\n`,
            )
            .join('') +
          `[store]\nkind = "postgres"\nurl = "${url}"\npassword_file = "${cluster.passwordFile}"\n` +
          `schema = "${schema}"\npool_size = 2\nmax_waiting_reads = ${maxWaitingReads}\n` +
          `max_waiting_reads_per_key = ${perKey}\n`,
        logger: createLogger({
          level: 'info',
          format: 'json',
          write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
        }),
      }),
      'the server on PostgreSQL started',
      60_000,
    );
    return server;
  })();
  return started;
}

after(async () => {
  await server?.dispose();
});

function as(name: (typeof names)[number]): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${keys[name]}`);
  return metadata;
}

/** Until a backend of the test's database waits for a lock: the audit read holds the connection. */
async function waitForLockWait(): Promise<void> {
  const sql =
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'";
  await within(
    (async () => {
      while ((await postgres.cluster.query<{ n: number }>(sql, [postgres.database])).rows[0]?.n !== 1) {
        await new Promise((r) => setTimeout(r, 20));
      }
    })(),
    'the audit read waiting for the lock',
    20_000,
  );
}

/** Calls that settle, each as undefined (answered) or its error, and those settled so far. */
function tracked(replies: Promise<unknown>[]) {
  const settled: (ServiceError | undefined)[] = [];
  const all = replies.map((reply) =>
    reply.then(
      () => undefined,
      (error: ServiceError) => error,
    ),
  );
  for (const outcome of all) void outcome.then((e) => settled.push(e));
  return { settled, all: Promise.all(all) };
}

/** Logs `user` in to the admin API; answers its session cookie. */
async function adminLogin(adminUrl: string, user: (typeof adminUsers)[number]): Promise<string> {
  const answer = await fetch(`${adminUrl}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, password }),
  });
  assert.equal(answer.status, 200, await answer.text());
  return (answer.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

const shareRefusal =
  /^a has 3 read calls in flight .*; its share is 3 \(store\.max_waiting_reads_per_key\).*retry shortly/;
const queueRefusal =
  /every read connection .* busy .*\(store\.max_waiting_reads, store\.pool_size\).*retry shortly/;

test("one key's flood gets its share, another key's read still waits; past the queue reads are refused; writes go on", async () => {
  const { client, metricsUrl, httpUrl } = await serverUp();
  const adminUrl = metricsUrl.replace(/\/metrics$/, '');
  const locker = await postgres.client();
  const { jobId } = await call(client, client.enqueue, { job: testJob('reads') }, as('a'));
  const getJob = (name: (typeof names)[number]) => call(client, client.getJob, { jobId }, as(name));
  // One GetJob answered first: until a method has answered once its answers are guessed at the
  // largest size, and a connection runs only four such calls at once (src/rpc/unsent-answers.ts).
  await getJob('b');
  const cookies = { ann: await adminLogin(adminUrl, 'ann'), bob: await adminLogin(adminUrl, 'bob') };
  const adminGet = (user: (typeof adminUsers)[number], path: string) =>
    fetch(`${adminUrl}${path}`, { headers: { cookie: cookies[user] } });

  // The one read connection (pool_size = 2: one writer, one reader) is held by a read of the
  // audit log, which waits for the outside transaction's lock; enqueues never touch that table.
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${schema}.audit_log IN ACCESS EXCLUSIVE MODE`);
  const held = call(
    client,
    client.listAuditEntries,
    { pageSize: 10, pageToken: '', actor: '', action: '', target: '' },
    as('e'),
  );
  let waiting: Promise<unknown>[] = [held];
  try {
    await waitForLockWait();
    // Key a floods: its share waits, every other call is refused at once.
    const a = tracked(Array.from({ length: 10 }, () => getJob('a')));
    await waitFor(() => a.settled.length >= 10 - perKey, 'the GetJob calls of a beyond its share', 20_000);
    assert.equal(a.settled.length, 10 - perKey, 'a has exactly its share waiting');
    for (const error of a.settled) {
      assert.equal(error?.code, status.RESOURCE_EXHAUSTED, error?.details);
      assert.match(error.details, shareRefusal);
    }
    const overHttp = await fetch(`${httpUrl}/v1/jobs/${jobId}`, {
      headers: { authorization: `Bearer ${keys.a}` },
    });
    assert.equal(overHttp.status, 429, await overHttp.text());
    assert.equal(overHttp.headers.get('retry-after'), '1');
    // An outcome wait's read of the job counts too (not the wait itself): it waited in the queue
    // past a's share, uncounted, up to as many as a may hold event subscriptions (250).
    const outcome = await answered(
      fetch(`${httpUrl}/v1/jobs/${jobId}/outcome?waitMs=0`, {
        headers: { authorization: `Bearer ${keys.a}` },
      }),
      "a's outcome wait",
      10_000,
    );
    assert.equal(outcome.status, 429, await outcome.text());

    // GetServerInfo reads nothing of the store: it is never refused for it.
    const info = await answered(call(client, client.getServerInfo, {}, as('a')), "a's GetServerInfo");
    assert.equal(info.store?.kind, 'postgres');

    // Key b's read still finds room: it waits, and is served once the connection is free.
    const b = tracked([getJob('b')]);
    // An admin user has a share of their own, as a key has: ann's flood (a script, many tabs) gets
    // her share waiting and the rest 429 at once; bob's read still waits.
    const annReads = Array.from({ length: perKey + 2 }, () => adminGet('ann', `/api/v1/jobs/${jobId}`));
    const annRefused: Response[] = [];
    for (const reply of annReads) void reply.then((r) => r.status !== 200 && annRefused.push(r));
    await waitFor(() => annRefused.length >= 2, "ann's reads beyond her share", 20_000);
    for (const refused of annRefused) {
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '1');
      const { error } = (await refused.json()) as { error: { code: string; message: string } };
      assert.equal(error.code, 'resource_exhausted');
      assert.match(
        error.message,
        /^admin user ann has 3 read calls in flight .*; its share is 3 \(store\.max_waiting_reads_per_key\)/,
      );
    }
    const bobRead = adminGet('bob', `/api/v1/jobs/${jobId}`);
    // Keys c, d and e flood too: together past store.max_waiting_reads, so some are refused by the queue.
    const flood = tracked(
      ['c', 'd', 'e'].flatMap((name) => Array.from({ length: 4 }, () => getJob(name as 'c'))),
    );
    waiting = [held, a.all, b.all, flood.all, Promise.all(annReads), bobRead];
    await waitFor(
      () => flood.settled.some((e) => e !== undefined && queueRefusal.test(e.details)),
      'a refusal by the full queue',
      20_000,
    );
    assert.equal(b.settled.length, 0, "b's read waits");
    assert.ok(flood.settled.every((e) => e?.code === status.RESOURCE_EXHAUSTED));

    // The queue is full: the admin API's queue list is refused too, 429 with Retry-After, for a
    // user below their share.
    const listing = await adminGet('bob', '/api/v1/queues');
    assert.equal(listing.status, 429);
    assert.equal(listing.headers.get('retry-after'), '1');
    assert.match(((await listing.json()) as { error: { message: string } }).error.message, queueRefusal);
    // Busy is not down: a load balancer keeps the server, and its writes go on.
    const ready = await fetch(`${adminUrl}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    const more = await answered(
      call(client, client.enqueue, { job: testJob('reads') }, as('c')),
      'an enqueue',
    );
    assert.ok(more.jobId);

    // What an operator sees: the queue full in the gauge, the refusals counted by reason.
    const { samples } = await scrape(metricsUrl);
    assert.equal(sampleValue(samples, 'sepp_store_reads_waiting'), maxWaitingReads);
    const refusedBy = (reason: string) =>
      sampleValue(samples, 'sepp_store_reads_refused_total', { sepp_refusal_reason: reason }) ?? 0;
    assert.ok(refusedBy('key_share') >= 10 - perKey + 1, `key_share ${refusedBy('key_share')}`);
    assert.ok(refusedBy('queue_full') >= 2, `queue_full ${refusedBy('queue_full')}`);

    const logged = lines.filter((l) => l.event === 'store.reads_refused');
    assert.equal(logged.length, 1, 'one line for the flood, not one per call');
    assert.match(String(logged[0]?.detail), /store\.max_waiting_reads/);
  } finally {
    await locker.query('COMMIT');
  }
  // The held read and the reads that waited answer once the connection is free.
  const [, aAll, bAll, , annAll, bob] = (await answered(Promise.all(waiting), 'the reads that waited')) as [
    unknown,
    (ServiceError | undefined)[],
    (ServiceError | undefined)[],
    unknown,
    Response[],
    Response,
  ];
  assert.equal(aAll.filter((e) => e === undefined).length, perKey, "a's share was served");
  assert.deepEqual(bAll, [undefined], "b's read was served");
  assert.equal(annAll.filter((r) => r.status === 200).length, perKey, "ann's share was served");
  assert.equal(bob.status, 200, "bob's read was served");
  assert.equal((await answered(getJob('a'), 'a GetJob after the flood')).job?.jobId, jobId);
});

test('server.started shows the store as user@host:port/database?parameters, never the password', async () => {
  await serverUp();
  const startedLine = lines.find((l) => l.event === 'server.started');
  const { cluster, database } = postgres;
  assert.equal(
    startedLine?.store_url,
    `${cluster.user}@${cluster.host}:${cluster.port}/${database}?sslmode=disable&application_name=sepp_readq`,
  );
  assert.equal(startedLine?.store_schema, schema);
  assert.ok(!JSON.stringify(lines).includes(cluster.password), 'no line holds the password');
});
