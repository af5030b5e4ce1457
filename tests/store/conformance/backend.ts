/**
 * What the conformance suite needs of a backend: a place for a store's data,
 * and a way to open a store on it (again, after a close: a restart). Each
 * backend has a factory (sqlite.test.ts, postgres.test.ts); the cases (cases/)
 * know only the Store interface and the engine.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../../src/store/postgres/migrate.ts';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.ts';
import { closeDatabase } from '../../../src/store/sqlite/close.ts';
import { databaseFileName, openDataDir } from '../../../src/store/sqlite/open.ts';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { type FileCluster, type PostgresCluster, useCluster } from '../../helpers/postgres.ts';

export interface StoreBackend {
  readonly name: string;
  /** Runs of the model case unless SEPP_MODEL_RUNS says: a slower store runs fewer. */
  readonly modelRuns: number;
  /** A new, empty place for one case's data. */
  create(): BackendData;
}

export interface BackendData {
  /** Opens a store on this data (at most one open at a time, as one server per data directory). */
  open(): Store;
  /** Removes the data, or empties it for a later case (every store on it closed). */
  dispose(): void | Promise<void>;
}

/**
 * Where the cases' data lives: a memory file system when there is one. The suite
 * checks semantics, not durability, and the model case opens thousands of stores.
 */
const scratchDir =
  process.env.SEPP_CONFORMANCE_DIR ??
  (existsSync('/dev/shm') && statSync('/dev/shm').isDirectory() ? '/dev/shm' : tmpdir());

/**
 * A data directory whose database went through every migration, made once per process:
 * each case's directory starts as a copy of its database file, so the store opens it as
 * an existing database at the current version instead of migrating a new one. Same
 * tables, same rows (none); opening ran the migrations for about a third of the model
 * case's CPU, which opens a store per run. The migrations themselves are tested by
 * tests/store/migrate-*.test.ts and every server the other tests start.
 */
let migrated: string | undefined;
function migratedDatabase(): string {
  if (migrated === undefined) {
    const dir = mkdtempSync(join(scratchDir, 'sepp-conformance-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    // Closing checkpoints the WAL into the database file and truncates it: one file to copy.
    closeDatabase(openDataDir(dir, { durability: 'relaxed' }));
    migrated = join(dir, databaseFileName);
  }
  return migrated;
}

/** The SQLite store, on a temporary data directory (durability `relaxed`: no fsync per commit). */
export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  // A tier decision, as SEPP_FUZZ_RUNS: `npm test` runs 300 (~20 ms of CPU a run), `npm run
  // test:long` 1,000 (SEPP_MODEL_RUNS). Each `npm test` draws a new base seed, so the sequences
  // tried add up across runs (with seed 12345, a retry that kept a job's first error history
  // failed run 29).
  modelRuns: 300,
  create() {
    const dir = mkdtempSync(join(scratchDir, 'sepp-conformance-'));
    // Owner-only, as sepp creates it (open.ts).
    copyFileSync(migratedDatabase(), join(dir, databaseFileName));
    chmodSync(join(dir, databaseFileName), 0o600);
    return {
      open: () => openSqliteStore(dir, { durability: 'relaxed' }),
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/**
 * The cluster of a PostgreSQL conformance file (useCluster), with fsync off: the suite checks
 * semantics, not durability (as the SQLite backend's `relaxed`, on a memory file system). A
 * commit still waits for its WAL to be written (synchronous_commit stays on), only not for the
 * disk; the model case commits ~3,000 times, each an fdatasync of the WAL otherwise.
 */
export function useConformanceCluster(databasePrefix: string): FileCluster {
  return useCluster(databasePrefix, { settings: { fsync: 'off' } });
}

/**
 * The PostgreSQL store, each case in a schema of its own in one database of a throwaway
 * cluster (tests/helpers/postgres.ts) that the test file starts: `where` gives it once it runs.
 *
 * A case's schema is new, or one an earlier case used and that was then emptied: the rows of
 * every table deleted but the migrations' record, identities restarted. That is the schema as the
 * migrations leave it, which `emptyLikeNew` checks once per process on a schema it migrates
 * for the purpose: they add no row but their own. Migrating a new schema per case cost ~90 ms
 * of CPU (server and test, ~320 ms of wall time at load 6) for each of the model case's runs
 * and the other cases; emptying one takes a few ms.
 * The migrations themselves are tested by tests/store/postgres-*.test.ts and each new schema here.
 */
export function postgresBackend(where: () => { cluster: PostgresCluster; database: string }): StoreBackend {
  let schemas = 0;
  /** Schemas emptied after their case, for the next ones. */
  const emptied: string[] = [];
  let client: Promise<pg.Client> | undefined;
  let checked: Promise<void> | undefined;
  const connection = () => {
    client ??= (async () => {
      const { cluster, database } = where();
      const c = new pg.Client(cluster.connection(database));
      // The cluster goes at the end of the test file, with this connection.
      c.on('error', () => {});
      await c.connect();
      return c;
    })();
    return client;
  };
  return {
    name: 'postgres',
    // A run opens stores over the network (three connections each) and commits and checks each
    // step: ~300 ms of CPU, the server's and the test's (~450 ms at load 30). A tier decision, as
    // SEPP_FUZZ_RUNS: `npm test` runs 15 (300 checked steps; 30 cost ~6 s more CPU at load 50),
    // `npm run test:long` 1,000 (SEPP_MODEL_RUNS). The property is the same at any count: the
    // store agrees with the model after every step; each `npm test` draws a new base seed, so
    // the sequences tried add up across runs, and the engine's logic on the same steps runs 300
    // times a run on SQLite.
    modelRuns: 15,
    create() {
      const { cluster, database } = where();
      const schema = emptied.pop() ?? `conformance_${++schemas}`;
      return {
        open: () => new PostgresStore(cluster.storeOptions(database, schema)),
        dispose: async () => {
          const c = await connection();
          checked ??= emptyLikeNew(c);
          await checked;
          await c.query(`SELECT ${emptySchemaFunction}($1)`, [schema]);
          emptied.push(schema);
        },
      };
    },
  };
}

/** The function (in `public`) that empties a schema as the migrations leave it. */
const emptySchemaFunction = 'public.sepp_conformance_empty';

/**
 * Makes the function that empties a schema, and checks that emptying gives what the
 * migrations give: on a schema migrated for the check, no table holds a row but
 * `schema_migrations`. A migration that adds rows fails this, and the schemas must then
 * be new per case again (or the rows put back after the DELETEs).
 */
async function emptyLikeNew(c: pg.Client): Promise<void> {
  await c.query(`
    CREATE OR REPLACE FUNCTION ${emptySchemaFunction}(target text) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE t record;
    BEGIN
      -- DELETE, not TRUNCATE: that gives each table and index a new file, ~300 ms a schema.
      FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = target AND tablename <> 'schema_migrations' LOOP
        EXECUTE format('DELETE FROM %I.%I', target, t.tablename);
      END LOOP;
      FOR t IN SELECT sequencename FROM pg_sequences WHERE schemaname = target LOOP
        PERFORM setval(format('%I.%I', target, t.sequencename), 1, false);
      END LOOP;
    END $$`);
  const template = 'conformance_as_migrated';
  await migrate(c, template);
  const { rows } = await c.query<{ name: string; rows: number }>(
    `SELECT tablename AS name,
            (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I.%I', schemaname, tablename),
                                                 false, true, '')))[1]::text::int AS rows
       FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'`,
    [template],
  );
  if (rows.length === 0) throw new Error(`the migrations made no table in ${template}`);
  const seeded = rows.filter((r) => r.rows > 0).map((r) => `${r.name} (${r.rows})`);
  if (seeded.length > 0) {
    throw new Error(
      `the migrations add rows to ${seeded.join(', ')}: an emptied schema is not a new one (tests/store/conformance/backend.ts)`,
    );
  }
}
