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

export class MultiRowStatement<Row, Result> {
  private readonly statements: { rows: number; statement: Database.Statement<[SqlValue[]], Result> }[];

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
  ) {
    const tuple = `(${Array.from({ length: valuesPerRow }, () => '?').join(', ')})`;
    this.statements = rowsPerStatement.map((rows) => ({
      rows,
      statement: db.prepare<[SqlValue[]], Result>(
        sqlFor(Array.from({ length: rows }, () => tuple).join(', '), rows),
      ),
    }));
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
    let at = 0;
    for (const { rows: size, statement } of this.statements) {
      while (rows.length - at >= size) {
        const values: SqlValue[] = new Array(size * this.valuesPerRow);
        for (let i = 0; i < size; i++) this.bind(values, i * this.valuesPerRow, rows[at + i]!);
        execute(statement, values);
        at += size;
      }
    }
  }
}
