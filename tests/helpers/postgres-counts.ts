/**
 * Whether the PostgreSQL store's maintained counts match its rows (counts = rows), read
 * through the Store interface on `schema`: the check that ends the PostgreSQL tests and
 * benchmarks that change jobs from outside one store (several servers, SQL callers).
 */
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { PostgresCluster } from './postgres.ts';

/** The mismatches between the counts and the rows of `schema`; none when they agree. */
export async function countMismatches(
  cluster: PostgresCluster,
  database: string,
  schema: string,
): Promise<string[]> {
  const store = new PostgresStore({
    ...cluster.storeOptions(database, schema),
    poolSize: 2,
    statementTimeoutMs: 60_000,
  });
  try {
    return await store.read((view) => view.counts.mismatches());
  } finally {
    await store.close();
  }
}
