/**
 * The PostgreSQL store's reads of a queue's jobs by state and type (the admin's lists, the
 * bulk operations' ranges and counts) each stay an index read once their plan is the generic
 * one a prepared statement keeps (schema/postgres/0026): those of every state but `leased` in
 * `jobs_by_state_type`, which holds no leased job, and those of leased jobs in `jobs_leased`,
 * never the primary key walked in seq order nor the whole table. The statements are the ones
 * the store sends (recorded from browse.ts and bulk.ts), on 20,000 jobs in every state.
 * Run by ./postgres.test.ts on its cluster (one cluster per file is what costs).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { browseOps } from '../../../src/store/postgres/browse.ts';
import { bulkOps } from '../../../src/store/postgres/bulk.ts';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.ts';
import type { Connection } from '../../../src/store/postgres/sql.ts';
import type { FileCluster } from '../../helpers/postgres.ts';

const schema = 'browse_plans';

interface Sent {
  text: string;
  values: readonly unknown[];
}

/** The statements the store's browse and bulk reads send for one queue and state. */
function statementsFor(state: string): Sent[] {
  const sent: Sent[] = [];
  const empty = { rows: [], rowCount: 0 };
  // `send` answers at once (no promise): `run` hands each answer straight back to the operation.
  const recording = {
    deltas: undefined,
    send: (s: { text: string }, values: readonly unknown[]) => {
      sent.push({ text: s.text, values });
      return empty;
    },
  } as unknown as Connection;
  const run = (op: Generator<unknown, unknown, unknown>) => {
    for (let step = op.next(); !step.done; step = op.next(step.value));
  };
  const queue = 'q1';
  const range = { queue, state, type: 't5', fromSeq: -1, descending: false };
  const newest = { fromSeq: Number.MAX_SAFE_INTEGER, descending: true };
  const browse = browseOps(recording);
  run(browse.typeAfter({ queue, state, afterType: 't3' }));
  run(browse.typeFrom({ queue, state, fromType: 't3', belowType: 't\u{10ffff}' }));
  run(browse.typeFrom({ queue, state, fromType: 't3\u0000', belowType: 't\u{10ffff}' }));
  run(browse.seqs({ ...range, limit: 51 }));
  run(browse.seqs({ ...range, ...newest, limit: 51 }));
  run(browse.scanSeqs({ ...range, scan: 20_000 }));
  run(bulkOps(recording).countOfType({ queue, state, type: 't5' }));
  if (state === 'leased') {
    // Of any type: for the other states the primary key in seq order, as before (few types).
    run(browse.seqsAnyType({ ...range, limit: 51 }));
    run(browse.seqsAnyType({ ...range, ...newest, limit: 51 }));
    // The one range of a state in no index by type (the lists' read of leased jobs).
    const across = {
      state,
      fromSeq: -1,
      descending: false,
      queues: [queue],
      type: null,
      typePrefix: '',
      scan: 51,
    };
    run(browse.scanSeqsAcrossTypes(across));
    run(
      browse.scanSeqsAcrossTypes({ ...across, ...newest, queues: ['q1', 'q2'], type: 't5', typePrefix: 't' }),
    );
  }
  return sent;
}

const literal = (v: unknown): string =>
  Array.isArray(v)
    ? `ARRAY[${v.map(literal).join(', ')}]::text[]`
    : typeof v === 'number'
      ? String(v)
      : v === null
        ? 'NULL'
        : `'${String(v).replaceAll("'", "''")}'`;

export function testBrowsePlans(postgres: FileCluster): void {
  test("the store's reads by queue, state and type use jobs_by_state_type, or jobs_leased for leased jobs, in their generic plans", async () => {
    const store = new PostgresStore({
      ...postgres.cluster.storeOptions(postgres.database, schema),
      statisticsIntervalMs: 0,
    });
    await store.start();
    await store.close();
    const admin = await postgres.client();
    // 20,000 jobs in 4 queues and 8 types; every 20th leased (1,000), the rest in the other states.
    await admin.query(
      `INSERT INTO ${schema}.jobs (id, queue, type, state, priority, payload, content_type, max_attempts,
        enqueued_at_ms, run_at_ms, attempt, lease_deadline_ms, leased_at_ms, worker_id)
     SELECT 'j' || g, 'q' || (g % 4), 't' || (g / 4 % 8), s, 0, '\\x00', 'x', 3, g, g,
            CASE WHEN s = 'leased' THEN 1 ELSE 0 END, CASE WHEN s = 'leased' THEN g + 60000 END,
            CASE WHEN s = 'leased' THEN g END, CASE WHEN s = 'leased' THEN 'w' END
       FROM (SELECT g, (ARRAY['ready', 'ready', 'ready', 'scheduled', 'completed', 'completed', 'dead',
                              'cancelled', 'ready', 'completed', 'ready', 'ready', 'scheduled', 'completed',
                              'completed', 'dead', 'cancelled', 'ready', 'completed', 'leased'])[g % 20 + 1] AS s
               FROM generate_series(1, 20000) g) x`,
    );
    await admin.query(`ANALYZE ${schema}.jobs`);
    const indexes = await admin.query<{ def: string }>(
      `SELECT indexdef AS def FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_by_state_type'`,
      [schema],
    );
    assert.match(indexes.rows[0]?.def ?? '', /WHERE \(state <> 'leased'::text\)/);
    await admin.query(`SET search_path = ${schema}`);
    await admin.query('SET plan_cache_mode = force_generic_plan');
    try {
      let n = 0;
      for (const state of ['ready', 'completed', 'leased']) {
        for (const { text, values } of statementsFor(state)) {
          const name = `browse_plan_${n++}`;
          await admin.query(`PREPARE ${name} AS ${text}`);
          const { rows } = await admin.query(`EXPLAIN EXECUTE ${name}(${values.map(literal).join(', ')})`);
          const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
          const about = `${state}: ${text.replace(/\s+/g, ' ')}\n${plan}`;
          assert.doesNotMatch(plan, /Seq Scan/, about);
          if (state === 'leased') {
            assert.match(plan, /(using|on) jobs_leased /, about);
            assert.doesNotMatch(plan, /jobs_pkey|jobs_by_state_type/, about);
          } else {
            assert.match(plan, /(using|on) jobs_by_state_type /, about);
          }
        }
      }
    } finally {
      await admin.query('DEALLOCATE ALL');
      await admin.query('RESET plan_cache_mode');
      await admin.query('RESET search_path');
    }
  });
}
