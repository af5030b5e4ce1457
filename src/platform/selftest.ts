/**
 * `sepp selftest`: proves that this build can run SQLite at all — the native addon loads
 * (from the embedded asset in the single executable), WAL mode works in a real
 * directory, and a row survives a write and a read. The packaging smoke test runs it on
 * the binary copied alone into an empty directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { nativeBindingPath } from './native-binding.ts';

export interface SelfTestResult {
  readonly sqliteVersion: string;
  readonly journalMode: string;
  /** Where the addon was loaded from; `default` means better-sqlite3 found it itself. */
  readonly nativeBinding: string;
}

export function runStoreSelfTest(): SelfTestResult {
  const binding = nativeBindingPath();
  const dir = mkdtempSync(join(tmpdir(), 'sepp-selftest-'));
  try {
    const db = new Database(
      join(dir, 'selftest.db'),
      binding === undefined ? {} : { nativeBinding: binding },
    );
    try {
      const journalMode = String(db.pragma('journal_mode = WAL', { simple: true }));
      if (journalMode !== 'wal') throw new Error(`journal_mode is ${journalMode}, expected wal`);
      db.exec('CREATE TABLE probe (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
      db.prepare('INSERT INTO probe (note) VALUES (?)').run('hello');
      const row = db.prepare('SELECT note FROM probe WHERE id = 1').get() as { note: string } | undefined;
      if (row?.note !== 'hello')
        throw new Error(`read back ${JSON.stringify(row)}, expected the note "hello"`);
      const sqliteVersion = String(db.prepare('SELECT sqlite_version()').pluck().get());
      return { sqliteVersion, journalMode, nativeBinding: binding ?? 'default' };
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
