/**
 * The PostgreSQL writer's pipelined batches and its key locks (src/store/postgres/writer.ts,
 * keys.ts), on a real cluster: what was sent ahead of its answer and failed fails the whole
 * batch (nothing of it acknowledged, nothing committed), a unit whose key another
 * transaction holds is run again first in the next batch, answered once that one ended,
 * and the count deltas, written once per batch, count exactly when units of the batch read
 * counts and fail: a unit reads its own and those of the units before it, and a failed
 * unit takes back its own only, even after a read of its wrote the earlier units' inside
 * its savepoint. Statements whose rows come as arrays are parsed by each answer's column types,
 * and the driver's arrays are emptied once mapped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { resume } from '../../src/store/op.ts';
import { connectionOf, connectPostgres } from '../../src/store/postgres/connect.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { arrayRows, arrayStatement, type Connection, plannedEachTime } from '../../src/store/postgres/sql.ts';
import { type BatchTrace, writerTrace } from '../../src/store/postgres/writer.ts';
import { StorageFailure, type Store } from '../../src/store/store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('writer');

async function openStore(schema: string): Promise<Store> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema));
  await store.start();
  return store;
}

const counted = async (schema: string, queue: string) =>
  Number(
    (
      await (
        await postgres.client()
      ).query<{ n: string }>(
        `SELECT coalesce(sum(jobs), 0)::text AS n FROM ${schema}.queue_counts WHERE queue = $1`,
        [queue],
      )
    ).rows[0]?.n,
  );

test('a count delta sent ahead that fails fails its whole batch: nothing committed, every unit refused', async () => {
  const store = await openStore('ahead');
  try {
    // Count deltas are written after the unit's statements, ahead of their answer.
    await (
      await postgres.client()
    ).query(`CREATE FUNCTION ahead.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.queue = 'poison' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
    await (await postgres.client()).query(
      'CREATE TRIGGER refuse BEFORE INSERT ON ahead.queue_counts FOR EACH ROW EXECUTE FUNCTION ahead.refuse()',
    );
    const adjust = (queue: string) =>
      store.write(function* (tx) {
        yield* tx.counts.adjust({ queue, from: null, to: 'ready', jobs: 1 });
        return queue;
      });
    // Submitted in one turn: one batch, the poisoned unit between two others; then one alone, last.
    const answers = await Promise.allSettled([adjust('fine'), adjust('poison'), adjust('also-fine')]);
    assert.deepEqual(
      answers.map((a) => a.status === 'rejected' && a.reason instanceof StorageFailure),
      [true, true, true],
    );
    const last = await Promise.allSettled([adjust('fine'), adjust('poison')]);
    assert.ok(last.every((a) => a.status === 'rejected' && a.reason instanceof StorageFailure));
    assert.deepEqual([await counted('ahead', 'fine'), await counted('ahead', 'also-fine')], [0, 0]);
    // The writer goes on: the next batch connects again and commits.
    assert.equal(await adjust('fine'), 'fine');
    assert.equal(await counted('ahead', 'fine'), 1);
  } finally {
    await store.close();
  }
});

test('a unit whose key another transaction holds is answered after it, from the next batch; the rest of its batch is not held', async () => {
  const store = await openStore('busy');
  const holder = new pg.Client(postgres.cluster.connection(postgres.database));
  await holder.connect();
  try {
    // The lock the SQL function enqueue takes for (queue q, key k), held by another transaction.
    await holder.query('BEGIN');
    await holder.query(`SELECT pg_advisory_xact_lock(24219, hashtext('q' || E'\\n' || 'k'))`);
    const order: string[] = [];
    const plain = store.write(function* (tx) {
      // A statement of its own: the transaction has sent something when the keyed unit comes.
      yield* tx.keys.remembered({ queue: 'q', key: 'other' });
      yield* tx.counts.adjust({ queue: 'q', from: null, to: 'ready', jobs: 1 });
      order.push('plain');
    });
    const keyed = store.write(function* (tx) {
      assert.ok(tx.keys.lock !== undefined, 'the PostgreSQL store locks keys');
      yield* tx.keys.lock([{ queue: 'q', key: 'k' }]);
      order.push('keyed');
      return 'keyed';
    });
    await plain;
    // The keyed unit was second in its batch: it did not wait there, so the plain unit committed.
    assert.deepEqual(order, ['plain']);
    assert.equal(await counted('busy', 'q'), 1);
    // First in the next batch it waits for the lock, and is answered once the holder ends.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(order, ['plain']);
    await holder.query('COMMIT');
    assert.equal(await keyed, 'keyed');
    assert.deepEqual(order, ['plain', 'keyed']);
  } finally {
    await holder.end();
    await store.close();
  }
});

/** The committed count of (queue, state), summed over the shards. */
const committed = async (schema: string, queue: string, state: string) =>
  Number(
    (
      await (
        await postgres.client()
      ).query<{ n: string }>(
        `SELECT coalesce(sum(jobs), 0)::text AS n FROM ${schema}.queue_counts WHERE queue = $1 AND state = $2`,
        [queue, state],
      )
    ).rows[0]?.n,
  );

class Refused extends Error {}

test('a batch counts every unit that succeeded, and reads inside it see the units before', async () => {
  const store = await openStore('reads');
  try {
    const adjust = (jobs: number, read: boolean, fail: boolean) =>
      store.write(function* (tx) {
        yield* tx.counts.adjust({ queue: 'q', from: null, to: 'ready', jobs });
        const seen = read ? yield* tx.counts.inState({ queue: 'q', state: 'ready' }) : undefined;
        if (fail) throw new Refused(`unit of ${jobs} refused after reading ${seen}`);
        return seen;
      });
    // Submitted in one turn: one batch. The second unit reads (writing the first's deltas
    // inside its savepoint) and fails; the third reads what the first left, and succeeds.
    const answers = await Promise.allSettled([
      adjust(1, false, false),
      adjust(2, true, true),
      adjust(4, true, false),
      adjust(8, false, true),
      adjust(16, false, false),
    ]);
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)),
      [
        undefined,
        'unit of 2 refused after reading 3',
        5,
        'unit of 8 refused after reading undefined',
        undefined,
      ],
    );
    assert.equal(await committed('reads', 'q', 'ready'), 1 + 4 + 16);
    // And in the next batches, from what was committed.
    assert.equal(await adjust(32, true, false), 53);
    await assert.rejects(adjust(64, true, true), /unit of 64 refused after reading 117/);
    assert.equal(await committed('reads', 'q', 'ready'), 53);
  } finally {
    await store.close();
  }
});

test("a batch's first unit that fails goes back to its savepoint; the rest of the batch commits", async () => {
  const store = await openStore('first');
  try {
    const adjust = (jobs: number, fail: boolean) =>
      store.write(function* (tx) {
        yield* tx.counts.adjust({ queue: 'q', from: null, to: 'ready', jobs });
        // A read writes the unit's deltas inside its savepoint, so the failure has something to undo.
        const seen = yield* tx.counts.inState({ queue: 'q', state: 'ready' });
        if (fail) throw new Refused(`unit of ${jobs} refused after reading ${seen}`);
        return seen;
      });
    // Submitted in one turn: one batch, its first unit refused.
    const answers = await Promise.allSettled([adjust(2, true), adjust(4, false), adjust(8, false)]);
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)),
      ['unit of 2 refused after reading 2', 4, 12],
    );
    assert.equal(await committed('first', 'q', 'ready'), 12);
  } finally {
    await store.close();
  }
});

test('units of one batch that change the same counts commit them summed (one row each in the write), whatever the text', async () => {
  const store = await openStore('onewrite');
  try {
    const adjust = (queue: string, from: string | null, to: string) =>
      store.write(function* (tx) {
        yield* tx.counts.adjust({ queue, from, to, jobs: 1 });
      });
    await adjust('warm', null, 'ready');
    const before = await committed('onewrite', 'a', 'ready');
    await Promise.all([
      adjust('a', null, 'ready'),
      adjust('a', null, 'ready'),
      adjust('b', null, 'ready'),
      adjust('a', 'ready', 'leased'),
      adjust('a', null, 'ready'),
      // Text the store writes as an array literal itself (connect.ts): quotes, backslashes, commas.
      adjust('q"\\,{} é', null, 'ready'),
      adjust('\\"', null, 'ready'),
    ]);
    assert.deepEqual(
      [
        (await committed('onewrite', 'a', 'ready')) - before,
        await committed('onewrite', 'a', 'leased'),
        await committed('onewrite', 'b', 'ready'),
        await committed('onewrite', 'q"\\,{} é', 'ready'),
        await committed('onewrite', '\\"', 'ready'),
      ],
      [2, 1, 1, 1, 1],
    );
  } finally {
    await store.close();
  }
});

test("the writer's trace (bench/pg-drain-profile.ts, pg-chain.ts) hears of each batch: its units, queries, waits and times", async () => {
  const store = await openStore('trace');
  const batches: BatchTrace[] = [];
  try {
    const read = () =>
      store.write(function* (tx) {
        return yield* tx.counts.inState({ queue: 'q', state: 'ready' });
      });
    await read();
    writerTrace.sink = (trace) => batches.push(trace);
    // Three units in one turn: one batch, a statement each; then one more batch of one.
    await Promise.all([read(), read(), read()]);
    await read();
    writerTrace.sink = undefined;
    await read();
    assert.deepEqual(
      batches.map((b) => [b.units, b.statements, b.awaited, b.commands]),
      [
        // BEGIN, SAVEPOINT, RELEASE + SAVEPOINT twice, COMMIT: the writer's own queries.
        [3, 3, 3, 5],
        [1, 1, 1, 2],
      ],
    );
    for (const b of batches)
      for (const ms of [b.unitsMs, b.commitMs, b.idleBeforeMs, b.awaitedMs]) assert.ok(ms >= 0);
    for (const b of batches) assert.ok(b.awaitedMs <= b.unitsMs);
  } finally {
    writerTrace.sink = undefined;
    await store.close();
  }
});

test("array-row statements: rows parsed by each answer's column types, errors as before", async () => {
  // A connection made as the store makes its own (its int8 parser included).
  const client = await connectPostgres(postgres.cluster.storeOptions(postgres.database, 'public'), () => {});
  try {
    const c = connectionOf(client, undefined);
    const typed = arrayStatement(
      "SELECT $1::bigint AS n, $2::bytea AS b, NULL::text AS t, 'x'::text AS s, 7::integer AS i",
    );
    for (const n of [1, 2]) {
      const { rows } = await c.send(typed, [n, Buffer.from([n, 255])]);
      assert.deepEqual(rows, [[n, Buffer.from([n, 255]), null, 'x', 7]]);
    }
    // arrayRows maps each row, then empties the driver's array of it (sql.ts: its strings die young).
    let driverRows: unknown[][] = [];
    const watched: Connection = {
      ...c,
      send: async (s, values) => {
        const result = await c.send(s, values);
        driverRows = result.rows;
        return result;
      },
    };
    const mapped = await resume(
      arrayRows(watched, typed, [3, Buffer.from([3])], (r) => ({ n: r[0], s: r[3], t: r[2] })),
    );
    assert.deepEqual(mapped, [{ n: 3, s: 'x', t: null }]);
    assert.deepEqual(driverRows, [[]]);
    // One statement whose columns change type between answers (planned each time): parsed as each says.
    await client.query('CREATE TABLE array_rows (a integer); INSERT INTO array_rows VALUES (1), (2)');
    const all = plannedEachTime('SELECT a FROM array_rows ORDER BY a', 'array');
    assert.deepEqual((await c.send(all, [])).rows, [[1], [2]]);
    await client.query('ALTER TABLE array_rows ALTER a TYPE text');
    assert.deepEqual((await c.send(all, [])).rows, [['1'], ['2']]);
    // A statement that fails rejects with the database's error; the connection goes on.
    const failing = arrayStatement('SELECT 1 / $1::integer AS q');
    await assert.rejects(c.send(failing, [0]), (error: Error & { code?: string }) => error.code === '22012');
    assert.deepEqual((await c.send(failing, [1])).rows, [[1]]);
  } finally {
    await client.end();
  }
});

test('a table whose live rows more than doubled since its last ANALYZE is analyzed, once, and its plans made again', async () => {
  const store = new PostgresStore({
    ...postgres.cluster.storeOptions(postgres.database, 'grown'),
    statisticsIntervalMs: 0,
  });
  // The file's shared client: the PREPAREd probe below lives in its session.
  const admin = await postgres.client();
  await store.start();
  try {
    const refresh = () => store.refreshStatistics();
    const insert = async (from: number, to: number) => {
      // A connection of its own: its counts reach the statistics when it ends.
      const client = new pg.Client(postgres.cluster.connection(postgres.database));
      await client.connect();
      await client.query(
        `INSERT INTO grown.jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms)
         SELECT 'j' || g, 'q', 't', 'ready', 0, '\\x00', 'x', 3, 0, 0 FROM generate_series($1::int, $2::int) g`,
        [from, to],
      );
      await client.end();
    };
    const analyzed = async () =>
      (
        await admin.query<{ n: string; tuples: number }>(
          `SELECT s.analyze_count::text AS n, c.reltuples AS tuples FROM pg_stat_user_tables s
             JOIN pg_class c ON c.oid = s.relid WHERE s.schemaname = 'grown' AND s.relname = 'jobs'`,
        )
      ).rows[0];
    // A prepared statement whose generic plan is made while jobs is empty (as the store's are).
    await admin.query(
      'PREPARE probe(text[]) AS SELECT count(*) FROM grown.jobs WHERE id = ANY($1) AND cancelled_at_ms IS NULL',
    );
    const plan = async () => {
      const { rows } = await admin.query(`EXPLAIN EXECUTE probe('{j1,j2,j3}')`);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    };
    for (let i = 0; i < 6; i++) await admin.query(`EXECUTE probe('{j1,j2,j3}')`);
    assert.deepEqual(await refresh(), [], 'an empty table: nothing to analyze');
    await insert(1, 300);
    assert.deepEqual(await refresh(), [], 'fewer new rows than the least worth an ANALYZE');
    await insert(301, 20_000);
    assert.match(await plan(), /Seq Scan/, 'the plan made while the table was empty reads it whole');
    assert.deepEqual(await refresh(), ['jobs']);
    assert.deepEqual(await analyzed(), { n: '1', tuples: 20_000 });
    assert.doesNotMatch(await plan(), /Seq Scan/, 'planned again from the analyzed table: the id index');
    assert.deepEqual(await refresh(), [], 'analyzed: nothing until it doubles again');
    await insert(20_001, 40_000);
    assert.deepEqual(await refresh(), [], 'not more than doubled');
  } finally {
    await admin.query('DEALLOCATE ALL');
    await store.close();
  }
});

test("a failed look at the statistics is told once, and again only after one worked (the server's store.statistics_failed)", async () => {
  const admin = await postgres.client();
  // A role of its own, whose right to read the statistics this test takes away and gives back.
  const password = 'looker-password';
  await admin.query(`CREATE ROLE looker LOGIN PASSWORD '${password}'`);
  await admin.query(`GRANT CREATE ON DATABASE "${postgres.database}" TO looker`);
  const deny = () => admin.query('REVOKE EXECUTE ON FUNCTION pg_stat_get_live_tuples(oid) FROM PUBLIC');
  const allow = () => admin.query('GRANT EXECUTE ON FUNCTION pg_stat_get_live_tuples(oid) TO PUBLIC');
  const options = postgres.cluster.storeOptions(postgres.database, 'looks');
  const url = new URL(options.url);
  url.username = 'looker';
  const failures: unknown[] = [];
  const store = new PostgresStore({
    ...options,
    url: url.toString(),
    password,
    statisticsIntervalMs: 5,
    onStatisticsFailed: (error) => failures.push(error),
  });
  /** Real time: the store looks every 5 ms on a timer of its own. */
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const until = async (what: string, done: () => boolean) => {
    for (let waited = 0; !done(); waited += 10) {
      assert.ok(waited < 10_000, `waited 10 s for ${what}`);
      await pause(10);
    }
  };
  try {
    await store.start();
    await pause(60);
    assert.deepEqual(failures, [], 'the looks work');
    await deny();
    await until('the first failure', () => failures.length > 0);
    assert.match(String(failures[0]), /permission denied for function pg_stat_get_live_tuples/);
    await pause(60);
    assert.equal(failures.length, 1, 'told once while the looks keep failing');
    await allow();
    await pause(60);
    await deny();
    await until('the second failure', () => failures.length > 1);
    await allow();
    await pause(60);
    await store.close();
    assert.equal(failures.length, 2, 'told again only after a look worked; the close tells nothing');
  } finally {
    await allow();
    await store.close();
    await admin.query('DROP OWNED BY looker; DROP ROLE looker');
  }
});
