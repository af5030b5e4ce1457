/**
 * The enqueue's inserts, several rows per statement: one multi-row INSERT per 50
 * jobs, then per 10, then one by one (each prepared once), so a batch of 50 jobs
 * costs one statement execution instead of 50 — the statement's start, its
 * cursors on the table and every index, its reset. Rows are inserted in the
 * order given, so `seq` (enqueue order) follows it as it did one by one.
 */
import type Database from 'better-sqlite3';
import type { Db } from './open.ts';
import type { InsertJobParams } from './statements.ts';

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
  'group_key',
] as const satisfies readonly (keyof InsertJobParams)[];
// A field added to InsertJobParams but not to `columns` fails the typecheck here, rather than being dropped.
const everyColumnListed: [Exclude<keyof InsertJobParams, (typeof columns)[number]>] extends [never]
  ? true
  : never = true;
const columnCount = columns.length;
/** Rows per statement, largest first; the last must be 1. */
const rowsPerStatement = [50, 10, 1] as const;

type Value = string | number | Uint8Array | null;

export class JobInserts {
  private readonly statements: { rows: number; statement: Database.Statement<[Value[]]> }[];

  constructor(db: Db) {
    void everyColumnListed;
    const row = `(${columns.map(() => '?').join(', ')})`;
    this.statements = rowsPerStatement.map((rows) => ({
      rows,
      statement: db.prepare<[Value[]]>(
        `INSERT INTO jobs (${columns.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`,
      ),
    }));
  }

  /** Inserts `jobs` in order, inside the caller's write. */
  insert(jobs: readonly InsertJobParams[]): void {
    let at = 0;
    for (const { rows, statement } of this.statements) {
      while (jobs.length - at >= rows) {
        const values: Value[] = new Array(rows * columnCount);
        for (let i = 0; i < rows; i++) bindRow(values, i * columnCount, jobs[at + i]!);
        statement.run(values);
        at += rows;
      }
    }
  }
}

/** A row's values in the order of `columns`. */
function bindRow(values: Value[], offset: number, job: InsertJobParams): void {
  for (let c = 0; c < columnCount; c++) values[offset + c] = job[columns[c]!];
}
