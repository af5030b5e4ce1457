/**
 * Rows read as arrays and made into objects here, for statements that return many rows a
 * call. The driver's own row objects cost one native property definition per column: for
 * the lease statement, about a quarter of its CPU (docs/performance.md). Here each row is
 * one object literal with every column in the statement's order, made from the list of
 * names once, so every row has the same shape from its creation (assigning the properties
 * one by one by computed name measured ~2 % of the server's CPU per drained job).
 */
import type Database from 'better-sqlite3';

const identifier = /^[a-z_][a-z0-9_]*$/;

/** Makes a row read as an array into an object with `columns` (the statement's result columns, in order). */
export function rowFromValues<Row>(columns: readonly (keyof Row & string)[]): (values: unknown[]) => Row {
  for (const name of columns) {
    if (!identifier.test(name)) throw new Error(`rowFromValues: ${name} is not a column name`);
  }
  return new Function(
    'values',
    `return { ${columns.map((name, i) => `${name}: values[${i}]`).join(', ')} };`,
  ) as (values: unknown[]) => Row;
}

/**
 * A statement that returns objects with `columns` (the names its result columns have, in
 * their order), built from the rows read as arrays. `source` stays readable, for the plan
 * checks (tests/admin/query-plans.test.ts).
 */
export function objectRows<P extends unknown[], Row>(
  statement: Database.Statement<P, unknown>,
  columns: readonly (keyof Row & string)[],
): { all(...params: P): Row[]; readonly source: string } {
  const rowFrom = rowFromValues<Row>(columns);
  const raw = statement.raw(true);
  return {
    source: statement.source,
    all: (...params) => (raw.all(...params) as unknown[][]).map(rowFrom),
  };
}
