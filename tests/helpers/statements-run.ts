/** The SQL of the statements a SQLite connection runs: what a test of a hot path's statements reads. */
import type Database from 'better-sqlite3';
import type { Db } from '../../src/store/sqlite/open.ts';

type Method = 'run' | 'get' | 'all' | 'iterate';

/** Records the SQL of every statement run on `db`'s connection while `body` runs. */
export async function statementsRunBy(db: Db, body: () => Promise<void>): Promise<string[]> {
  const prototype = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<
    Method,
    (...a: unknown[]) => unknown
  >;
  const originals = new Map<Method, (...a: unknown[]) => unknown>();
  const seen: string[] = [];
  for (const method of ['run', 'get', 'all', 'iterate'] as const) {
    const original = prototype[method];
    originals.set(method, original);
    prototype[method] = function (this: Database.Statement, ...args: unknown[]) {
      seen.push(this.source);
      return original.apply(this, args);
    };
  }
  try {
    await body();
  } finally {
    for (const [method, original] of originals) prototype[method] = original;
  }
  return seen;
}
