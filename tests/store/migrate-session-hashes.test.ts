/**
 * Migration 0011 replaces the admin sessions table by one that keeps only
 * hashes (issue 29, item 13): a session stored in clear before it is gone
 * afterwards (its user logs in again, docs/upgrading.md), and nothing else changes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { migrate, schemaVersion } from '../../src/store/sqlite/migrate.ts';

test('0011 ends the sessions stored with a clear CSRF token and keeps only hashes from then on', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  const db = new Database(join(dir, 'sepp.db'));
  try {
    const sessionHashes = migrations.findIndex((m) => m.name.endsWith('_session_hashes.sql'));
    assert.ok(sessionHashes > 0, 'the migration is embedded');
    migrate(db, migrations.slice(0, sessionHashes));
    db.exec(
      `INSERT INTO admin_sessions (id_sha256, user, role, csrf_token, created_at_ms, expires_at_ms)
       VALUES ('h', 'alice', 'admin', 'a-token-in-clear', 1, 9999999999999)`,
    );
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
    migrate(db);
    assert.equal(schemaVersion(db), migrations.at(-1)?.version);
    assert.equal(db.prepare('SELECT count(*) FROM admin_sessions').pluck().get(), 0);
    const columns = db
      .prepare('SELECT name FROM pragma_table_info(?)')
      .pluck()
      .all('admin_sessions') as string[];
    assert.ok(columns.includes('csrf_sha256') && columns.includes('password_tag'));
    assert.ok(!columns.includes('csrf_token'));
    assert.equal(db.prepare('SELECT count(*) FROM queues').pluck().get(), 1, 'the rest is untouched');
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
