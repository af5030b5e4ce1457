/**
 * The hot path's statements for batches, several rows per statement
 * (multi-row.ts): a batch of 50 jobs is one INSERT instead of 50, an AckBatch of
 * 50 one DELETE. Rows are inserted in the order given, so `seq` (enqueue order)
 * follows it as it did one by one.
 */

import { MultiRowStatement } from './multi-row.ts';
import type { Db } from './open.ts';
import { ackableLeased, type InsertJobParams } from './statements.ts';

/** Every column of InsertJobParams, in statement order. */
const columns = [
  'id',
  'queue',
  'type',
  'state',
  'priority',
  'payload',
  'content_type',
  'metadata_json',
  'traceparent',
  'tracestate',
  'idempotency_key',
  'max_attempts',
  'lease_ms',
  'enqueued_at_ms',
  'run_at_ms',
  'expires_at_ms',
  'group_key',
] as const satisfies readonly (keyof InsertJobParams)[];
// A field added to InsertJobParams but not to `columns` fails the typecheck here, rather than being dropped.
const everyColumnListed: [Exclude<keyof InsertJobParams, (typeof columns)[number]>] extends [never]
  ? true
  : never = true;

/** Prepares the multi-row INSERTs of jobs; `run` inserts a batch in order, inside the caller's write. */
export function prepareJobInserts(db: Db): MultiRowStatement<InsertJobParams, never> {
  void everyColumnListed;
  return new MultiRowStatement<InsertJobParams, never>(
    db,
    columns.length,
    (tuples) => `INSERT INTO jobs (${columns.join(', ')}) VALUES ${tuples}`,
    (values, offset, job) => {
      for (let c = 0; c < columns.length; c++) values[offset + c] = job[columns[c]!];
    },
  );
}

/** An ack's fence: the job and the attempt whose lease it settles. */
export interface AckKey {
  jobId: string;
  attempt: number;
}

/**
 * Deletes the jobs that are leased at the attempt each ack names (found through the
 * `id` index, one probe per ack), and returns the ones it deleted; an ack it did not
 * match deletes nothing. The acks' job ids must be distinct.
 */
export function prepareAckDeletes(
  db: Db,
): MultiRowStatement<AckKey, { id: string; queue: string; type: string }> {
  return new MultiRowStatement<AckKey, { id: string; queue: string; type: string }>(
    db,
    2,
    // One row: the plain form. `IN (VALUES …)` builds its list for every execution, which
    // costs more than it saves below ~10 rows (measured: acks in batches of 2-5 cost +37 %).
    (tuples, rows) =>
      rows === 1
        ? `DELETE FROM jobs WHERE id = ? AND attempt = ? AND ${ackableLeased} RETURNING id, queue, type`
        : `DELETE FROM jobs WHERE ${ackableLeased} AND (id, attempt) IN (VALUES ${tuples}) RETURNING id, queue, type`,
    (values, offset, ack) => {
      values[offset] = ack.jobId;
      values[offset + 1] = ack.attempt;
    },
  );
}
