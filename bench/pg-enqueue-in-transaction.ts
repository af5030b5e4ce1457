/**
 * Enqueue inside the application's own transaction (issue 38) against enqueue over gRPC,
 * on one sepp server with the PostgreSQL store (a fresh cluster from
 * tests/helpers/postgres.ts, fsync on), with `--clients` concurrent producers for
 * `--seconds` each:
 *
 *   grpc       an Enqueue call per job over gRPC (the server batches them into commits);
 *   tx+grpc    what an application does without the function: its own transaction (one
 *              INSERT into an orders table, COMMIT), then an Enqueue over gRPC;
 *   sql        the application's transaction holds both: BEGIN, the INSERT,
 *              `SELECT sepp.enqueue(…)`, COMMIT.
 *
 * Modes are interleaved, `--runs` times; the medians of jobs/s are printed with the load
 * average around each run, and the counts are checked against the rows at the end.
 *
 *   npx tsx bench/pg-enqueue-in-transaction.ts --runs 3 --seconds 5 --clients 16
 */
import { loadavg } from 'node:os';
import { describePostgresSettings, startPostgres } from '../tests/helpers/postgres.ts';
import { countMismatches } from '../tests/helpers/postgres-counts.ts';
import { call, startTestServer, testJob } from '../tests/helpers/server.ts';
import { median } from './engine-lib.ts';
import { connectClients, pgBenchArgs } from './lib/pg-bench.ts';

const modes = ['grpc', 'tx+grpc', 'sql'] as const;
type Mode = (typeof modes)[number];

const { runs, durationMs, clients } = pgBenchArgs(
  'Usage: npx tsx bench/pg-enqueue-in-transaction.ts [--runs 3] [--seconds 5] [--clients 16]',
  16,
);

const cluster = await startPostgres();
const database = await cluster.createDatabase('bench');
const schema = 'sepp';
const server = await startTestServer({
  toml: `[queues.bench]\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "${schema}"\n`,
});
const connections = await connectClients(cluster, clients, database);
await connections[0]!.query(
  'CREATE SCHEMA shop; CREATE TABLE shop.orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, total_cents int NOT NULL)',
);
const grpcClients = Array.from({ length: clients }, () => server.connect());

const payload = Buffer.from(JSON.stringify({ order: 42, to: 'ada@example.com' }));

async function producer(mode: Mode, i: number, until: number): Promise<number> {
  const db = connections[i]!;
  const rpc = grpcClients[i]!;
  let jobs = 0;
  while (performance.now() < until) {
    if (mode === 'grpc') {
      await call(rpc, rpc.enqueue, { job: testJob('bench', { payload }) });
    } else if (mode === 'tx+grpc') {
      await db.query('BEGIN');
      await db.query('INSERT INTO shop.orders (total_cents) VALUES (1999)');
      await db.query('COMMIT');
      await call(rpc, rpc.enqueue, { job: testJob('bench', { payload }) });
    } else {
      await db.query('BEGIN');
      await db.query('INSERT INTO shop.orders (total_cents) VALUES (1999)');
      await db.query(`SELECT job_id FROM ${schema}.enqueue('bench', 't', $1, '{}')`, [payload]);
      await db.query('COMMIT');
    }
    jobs++;
  }
  return jobs;
}

const rates: Record<Mode, number[]> = { grpc: [], 'tx+grpc': [], sql: [] };
const loads: string[] = [];
for (let run = 0; run < runs; run++) {
  for (const mode of modes) {
    // Empty the queue between runs so every run enqueues into the same depth.
    await connections[0]!.query(`DELETE FROM ${schema}.jobs; DELETE FROM ${schema}.queue_counts`);
    const before = loadavg()[0]!.toFixed(2);
    const started = performance.now();
    const until = started + durationMs;
    const done = await Promise.all(connections.map((_, i) => producer(mode, i, until)));
    const seconds = (performance.now() - started) / 1000;
    const total = done.reduce((a, b) => a + b, 0);
    rates[mode].push(total / seconds);
    loads.push(`${mode} run ${run + 1}: load ${before} → ${loadavg()[0]!.toFixed(2)}`);
    console.error(`${mode} run ${run + 1}: ${Math.round(total / seconds)} jobs/s`);
  }
}

// The counts still match the rows (the function's and the server's shards together).
const mismatches = await countMismatches(cluster, database, schema);

console.log(
  `\nEnqueue per job, ${clients} producers, ${durationMs / 1000} s per run, medians of ${runs} (PostgreSQL ${cluster.serverVersion}, ${describePostgresSettings()}; one sepp server in this process)\n`,
);
console.log('| mode | jobs/s (median) | runs |');
console.log('|---|---:|---|');
for (const mode of modes) {
  console.log(`| ${mode} | ${Math.round(median(rates[mode]))} | ${rates[mode].map(Math.round).join(', ')} |`);
}
console.log(`\nload average (1 min) before → after each run: ${loads.join('; ')}`);
console.log(`counts = rows at the end: ${mismatches.length === 0 ? 'yes' : mismatches.join('; ')}`);

await Promise.all(connections.map((c) => c.end()));
await server.dispose();
await cluster.close();
if (mismatches.length > 0) process.exitCode = 1;
