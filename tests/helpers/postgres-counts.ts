/**
 * Whether the PostgreSQL store's maintained counts match its rows (counts = rows), read
 * through the Store interface on `schema`: the check that ends the PostgreSQL tests and
 * benchmarks that change jobs from outside one store (several servers, SQL callers).
 */
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { within } from './bounded.ts';
import type { PostgresCluster } from './postgres.ts';

/**
 * The mismatches between the counts and the rows of `schema`; none when they agree. Bounded
 * (bounded.ts): a read that hangs fails naming the schema.
 */
export function countMismatches(
  cluster: PostgresCluster,
  database: string,
  schema: string,
): Promise<string[]> {
  return within(readMismatches(cluster, database, schema), `the counts of schema ${schema} read`);
}

async function readMismatches(cluster: PostgresCluster, database: string, schema: string): Promise<string[]> {
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
