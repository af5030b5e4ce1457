/**
 * The PostgreSQL store's reads wait for a read connection in a bounded queue
 * (store.max_waiting_reads, src/store/postgres/readers.ts): with its one read connection
 * held (a read blocked on a table an outside transaction locked), a flood of GetJob calls
 * gets at most that many waiting and the rest RESOURCE_EXHAUSTED at once, an admin listing
 * 429 with Retry-After, one `store.reads_refused` line in the log, /readyz still ready; enqueues (the writer's
 * connection) go on meanwhile, and once the connection is free every waiting read answers
 * and new reads are served again.
 *
 * The same server's `server.started` line shows where its store is — user, host, port,
 * database and the URL's parameters — and not the password, which the run's secret check
 * (tests/helpers/secret-log.ts) looks for in every captured line.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { createLogger } from '../../src/telemetry/logger.ts';
import { answered, within } from '../helpers/bounded.ts';
import { useCluster } from '../helpers/postgres.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { waitFor } from '../helpers/steady-load.ts';

const postgres = useCluster('readq');
const schema = 'readq';
const maxWaitingReads = 4;
const lines: Record<string, unknown>[] = [];
let server: TestServer | undefined;
let started: Promise<TestServer> | undefined;

/** The server, started at the first test (the cluster's own `before` is not waited for by another). */
function serverUp(): Promise<TestServer> {
  started ??= (async () => {
    const { cluster, database } = postgres;
    // Parameters in the URL's query: they are shown in the start line, as the user is.
    const url = `${cluster.urlWithoutPassword(database)}?sslmode=disable&application_name=sepp_readq`;
    server = await within(
      startTestServer({
        toml:
          `[store]\nkind = "postgres"\nurl = "${url}"\npassword_file = "${cluster.passwordFile}"\n` +
          `schema = "${schema}"\npool_size = 2\nmax_waiting_reads = ${maxWaitingReads}\n`,
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

const failure = (reply: Promise<unknown>) =>
  reply.then(
    () => undefined,
    (error: ServiceError) => error,
  );

test('a flood of reads past store.max_waiting_reads is refused at once; writes go on; reads come back', async () => {
  const { client, metricsUrl } = await serverUp();
  const locker = await postgres.client();
  const { jobId } = await call(client, client.enqueue, { job: testJob('reads') });
  const getJob = () => call(client, client.getJob, { jobId });

  // The one read connection (pool_size = 2: one writer, one reader) is held by a read of the
  // audit log, which waits for the outside transaction's lock; enqueues never touch that table.
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${schema}.audit_log IN ACCESS EXCLUSIVE MODE`);
  const held = call(client, client.listAuditEntries, {
    pageSize: 10,
    pageToken: '',
    actor: '',
    action: '',
    target: '',
  });
  await waitForLockWait();
  const flood = Array.from({ length: 20 }, () => getJob());
  const settledAtOnce: (ServiceError | undefined)[] = [];
  const outcomes = flood.map((reply) =>
    failure(reply).then((error) => {
      settledAtOnce.push(error);
      return error;
    }),
  );
  let refused: ServiceError[] = [];
  try {
    // At most max_waiting_reads reads wait (the server's own once-a-second reads may take some
    // of those places); every other GetJob is answered at once.
    await waitFor(
      () => settledAtOnce.length >= flood.length - maxWaitingReads,
      `all but ${maxWaitingReads} of the 20 GetJob calls answered`,
      20_000,
    );
    const answeredAtOnce = [...settledAtOnce];
    refused = answeredAtOnce.filter((e): e is ServiceError => e !== undefined);
    assert.equal(refused.length, answeredAtOnce.length, 'none of them was served: the connection is held');
    for (const error of refused) {
      assert.equal(error.code, status.RESOURCE_EXHAUSTED, error.details);
      assert.match(error.details, /read connection.*busy.*store\.max_waiting_reads.*retry shortly/);
    }

    // The admin API's queue list is refused the same way: 429 with Retry-After.
    const adminUrl = metricsUrl.replace(/\/metrics$/, '');
    const listing = await fetch(`${adminUrl}/api/v1/queues`);
    assert.equal(listing.status, 429, await listing.text());
    assert.equal(listing.headers.get('retry-after'), '1');
    // Busy is not down: a load balancer keeps the server (its writes go on).
    const ready = await fetch(`${adminUrl}/readyz`);
    assert.equal(ready.status, 200, await ready.text());

    // Writes go on: the writer has a connection of its own.
    const more = await answered(call(client, client.enqueue, { job: testJob('reads') }), 'an enqueue');
    assert.ok(more.jobId);

    const logged = lines.filter((l) => l.event === 'store.reads_refused');
    assert.equal(logged.length, 1, 'one line for the flood, not one per call');
    assert.match(String(logged[0]?.detail), /store\.max_waiting_reads/);
  } finally {
    await locker.query('COMMIT');
  }
  // The held read and the reads that waited answer once the connection is free.
  await answered(held, 'the held audit read');
  const waited = (await answered(Promise.all(outcomes), 'the GetJob calls that waited')).filter(
    (e) => e === undefined,
  );
  assert.equal(waited.length, flood.length - refused.length);
  assert.ok(waited.length <= maxWaitingReads, `${waited.length} waited`);
  assert.equal((await answered(getJob(), 'a GetJob after the flood')).job?.jobId, jobId);
});

test('server.started shows the store as user@host:port/database?parameters, never the password', async () => {
  await serverUp();
  const started = lines.find((l) => l.event === 'server.started');
  const { cluster, database } = postgres;
  assert.equal(
    started?.store_url,
    `${cluster.user}@${cluster.host}:${cluster.port}/${database}?sslmode=disable&application_name=sepp_readq`,
  );
  assert.equal(started?.store_schema, schema);
  assert.ok(!JSON.stringify(lines).includes(cluster.password), 'no line holds the password');
});
