/**
 * What a lease's payload costs as text (issue 37): lease-shaped answers (50 rows of a
 * LeasedRow's columns, as a W1 job has them) read through the store's connection (connect.ts),
 * with the payload as bytea's hex text (`\x…`, 2 characters a byte, decoded by the driver) or
 * as base64 text (`encode(…, 'base64')`, 4 characters for 3 bytes, decoded as leases.ts does).
 * The two alternate in rounds (the order swapped each round) on one pipelined connection; each round is
 * `--statements` statements, 25 in flight at a time. Prints, per payload size and medians of the
 * rounds, the CPU per row of this process (the store's side) and of the PostgreSQL backend
 * (from /proc, in 10 ms ticks: keep rounds ≥ 0.5 s).
 *
 *   npx tsx bench/pg-payload-text.ts [--rounds 8] [--statements 1000] [--sizes 256,4096]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { connectionOf } from '../src/store/postgres/connect.ts';
import { arrayStatement } from '../src/store/postgres/sql.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { cpuMicros } from './lib/proc-stats.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    statements: { type: 'string', default: '1000' },
    sizes: { type: 'string', default: '256,4096' },
  },
});
const rounds = Number(values.rounds);
const statements = Number(values.statements);
const sizes = values.sizes.split(',').map(Number);
const rowsPerStatement = 50;
const inFlight = 25;

/** A LeasedRow's columns as a W1 job has them (9 of 23 NULL), the payload given. */
const leaseShaped = (payload: string) =>
  arrayStatement(`SELECT g::bigint AS seq, md5(g::text) AS id, 'w1'::text AS queue, 'bench'::text AS type,
    ${payload} AS payload, 'application/octet-stream'::text AS content_type, 0::smallint AS priority,
    1::integer AS attempt, 25::integer AS max_attempts, 0::integer AS attempt_base,
    (1765000000000 + g)::bigint AS lease_deadline_ms, (1765000000000 + g)::bigint AS enqueued_at_ms,
    (1765000000000 + g)::bigint AS run_at_ms, NULL::text AS metadata_json, NULL::text AS traceparent,
    NULL::text AS tracestate, NULL::text AS idempotency_key, NULL::text AS last_error,
    NULL::bigint AS expires_at_ms, NULL::text AS group_key, NULL::bigint AS timeout_at_ms,
    NULL::text AS batch_id, 0::integer AS dependency_flags
  FROM generate_series(1, ${rowsPerStatement}) g`);

const cluster = await startPostgres();
// Pipelined, as the writer's connection that leases is (connect.ts).
const client = new pg.Client({ ...cluster.connection(), pipeline: true });
await client.connect();
const median = (list: readonly number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;
try {
  const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const store = connectionOf(client, undefined);
  console.log(`load ${loadavg()[0]?.toFixed(1)}`);
  console.log('| payload | text | this process µs/row | PostgreSQL µs/row | rounds (this process) |');
  console.log('| ---: | --- | ---: | ---: | --- |');
  for (const size of sizes) {
    const bytes = `decode(repeat('ab', ${size}), 'hex')`;
    const ways = [
      { name: 'hex (bytea)', s: leaseShaped(bytes), payload: (r: unknown[]) => r[4] as Buffer },
      {
        name: 'base64',
        s: leaseShaped(`encode(${bytes}, 'base64')`),
        payload: (r: unknown[]) => Buffer.from(r[4] as string, 'base64'),
      },
    ];
    const own = ways.map((): number[] => []);
    const pg = ways.map((): number[] => []);
    for (let round = 0; round <= rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const way = ways[i]!;
        const cpu0 = process.cpuUsage();
        const pg0 = cpuMicros([backend]);
        for (let sent = 0; sent < statements; sent += inFlight) {
          const answers = await Promise.all(Array.from({ length: inFlight }, () => store.send(way.s, [])));
          for (const answer of answers)
            for (const row of answer.rows as unknown[][])
              if (way.payload(row).length !== size)
                throw new Error(`a payload of ${size} bytes came back wrong`);
        }
        const cpu = process.cpuUsage(cpu0);
        const rows = statements * rowsPerStatement;
        // Round 0 warms both ways up (V8's compiler) and is not counted.
        if (round > 0) {
          own[i]!.push((cpu.user + cpu.system) / rows);
          pg[i]!.push((cpuMicros([backend]) - pg0) / rows);
        }
      }
    }
    for (const [i, way] of ways.entries())
      console.log(
        `| ${size} B | ${way.name} | ${median(own[i]!).toFixed(2)} | ${median(pg[i]!).toFixed(2)} | ${own[i]!.map((x) => x.toFixed(2)).join(' ')} |`,
      );
  }
  console.log(`load ${loadavg()[0]?.toFixed(1)}`);
} finally {
  await client.end();
  await cluster.close();
}
