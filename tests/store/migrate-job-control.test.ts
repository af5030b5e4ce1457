/**
 * Migration 0009 widens the CHECK constraints of jobs.state and
 * jobs.dead_reason in place (writable_schema, as SQLite documents) on a
 * database that already holds jobs, keeps every row and counter, and a
 * migration whose edited definition does not parse is rolled back whole.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { counterMismatches, prepareCountStatements } from '../../src/store/sqlite/counts.ts';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { migrate, schemaVersion } from '../../src/store/sqlite/migrate.ts';

const jobControl = migrations.findIndex((m) => m.name.endsWith('_job_control.sql'));

function withDatabase(body: (db: Database.Database) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  const db = new Database(join(dir, 'sepp.db'));
  try {
    body(db);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A database as the release before job control left it: queues, jobs in every state, their counts. */
function fillBefore(db: Database.Database): void {
  assert.ok(jobControl > 0, 'the job control migration is embedded');
  migrate(db, migrations.slice(0, jobControl));
  db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
  const insert = db.prepare(
    `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms, dead_reason)
     VALUES (?, 'q', 't', ?, 0, x'00', 'x', 1, 1, 1, ?)`,
  );
  const states = ['scheduled', 'ready', 'leased', 'completed', 'dead'];
  states.forEach((state, i) => {
    insert.run(`job-${i}`, state, state === 'dead' ? 'lease_expired' : null);
    db.prepare("UPDATE queue_counts SET jobs = jobs + 1 WHERE queue = 'q' AND state = ?").run(state);
  });
}

test('0009 on a database with jobs: new states and columns, every row and counter kept', () => {
  withDatabase((db) => {
    fillBefore(db);
    const applied = migrate(db);
    assert.deepEqual(
      applied.map((step) => step.version),
      migrations.slice(jobControl).map((m) => m.version),
    );
    assert.equal(schemaVersion(db), migrations.at(-1)?.version);
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    assert.equal(db.prepare('SELECT count(*) FROM jobs').pluck().get(), 5);
    const sql = prepareCountStatements(db);
    assert.deepEqual(counterMismatches(sql), []);
    assert.deepEqual(
      sql.queueCounts
        .all('q')
        .map((c) => c.state)
        .sort(),
      // `waiting` comes from 0012 (dependencies), which runs after 0009 here.
      ['cancelled', 'completed', 'dead', 'leased', 'ready', 'scheduled', 'waiting'],
    );
    // The same connection sees the wider constraints (schema_version was bumped), and still refuses others.
    db.exec(
      "UPDATE jobs SET state = 'cancelled', cancelled_at_ms = 5, cancelled_by = 'key:ops' WHERE id = 'job-1'",
    );
    db.exec("UPDATE jobs SET dead_reason = 'expired', expires_at_ms = 7 WHERE id = 'job-4'");
    assert.throws(
      () => db.exec("UPDATE jobs SET state = 'gone' WHERE id = 'job-0'"),
      /CHECK constraint failed/,
    );
    assert.throws(
      () => db.exec("UPDATE jobs SET dead_reason = 'bored' WHERE id = 'job-4'"),
      /CHECK constraint/,
    );
    // A queue created afterwards gets a counter for every state.
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('later', 2)");
    assert.equal(sql.queueCounts.all('later').length, 7);
    // And so does a fresh connection, which parses the stored definition.
    const again = new Database(db.name);
    try {
      again.exec("UPDATE jobs SET state = 'cancelled' WHERE id = 'job-0'");
      assert.equal(schemaVersion(again), migrations.at(-1)?.version);
    } finally {
      again.close();
    }
  });
});

test('a migration whose edited definition does not parse fails, and nothing of it stays', () => {
  withDatabase((db) => {
    fillBefore(db);
    const before = schemaVersion(db);
    const broken = {
      version: before + 1,
      name: 'broken.sql',
      sql: `PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = 'CREATE TABLE jobs (seq INTEGER PRIMARY KEY,' WHERE type = 'table' AND name = 'jobs';
            PRAGMA writable_schema = OFF;`,
    };
    assert.throws(
      () => migrate(db, [...migrations.slice(0, jobControl), broken]),
      /malformed database schema/,
    );
    assert.equal(schemaVersion(db), before);
    assert.equal(db.prepare('SELECT count(*) FROM jobs').pluck().get(), 5);
    // Defensive mode is back on: sqlite_schema cannot be written.
    db.pragma('writable_schema = ON');
    assert.throws(
      () => db.exec("UPDATE sqlite_schema SET sql = sql WHERE name = 'jobs'"),
      /may not be modified/,
    );
  });
});
