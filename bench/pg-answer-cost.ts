/**
 * The sepp process's CPU to send a drain's statements and read their answers (issue 37): a
 * lease-shaped statement, 25 rows of a LeasedRow's 22 columns (a W1 lease of one Work stream),
 * alternating with an ack-shaped one (25 rows of 6 columns), sent
 * through the store's connection (connect.ts) and through the driver's own `rowMode: 'array'`
 * query, in alternating rounds on one
 * connection. Prints each way's CPU per statement and per row (this process only: PostgreSQL
 * runs elsewhere), round by round, and the medians.
 *
 *   npx tsx bench/pg-answer-cost.ts [--rounds 6] [--statements 2000]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { connectionOf } from '../src/store/postgres/connect.ts';
import { arrayStatement } from '../src/store/postgres/sql.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '6' }, statements: { type: 'string', default: '2000' } },
});
const rounds = Number(values.rounds);
const statements = Number(values.statements);
const rowsPerStatement = 25;

/** A LeasedRow's columns and types (leases.ts), as a W1 job has them: 9 of 22 NULL. */
const text = `SELECT g::bigint AS seq, md5(g::text) AS id, 'w1'::text AS queue, 'bench'::text AS type,
    decode(repeat('ab', 256), 'hex') AS payload, 'application/octet-stream'::text AS content_type,
    0::integer AS priority, 1::integer AS attempt, 25::integer AS max_attempts, 0::integer AS attempt_base,
    (1765000000000 + g)::bigint AS lease_deadline_ms, (1765000000000 + g)::bigint AS enqueued_at_ms,
    (1765000000000 + g)::bigint AS run_at_ms, NULL::text AS metadata_json, NULL::text AS traceparent,
    NULL::text AS tracestate, NULL::text AS idempotency_key, NULL::text AS last_error,
    NULL::bigint AS expires_at_ms, NULL::text AS group_key, NULL::bigint AS timeout_at_ms,
    0::integer AS dependency_flags
  FROM generate_series(1, $1::integer) g`;
/** And an ack's answer (leases.ts `ackMany`): the driver sees both shapes, as in a drain. */
const ackText = `SELECT md5(g::text) AS id, 'w1'::text AS queue, 'bench'::text AS type,
    (1765000000000 + g)::bigint AS run_at_ms, (1765000000000 + g)::bigint AS leased_at_ms, 'worker-1'::text AS worker_id
  FROM generate_series(1, $1::integer) g`;

const cluster = await startPostgres();
const client = new pg.Client(cluster.connection());
await client.connect();
try {
  const store = connectionOf(client, undefined);
  const leaseShaped = arrayStatement(text);
  const ackShaped = arrayStatement(ackText);
  let sends = 0;
  const ways: Record<string, () => Promise<pg.QueryResult>> = {
    'store (connect.ts)': () =>
      sends++ % 2 === 0
        ? store.send(leaseShaped, [rowsPerStatement])
        : store.send(ackShaped, [rowsPerStatement]),
    "driver's rowMode array": () =>
      sends++ % 2 === 0
        ? client.query({ name: 'driver_lease', text, values: [rowsPerStatement], rowMode: 'array' })
        : client.query({ name: 'driver_ack', text: ackText, values: [rowsPerStatement], rowMode: 'array' }),
  };
  const perStatement = new Map<string, number[]>();
  for (let round = 0; round <= rounds; round++) {
    for (const [way, send] of Object.entries(ways)) {
      const cpu0 = process.cpuUsage();
      // 50 statements in flight at a time, as a batch's leases and acks are.
      for (let sent = 0; sent < statements; sent += 50) {
        const answers = await Promise.all(Array.from({ length: 50 }, send));
        if (answers.some((a) => a.rows.length !== rowsPerStatement)) throw new Error('a short answer');
      }
      const cpu = process.cpuUsage(cpu0);
      const us = (cpu.user + cpu.system) / statements;
      const systemShare = cpu.system / Math.max(1, cpu.user + cpu.system);
      // Round 0 warms both ways up (V8's compiler) and is not counted.
      if (round > 0) perStatement.set(way, [...(perStatement.get(way) ?? []), us]);
      console.log(
        `round ${round}${round === 0 ? ' (warm-up)' : ''}: ${way}: ${us.toFixed(1)} µs CPU per statement, ${(us / rowsPerStatement).toFixed(2)} per row (system ${(100 * systemShare).toFixed(0)} %); load ${loadavg()[0]?.toFixed(1)}`,
      );
    }
  }
  for (const [way, list] of perStatement) {
    const sorted = [...list].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    console.log(
      `median ${way}: ${median.toFixed(1)} µs per statement of ${rowsPerStatement} rows, ${(median / rowsPerStatement).toFixed(2)} per row`,
    );
  }
} finally {
  await client.end();
  await cluster.close();
}
