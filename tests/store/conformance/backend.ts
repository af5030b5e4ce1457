/**
 * What the conformance suite needs of a backend: a place for a store's data,
 * and a way to open a store on it (again, after a close: a restart). Each
 * backend has a factory (sqlite.test.ts, postgres.test.ts); the cases (cases/)
 * know only the Store interface and the engine.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.ts';
import { closeDatabase } from '../../../src/store/sqlite/close.ts';
import { databaseFileName, openDataDir } from '../../../src/store/sqlite/open.ts';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../../src/store/store.ts';
import type { PostgresCluster } from '../../helpers/postgres.ts';

export interface StoreBackend {
  readonly name: string;
  /** Runs of the model case unless SEPP_MODEL_RUNS says (default 1,000): a slower store runs fewer. */
  readonly modelRuns?: number;
  /** A new, empty place for one case's data. */
  create(): BackendData;
}

export interface BackendData {
  /** Opens a store on this data (at most one open at a time, as one server per data directory). */
  open(): Store;
  /** Removes the data (every store on it closed). */
  dispose(): void;
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
 * The PostgreSQL store, each case in a schema of its own in one database of a throwaway
 * cluster (tests/helpers/postgres.ts) that the test file starts: `where` gives it once it runs.
 */
export function postgresBackend(where: () => { cluster: PostgresCluster; database: string }): StoreBackend {
  let schemas = 0;
  return {
    name: 'postgres',
    // A run opens stores over the network and commits each step with an fsync: ~3 s a run.
    modelRuns: 100,
    create() {
      const { cluster, database } = where();
      const schema = `conformance_${++schemas}`;
      return {
        open: () =>
          new PostgresStore({
            url: cluster.urlWithoutPassword(database),
            password: cluster.password,
            schema,
            poolSize: 3,
            statementTimeoutMs: 30_000,
          }),
        // The schemas go with the cluster, when the test file closes it.
        dispose: () => {},
      };
    },
  };
}
