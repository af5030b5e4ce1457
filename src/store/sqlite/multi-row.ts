/**
 * One statement for many rows: a batch runs through statements of 50, then 10,
 * then 1 rows (each prepared once, positional parameters from one array), so a
 * batch of 50 costs one statement execution instead of 50 — the statement's
 * start, its cursors on the table and every index, its reset. Rows go through
 * in the order given.
 */
import type Database from 'better-sqlite3';
import type { Preparer } from './prepare-on-use.ts';

export type SqlValue = string | number | Uint8Array | null;

/** Rows per statement, largest first; the last is 1, so any batch size fits. */
const rowsPerStatement = [50, 10, 1] as const;
const maxRowsPerStatement = rowsPerStatement[0];

/**
 * Which statements a batch runs through: `fixed`, those of 50, 10 and 1 rows; `exact`, one
 * of exactly its size up to 50 (each prepared at its first use), for an INSERT, whose
 * execution opens a cursor on the table and every index whatever its rows: a flow of 21
 * jobs is one statement instead of three (10, 10, 1). A statement whose rows are an
 * `IN (VALUES …)` list stays `fixed`: below ~10 rows the list costs more than it saves.
 */
export type StatementSizes = 'fixed' | 'exact';

export class MultiRowStatement<Row, Result> {
  /** The statements by their rows (sparse): `fixed` prepares its three at once, `exact` each at its first use. */
  private readonly prepared: Database.Statement<[SqlValue[]], Result>[] = [];
  private readonly prepare: (rows: number) => Database.Statement<[SqlValue[]], Result>;

  /**
   * @param sqlFor the statement for `rows` rows: `tuples` is a list of `rows` `(?, …)` of
   *   `valuesPerRow` each (a statement may take its row's values another way when `rows` is 1)
   * @param bind writes one row's values at `offset`, in the order of a tuple's `?`
   */
  constructor(
    db: Preparer,
    private readonly valuesPerRow: number,
    sqlFor: (tuples: string, rows: number) => string,
    private readonly bind: (values: SqlValue[], offset: number, row: Row) => void,
    private readonly sizes: StatementSizes = 'fixed',
  ) {
    const tuple = `(${Array.from({ length: valuesPerRow }, () => '?').join(', ')})`;
    this.prepare = (rows) =>
      db.prepare<[SqlValue[]], Result>(sqlFor(Array.from({ length: rows }, () => tuple).join(', '), rows));
    if (sizes === 'fixed') for (const rows of rowsPerStatement) this.prepared[rows] = this.prepare(rows);
  }

  /** Runs the statement for every row, in order. */
  run(rows: readonly Row[]): void {
    this.each(rows, (statement, values) => statement.run(values));
  }

  /** Runs the statement for every row, in order, and returns what all of them returned. */
  all(rows: readonly Row[]): Result[] {
    const results: Result[] = [];
    this.each(rows, (statement, values) => {
      for (const result of statement.all(values)) results.push(result);
    });
    return results;
  }

  private each(
    rows: readonly Row[],
    execute: (statement: Database.Statement<[SqlValue[]], Result>, values: SqlValue[]) => void,
  ): void {
    for (let at = 0; at < rows.length; ) {
      const left = rows.length - at;
      // `fixed`: the largest statement that fits what is left (the last is 1 row, so one does).
      const size =
        this.sizes === 'exact'
          ? Math.min(maxRowsPerStatement, left)
          : rowsPerStatement.find((n) => n <= left)!;
      this.prepared[size] ??= this.prepare(size);
      const statement = this.prepared[size]!;
      const values: SqlValue[] = new Array(size * this.valuesPerRow);
      for (let i = 0; i < size; i++) this.bind(values, i * this.valuesPerRow, rows[at + i]!);
      execute(statement, values);
      at += size;
    }
  }
}
