/**
 * What the `end_version` trigger (schema/postgres/0024) costs PostgreSQL per ended row, alone:
 * a table shaped like a job's end (id, state, attempt, times, a result) in two copies, one with
 * the trigger and one without, in a fresh PostgreSQL 15 cluster (tests/helpers/postgres.ts).
 * Each run fills both with `--rows` leased rows and ends them in acks of `--batch` rows (one
 * UPDATE … FROM unnest per batch, as an ack batch is), the copies alternating run by run;
 * prints the medians of µs per ended row and of the backend's CPU.
 *
 *   npx tsx bench/pg-end-trigger.ts [--rows 50000] [--batch 100] [--runs 5]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { cpuMicros } from './lib/proc-stats.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '50000' },
    batch: { type: 'string', default: '100' },
    runs: { type: 'string', default: '5' },
  },
});
const rowCount = Number(values.rows);
const batch = Number(values.batch);
const runs = Number(values.runs);

const cluster = await startPostgres();
const database = await cluster.createDatabase('bench');
const client = new pg.Client(cluster.connection(database));
await client.connect();
const backend = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);

const table = (name: string) => `CREATE TABLE ${name} (
  id text PRIMARY KEY, state text NOT NULL, attempt integer NOT NULL, lease_deadline_ms bigint,
  completed_at_ms bigint, result bytea, end_version integer NOT NULL DEFAULT 0)`;
await client.query(table('plain'));
await client.query(table('counted'));
await client.query(`CREATE FUNCTION job_ended() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN NEW.end_version := OLD.end_version + 1; RETURN NEW; END $fn$`);
await client.query(`CREATE TRIGGER counted_end_version BEFORE UPDATE OF state ON counted FOR EACH ROW
  WHEN (NEW.state IN ('completed', 'dead', 'cancelled') AND OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION job_ended()`);

async function once(name: string): Promise<{ usPerRow: number; cpuUsPerRow: number }> {
  await client.query(`TRUNCATE ${name}`);
  await client.query(
    `INSERT INTO ${name} (id, state, attempt, lease_deadline_ms)
     SELECT 'j' || g, 'leased', 1, 1 FROM generate_series(1, $1) AS g`,
    [rowCount],
  );
  await client.query(`VACUUM ANALYZE ${name}`);
  const cpu0 = cpuMicros([backend]);
  const t0 = performance.now();
  for (let first = 1; first <= rowCount; first += batch) {
    const ids = Array.from({ length: Math.min(batch, rowCount - first + 1) }, (_, i) => `j${first + i}`);
    await client.query(
      `UPDATE ${name} j SET state = 'completed', completed_at_ms = 2, lease_deadline_ms = NULL, result = '\\x01'
         FROM unnest($1::text[]) AS a(id) WHERE j.id = a.id AND j.state = 'leased'`,
      [ids],
    );
  }
  const us = (performance.now() - t0) * 1000;
  return { usPerRow: us / rowCount, cpuUsPerRow: (cpuMicros([backend]) - cpu0) / rowCount };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const results = new Map<string, { usPerRow: number; cpuUsPerRow: number }[]>([
  ['plain', []],
  ['counted', []],
]);
try {
  for (let r = 0; r < runs; r++) {
    for (const name of r % 2 === 0 ? ['plain', 'counted'] : ['counted', 'plain']) {
      const figures = await once(name);
      results.get(name)?.push(figures);
      console.log(
        `run ${r + 1}, ${name}: ${figures.usPerRow.toFixed(2)} µs/row, backend CPU ${figures.cpuUsPerRow.toFixed(2)} µs/row`,
      );
    }
  }
  console.log(`\n${rowCount} rows ended in UPDATEs of ${batch}, medians of ${runs}:\n`);
  console.log('| table | µs per ended row | backend CPU µs per ended row |');
  console.log('| --- | ---: | ---: |');
  for (const [name, figures] of results) {
    console.log(
      `| ${name === 'counted' ? 'with the trigger' : 'without'} | ${median(figures.map((f) => f.usPerRow)).toFixed(2)} | ${median(figures.map((f) => f.cpuUsPerRow)).toFixed(2)} |`,
    );
  }
} finally {
  await client.end();
  await cluster.close();
}
