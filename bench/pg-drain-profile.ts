/**
 * Where a W1 drain on the PostgreSQL store goes (issue 37): one sepp server (in this
 * process) on a fresh PostgreSQL 15 cluster with pg_stat_statements, `--jobs` jobs
 * enqueued in batches, then one SDK Worker of concurrency `--concurrency` acks them all.
 * Prints the drain's jobs/s, PostgreSQL's commits per job (pg_stat_database) and, per
 * statement of the drain, its calls, rows and time per job (pg_stat_statements).
 *
 *   npx tsx bench/pg-drain-profile.ts --jobs 20000 --concurrency 50 [--streams N] [--profile FILE.cpuprofile]
 *
 * `--profile` writes this process's CPU profile of the drain (server and client: the
 * server's frames are under src/ and node_modules/pg*, the client's under clients/).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { startTestServer } from '../tests/helpers/server.ts';
import { cpuMicros } from './lib/proc-stats.ts';
import { Profiler } from './lib/profiler.ts';
import { drainJobs, enqueueJobs } from './lib/sdk-phases.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    streams: { type: 'string' },
    top: { type: 'string', default: '12' },
    profile: { type: 'string' },
  },
});
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);

const cluster = await startPostgres({
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
});
const database = await cluster.createDatabase('bench');
const admin = new pg.Client(cluster.connection(database));
await admin.connect();
await admin.query('CREATE EXTENSION pg_stat_statements');
const server = await startTestServer({
  toml: `[queues.w1]\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "sepp"\n`,
});
const client = SeppClient.connect(server.address);
try {
  await enqueueJobs(client, 'w1', jobs, 10, 500);
  await admin.query('SELECT pg_stat_statements_reset()');
  const commits = async () =>
    Number(
      (
        await admin.query<{ c: string }>(
          'SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = $1',
          [database],
        )
      ).rows[0]?.c,
    );
  const c0 = await commits();
  const postmaster = cluster.pid();
  const pgCpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));
  const pg0 = pgCpu();
  const cpu0 = process.cpuUsage();
  const profiler = values.profile === undefined ? undefined : new Profiler();
  await profiler?.start();
  console.error(`draining (pid ${process.pid}, PostgreSQL ${postmaster})`);
  const started = performance.now();
  await drainJobs(client, 'w1', jobs, {
    concurrency,
    transport: 'stream',
    ...(values.streams === undefined ? {} : { streams: Number(values.streams) }),
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (values.profile !== undefined) await profiler?.stop(values.profile);
  const pgUs = pgCpu() - pg0;
  const c1 = await commits();
  console.log(
    `drain: ${jobs} jobs in ${seconds.toFixed(2)} s = ${Math.round(jobs / seconds)} jobs/s; ` +
      `${((c1 - c0) / jobs).toFixed(3)} commits/job; this process (server + client) ` +
      `${Math.round((cpu.user + cpu.system) / jobs)} µs CPU/job (user ${Math.round(cpu.user / jobs)}, system ${Math.round(cpu.system / jobs)}), PostgreSQL ${Math.round(pgUs / jobs)} µs/job; ` +
      `load ${loadavg()[0]?.toFixed(1)}`,
  );
  const { rows } = await admin.query<{ query: string; calls: string; rows: string; ms: string }>(
    `SELECT query, calls::text, rows::text, total_exec_time::text AS ms FROM pg_stat_statements
      ORDER BY total_exec_time DESC LIMIT $1`,
    [Number(values.top)],
  );
  console.log('| statement | calls/job | rows/call | exec µs/job |\n| --- | ---: | ---: | ---: |');
  for (const r of rows) {
    const text = r.query.replace(/\s+/g, ' ').slice(0, 90);
    console.log(
      `| ${text} | ${(Number(r.calls) / jobs).toFixed(3)} | ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1)} | ${((Number(r.ms) * 1000) / jobs).toFixed(1)} |`,
    );
  }
} finally {
  client.close();
  await server.dispose();
  await admin.end();
  await cluster.close();
}
