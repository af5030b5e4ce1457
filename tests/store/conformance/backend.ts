/**
 * What the conformance suite needs of a backend: a place for a store's data,
 * and a way to open a store on it (again, after a close: a restart). Each
 * backend has a factory (sqlite.test.ts today); the cases (cases/) know only
 * the Store interface and the engine.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../../src/store/store.ts';

export interface StoreBackend {
  readonly name: string;
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

/** The SQLite store, on a temporary data directory (durability `relaxed`: no fsync per commit). */
export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  create() {
    const dir = mkdtempSync(join(scratchDir, 'sepp-conformance-'));
    return {
      open: () => openSqliteStore(dir, { durability: 'relaxed' }),
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};
