/**
 * One statement for many rows: a batch runs through statements of 50, then 10,
 * then 1 rows (each prepared once, positional parameters from one array), so a
 * batch of 50 costs one statement execution instead of 50 — the statement's
 * start, its cursors on the table and every index, its reset. Rows go through
 * in the order given.
 */
import type Database from 'better-sqlite3';
import { rowFromValues } from './object-rows.ts';
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

export class MultiRowStatement<Row, Result, Shared = void> {
  /** The statements by their rows (sparse): `fixed` prepares its three at once, `exact` each at its first use. */
  private readonly prepared: Database.Statement<[SqlValue[]], Result>[] = [];
  private readonly prepare: (rows: number) => Database.Statement<[SqlValue[]], Result>;
  /** With `columns`: makes a row read as an array into a Result (object-rows.ts). */
  private readonly rowFrom: ((values: unknown[]) => Result) | undefined;

  /**
   * @param sqlFor the statement for `rows` rows: `tuples` is a list of `rows` `(?, …)` of
   *   `valuesPerRow` each (a statement may take its row's values another way when `rows` is 1)
   * @param bind writes one row's values at `offset`, in the order of a tuple's `?`; `shared` is
   *   what the call passed for all its rows (a value every row binds, such as the time)
   * @param columns the names of the result's columns, in order: `all` reads its rows as
   *   arrays and makes the objects itself (object-rows.ts), for a statement that returns many
   */
  constructor(
    db: Preparer,
    private readonly valuesPerRow: number,
    sqlFor: (tuples: string, rows: number) => string,
    private readonly bind: (values: SqlValue[], offset: number, row: Row, shared: Shared) => void,
    private readonly sizes: StatementSizes = 'fixed',
    columns?: readonly (keyof Result & string)[],
  ) {
    const tuple = `(${Array.from({ length: valuesPerRow }, () => '?').join(', ')})`;
    const rowFrom = columns === undefined ? undefined : rowFromValues<Result>(columns);
    this.rowFrom = rowFrom;
    this.prepare = (rows) => {
      const statement = db.prepare<[SqlValue[]], Result>(
        sqlFor(Array.from({ length: rows }, () => tuple).join(', '), rows),
      );
      return rowFrom === undefined ? statement : statement.raw(true);
    };
    if (sizes === 'fixed') for (const rows of rowsPerStatement) this.prepared[rows] = this.prepare(rows);
  }

  /** Runs the statement for every row, in order. */
  run(rows: readonly Row[], shared: Shared): void {
    this.each(rows, shared, (statement, values) => statement.run(values));
  }

  /** Runs the statement for every row, in order, and returns what all of them returned. */
  all(rows: readonly Row[], shared: Shared): Result[] {
    const results: Result[] = [];
    const rowFrom = this.rowFrom;
    this.each(rows, shared, (statement, values) => {
      const found = statement.all(values);
      if (rowFrom === undefined) for (const result of found) results.push(result);
      else for (const row of found as unknown[] as unknown[][]) results.push(rowFrom(row));
    });
    return results;
  }

  private each(
    rows: readonly Row[],
    shared: Shared,
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
      for (let i = 0; i < size; i++) this.bind(values, i * this.valuesPerRow, rows[at + i]!, shared);
      execute(statement, values);
      at += size;
    }
  }
}
