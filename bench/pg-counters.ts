/**
 * Exact per-queue counters on PostgreSQL (issue 37, docs/decisions/0100): what keeping a
 * count in the same statement as the job change costs, for four designs, with `--clients`
 * connections each inserting batches of `--batch` jobs into one queue for `--seconds`:
 *
 *   none    the INSERT alone (the floor);
 *   hot     one counter row per (queue, state), updated by every statement;
 *   shard   one counter row per (queue, state, connection), upserted by its connection;
 *   delta   an appended delta row per statement, folded into the totals every 100 ms by a
 *           separate connection (the fold's CPU is counted too).
 *
 * Each design runs in a data-modifying CTE with the INSERT (one statement, one commit), on
 * a fresh PostgreSQL from tests/helpers/postgres.ts (fsync on). Designs are interleaved,
 * `--runs` times, and the medians of jobs/s and of PostgreSQL's CPU per job are printed
 * (the postmaster and all its backends, from /proc), with the counts checked against the
 * rows at the end of every run.
 *
 *   npx tsx bench/pg-counters.ts --runs 3 --seconds 5 --batch 1,50
 */
import pg from 'pg';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { median } from './engine-lib.ts';
import { connectClients, pgBenchArgs, positiveInteger } from './lib/pg-bench.ts';
import { cpuMicros } from './lib/proc-stats.ts';

const designs = ['none', 'hot', 'shard', 'delta'] as const;
type Design = (typeof designs)[number];

const { runs, durationMs, clients, values } = pgBenchArgs(
  'Usage: npx tsx bench/pg-counters.ts [--runs 3] [--seconds 5] [--clients 50] [--batch 1,50]',
  50,
  { batch: { type: 'string', default: '1,50' } },
);
const batches = String(values.batch)
  .split(',')
  .map((b) => positiveInteger('batch', b));

const schema = `
  CREATE TABLE jobs (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text NOT NULL, payload bytea NOT NULL);
  CREATE TABLE counts (queue text, state text, jobs bigint NOT NULL, PRIMARY KEY (queue, state)) WITH (fillfactor = 50);
  CREATE TABLE counts_sharded (queue text, state text, shard int, jobs bigint NOT NULL,
    PRIMARY KEY (queue, state, shard)) WITH (fillfactor = 50);
  CREATE TABLE count_deltas (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text NOT NULL,
    state text NOT NULL, delta bigint NOT NULL);`;

const insert = `WITH ins AS (INSERT INTO jobs (queue, payload) SELECT $1, p FROM unnest($2::bytea[]) AS p RETURNING 1)`;
const statements: Readonly<Record<Design, string>> = {
  none: `${insert} SELECT count(*) FROM ins, (SELECT $3::int) AS unused`,
  hot: `${insert} UPDATE counts SET jobs = jobs + (SELECT count(*) FROM ins) WHERE queue = $1 AND state = 'ready' AND $3::int IS NOT NULL`,
  shard: `${insert} INSERT INTO counts_sharded (queue, state, shard, jobs) SELECT $1, 'ready', $3, count(*) FROM ins
    ON CONFLICT (queue, state, shard) DO UPDATE SET jobs = counts_sharded.jobs + excluded.jobs`,
  delta: `${insert} INSERT INTO count_deltas (queue, state, delta) SELECT $1, 'ready', count(*) FROM ins WHERE $3::int IS NOT NULL`,
};
/** Folds every delta committed so far into `counts`, in one statement. */
const fold = `WITH d AS (DELETE FROM count_deltas RETURNING queue, state, delta),
  s AS (SELECT queue, state, sum(delta) AS delta FROM d GROUP BY queue, state)
  INSERT INTO counts (queue, state, jobs) SELECT queue, state, delta FROM s
  ON CONFLICT (queue, state) DO UPDATE SET jobs = counts.jobs + excluded.jobs`;
const counted: Readonly<Record<Design, string>> = {
  none: 'SELECT NULL::bigint AS n',
  hot: "SELECT jobs AS n FROM counts WHERE queue = 'q' AND state = 'ready'",
  shard: "SELECT sum(jobs) AS n FROM counts_sharded WHERE queue = 'q' AND state = 'ready'",
  delta: `SELECT (SELECT coalesce(sum(jobs), 0) FROM counts WHERE queue = 'q' AND state = 'ready')
    + (SELECT coalesce(sum(delta), 0) FROM count_deltas WHERE queue = 'q' AND state = 'ready') AS n`,
};

interface RunResult {
  readonly jobsPerSec: number;
  readonly serverCpuUsPerJob: number;
}

async function runOnce(design: Design, batch: number): Promise<RunResult> {
  const cluster = await startPostgres();
  try {
    await cluster.query(schema);
    await cluster.query("INSERT INTO counts VALUES ('q', 'ready', 0)");
    const pools = await connectClients(cluster, clients);
    const folder = new pg.Client(cluster.connection());
    await folder.connect();
    const payloads = Array.from({ length: batch }, () => Buffer.alloc(256, 'x'));
    const postmaster = cluster.pid();
    if (postmaster === undefined) throw new Error('PostgreSQL is not running');
    const cpuStart = cpuMicros([postmaster]);
    const start = performance.now();
    const deadline = start + durationMs;
    let jobs = 0;
    let folding = true;
    const folds =
      design === 'delta'
        ? (async () => {
            while (folding) {
              await folder.query({ name: 'fold', text: fold });
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
          })()
        : Promise.resolve();
    await Promise.all(
      pools.map(async (client, shard) => {
        while (performance.now() < deadline) {
          await client.query({ name: design, text: statements[design], values: ['q', payloads, shard] });
          jobs += batch;
        }
      }),
    );
    const elapsedMs = performance.now() - start;
    const cpuUs = cpuMicros([postmaster]) - cpuStart;
    folding = false;
    await folds;
    const rows = await cluster.query<{ n: string }>('SELECT count(*) AS n FROM jobs');
    const count = await cluster.query<{ n: string | null }>(counted[design]);
    const expected = rows.rows[0]?.n;
    const got = count.rows[0]?.n;
    if (design !== 'none' && got !== expected) throw new Error(`${design}: counted ${got}, rows ${expected}`);
    await Promise.all([...pools, folder].map((c) => c.end()));
    return { jobsPerSec: (jobs * 1000) / elapsedMs, serverCpuUsPerJob: cpuUs / jobs };
  } finally {
    await cluster.close();
  }
}

const results = new Map<string, RunResult[]>();
for (let run = 0; run < runs; run++) {
  for (const batch of batches) {
    // The order alternates from run to run, so no design always runs first.
    const order = run % 2 === 0 ? designs : [...designs].reverse();
    for (const design of order) {
      const result = await runOnce(design, batch);
      const key = `${design}/${batch}`;
      results.set(key, [...(results.get(key) ?? []), result]);
      process.stderr.write(
        `pg-counters: run ${run + 1} ${key}: ${Math.round(result.jobsPerSec)} jobs/s, ` +
          `${Math.round(result.serverCpuUsPerJob)} µs PostgreSQL CPU per job\n`,
      );
    }
  }
}

console.log(
  `\n${clients} connections, ${durationMs / 1000} s per run, medians of ${runs} interleaved runs\n`,
);
console.log('| design | jobs per statement | jobs/s | PostgreSQL CPU µs/job |');
console.log('| --- | --- | --- | --- |');
for (const batch of batches) {
  for (const design of designs) {
    const rs = results.get(`${design}/${batch}`) ?? [];
    console.log(
      `| ${design} | ${batch} | ${Math.round(median(rs.map((r) => r.jobsPerSec))).toLocaleString('en-US')} | ` +
        `${Math.round(median(rs.map((r) => r.serverCpuUsPerJob)))} |`,
    );
  }
}
