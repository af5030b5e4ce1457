/**
 * The PostgreSQL store's reads behind the admin's job lists by state and type, timed as
 * src/engine/operators/job-browse.ts makes them (task pgidx20: the admin's index without leased
 * jobs, bench/results/pg-index-2026-12-07-s20.md): for each
 * queue and state, the job types by one seek each, then a page (51 seqs, newest first) of each
 * type's range; for a state the store keeps in no index by type (`unindexedByType`, leased jobs
 * since task pglist21), a page of one range of every queue of the list instead. 100,000 jobs in 4 queues and 8 types, `--leased` of them leased (spread over
 * the queues), the rest ready, scheduled, completed, dead or cancelled; this checkout's
 * statements on its schema, and with `--against DIR` DIR's statements on a schema whose
 * `jobs_by_state_type` holds every state (rebuilt so), alternating, on one throwaway
 * PostgreSQL 15 cluster. Each list is one REPEATABLE READ transaction, as the store's reads are,
 * after a transaction committed elsewhere (so no two lists share a snapshot). Prints the median
 * wall time of each list.
 *
 *   npx tsx bench/pg-state-lists.ts [--leased 5000] [--rounds 15] [--against /work/wt/base10]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Browse } from '../src/store/browse.ts';
import type { Op } from '../src/store/op.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';

const { values } = parseArgs({
  options: {
    leased: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '15' },
    against: { type: 'string' },
  },
});
const leased = Number(values.leased);
const rounds = Number(values.rounds);
const states = ['scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled', 'waiting'];
/** A checkout's browse reads; one from before task pglist21 has no `unindexedByType`. */
type AnyBrowse = Omit<Browse, 'unindexedByType'> & { unindexedByType?: Browse['unindexedByType'] };
type BrowseOps = (c: never) => AnyBrowse;

const here = new URL('..', import.meta.url).pathname;
const trees: { name: string; dir: string; schema: string }[] = [{ name: 'this', dir: here, schema: 'here' }];
if (values.against !== undefined) trees.push({ name: values.against, dir: values.against, schema: 'base' });

const cluster = await startPostgres();
try {
  const db = await cluster.createDatabase('lists');
  const admin = new pg.Client(cluster.connection(db));
  await admin.connect();
  // Every 1 in `step` jobs leased (odd, so they fall in every queue).
  const step = Math.max(1, Math.round(100_000 / leased)) | 1;
  for (const { schema } of trees) {
    const store = new PostgresStore({ ...cluster.storeOptions(db, schema), statisticsIntervalMs: 0 });
    await store.start();
    await store.close();
    await admin.query(
      `INSERT INTO ${schema}.jobs (id, queue, type, state, priority, payload, content_type, max_attempts,
          enqueued_at_ms, run_at_ms, lease_deadline_ms, leased_at_ms, worker_id, attempt)
       SELECT 'j' || g, 'q' || (g % 4), 't' || (g / 4 % 8), s, 0, '\\x00', 'x', 3, g, g,
              CASE WHEN s = 'leased' THEN g + 60000 END, CASE WHEN s = 'leased' THEN g END,
              CASE WHEN s = 'leased' THEN 'w' END, CASE WHEN s = 'leased' THEN 1 ELSE 0 END
         FROM (SELECT g, CASE WHEN g % ${step} = 0 THEN 'leased'
                              WHEN g % 20 < 8 THEN 'ready' WHEN g % 20 < 11 THEN 'scheduled'
                              WHEN g % 20 < 16 THEN 'completed' WHEN g % 20 < 18 THEN 'dead'
                              ELSE 'cancelled' END AS s
                 FROM generate_series(1, 100000) g) x`,
    );
  }
  if (values.against !== undefined) {
    // The base's schema as before 0025 (an older checkout's migrations may already make it so).
    await admin.query(`DROP INDEX base.jobs_by_state_type`);
    await admin.query(`CREATE INDEX jobs_by_state_type ON base.jobs (queue, state, type, seq)`);
  }
  for (const { schema } of trees) await admin.query(`ANALYZE ${schema}.jobs`);
  const { rows } = await admin.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM here.jobs WHERE state = 'leased'`,
  );

  const opened = await Promise.all(
    trees.map(async (tree) => {
      const { browseOps } = (await import(`${tree.dir}/src/store/postgres/browse.ts`)) as {
        browseOps: BrowseOps;
      };
      const client = new pg.Client(cluster.connection(db));
      await client.connect();
      await client.query(`SET search_path = ${tree.schema}`);
      const connection = {
        deltas: undefined,
        send: (s: { name: string; text: string }, params: readonly unknown[]) =>
          client.query({ ...(s.name === '' ? {} : { name: s.name }), text: s.text, values: [...params] }),
      };
      return { ...tree, client, browse: browseOps(connection as never) };
    }),
  );
  const run = async <T>(op: Op<T>): Promise<T> => {
    let step = op.next();
    while (!step.done) step = op.next(await (step.value as Promise<unknown>));
    return step.value;
  };
  /** One list: the types of each queue and state by seeks, then a page of each range. */
  const list = async (browse: AnyBrowse, queues: readonly string[], listed: readonly string[]) => {
    let reads = 0;
    const newest = { fromSeq: Number.MAX_SAFE_INTEGER, descending: true };
    for (const state of listed) {
      // A state the store keeps in no index by type is one range, every queue of the list in it
      // (a checkout that predates `unindexedByType` reads every state by queue and type).
      if (browse.unindexedByType?.has(state) === true) {
        await run(
          browse.scanSeqsAcrossTypes({ queues, state, type: null, typePrefix: '', ...newest, scan: 51 }),
        );
        reads++;
        continue;
      }
      for (const queue of queues) {
        const types: string[] = [];
        let fromType = '';
        for (;;) {
          const type = await run(browse.typeFrom({ queue, state, fromType, belowType: '\u{10ffff}' }));
          reads++;
          if (type === undefined) break;
          types.push(type);
          fromType = `${type}\u0000`;
        }
        for (const type of types) {
          await run(browse.scanSeqs({ queue, state, type, ...newest, scan: 51 }));
          reads++;
        }
      }
    }
    return reads;
  };
  const lists: [string, string[], string[]][] = [
    ['one queue, leased', ['q1'], ['leased']],
    ['one queue, ready', ['q1'], ['ready']],
    ['one queue, completed', ['q1'], ['completed']],
    ['all 4 queues, any state', ['q0', 'q1', 'q2', 'q3'], states],
  ];
  console.log(
    `${rows[0]?.n} of 100,000 jobs leased (4 queues, 8 types); ms per list, median of ${rounds} alternating rounds (2 more first, untimed); load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(`| list | reads | ${opened.map((t) => t.name).join(' | ')} |`);
  console.log(`| --- | --- | ${opened.map(() => '---:').join(' | ')} |`);
  for (const [label, queues, listed] of lists) {
    const times = opened.map(() => [] as number[]);
    const reads = opened.map(() => 0);
    for (let round = 0; round < rounds + 2; round++) {
      const order = round % 2 === 0 ? opened.map((_, i) => i) : opened.map((_, i) => i).reverse();
      for (const i of order) {
        // A transaction committed since the last list, as on a server at work: each list is a read of
        // its own (REPEATABLE READ, as the store's reads), on a snapshot no list had before.
        await admin.query('SELECT pg_current_xact_id()');
        const { client, browse } = opened[i]!;
        const start = process.hrtime.bigint();
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        reads[i] = await list(browse, queues, listed);
        await client.query('COMMIT');
        if (round >= 2) times[i]!.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }
    const median = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!.toFixed(1);
    console.log(`| ${label} | ${reads.join(', ')} | ${times.map(median).join(' | ')} |`);
  }
  console.log(`load ${loadavg()[0]!.toFixed(1)} at the end`);
  for (const t of opened) await t.client.end();
  await admin.end();
} finally {
  await cluster.close();
}
