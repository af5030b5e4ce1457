/**
 * Which store the test servers (server.ts) run on: the SQLite store of their
 * temporary data directory, or — with SEPP_TEST_STORE=postgres — the PostgreSQL
 * store, one throwaway cluster per test process (postgres.ts, started on first
 * use and removed when the process exits) and a schema of its own per test
 * server, kept across that server's restarts. So the rpc and client suites run
 * against either store unchanged:
 *
 *     SEPP_TEST_STORE=postgres node scripts/run-tests.mjs tests/rpc tests/client
 */
import { type PostgresCluster, startPostgres } from './postgres.ts';

export type TestStoreKind = 'sqlite' | 'postgres';

export const testStoreKind: TestStoreKind =
  process.env.SEPP_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** The variable the test servers' config names for the PostgreSQL password. */
const passwordVariable = 'SEPP_TEST_POSTGRES_PASSWORD';

let shared: Promise<{ cluster: PostgresCluster; database: string }> | undefined;
let schemas = 0;
const schemaOf = new Map<string, string>();

/**
 * What a test server with this data directory adds to its config to run on the store under
 * test: a `[store]` table for its file and the variables it reads. Nothing for SQLite.
 */
export async function testStoreConfig(
  dataDir: string,
): Promise<{ toml: string; env: Record<string, string> }> {
  if (testStoreKind === 'sqlite') return { toml: '', env: {} };
  shared ??= startPostgres({ unref: true }).then(async (cluster) => ({
    cluster,
    database: await cluster.createDatabase('servers'),
  }));
  const { cluster, database } = await shared;
  let schema = schemaOf.get(dataDir);
  if (schema === undefined) {
    schema = `server_${++schemas}`;
    schemaOf.set(dataDir, schema);
  }
  return {
    toml: `\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_env = "${passwordVariable}"\nschema = "${schema}"\n`,
    env: { [passwordVariable]: cluster.password },
  };
}
