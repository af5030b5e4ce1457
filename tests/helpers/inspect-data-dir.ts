/**
 * Looks into the database of a server that is not running (killed or
 * stopped), read-only, as an operator's forensics would: SQLite's integrity
 * check, the per-queue counters against the rows, and the rows themselves.
 * A read-only connection changes nothing a restart depends on (at most it
 * rebuilds the WAL index in the `-shm` file, as the next server would).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { counterMismatches, prepareCountStatements } from '../../src/store/sqlite/counts.ts';
import { databaseFileName } from '../../src/store/sqlite/open.ts';
import type { JobRowSummary } from './crash-ledger.ts';

export interface DataDirSnapshot {
  /** `ok` when SQLite finds nothing wrong. */
  integrity: string;
  counterMismatches: string[];
  /** Every job by id. */
  rows: Map<string, JobRowSummary>;
  /** Rows per state. */
  states: Record<string, number>;
}

export function inspectDataDir(dataDir: string): DataDirSnapshot {
  const path = join(dataDir, databaseFileName);
  // A server killed before it created its database leaves nothing to check.
  if (!existsSync(path)) return { integrity: 'ok', counterMismatches: [], rows: new Map(), states: {} };
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 0 });
  try {
    const integrity = String(db.pragma('integrity_check', { simple: true }));
    // Killed before the first migration committed: no tables yet.
    if (db.pragma('user_version', { simple: true }) === 0)
      return { integrity, counterMismatches: [], rows: new Map(), states: {} };
    // SELECT *: a server killed during its first start may have stopped before the migration adding `result`.
    const rows = new Map(
      db
        .prepare<[], { id: string; state: string; payload: Buffer; result?: Buffer | null }>(
          'SELECT * FROM jobs',
        )
        .all()
        .map((r) => [r.id, { state: r.state, payload: r.payload, result: r.result ?? null }]),
    );
    const states: Record<string, number> = {};
    for (const r of rows.values()) states[r.state] = (states[r.state] ?? 0) + 1;
    return { integrity, counterMismatches: counterMismatches(prepareCountStatements(db)), rows, states };
  } finally {
    db.close();
  }
}
