/**
 * Migration 0023 (CHECK constraints as comparisons): the rewritten constraints accept and
 * refuse exactly the values the lists did, on a database that holds jobs and edges from
 * before it, and the INSERTs of jobs and edges no longer build a temporary B-tree per row
 * (what the migration is for: SQLite rebuilds an IN list's table for every row a CHECK checks).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { migrate, schemaVersion } from '../../src/store/sqlite/migrate.ts';

const rewrite = migrations.findIndex((m) => m.name.endsWith('_checks_without_lists.sql'));

/** A database migrated with `steps`, holding one queue, a job in every state and an edge. */
function database(dir: string, name: string, steps = migrations): Database.Database {
  const db = new Database(join(dir, name));
  migrate(db, steps);
  db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
  const insert = db.prepare(
    `INSERT INTO jobs (seq, id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms)
     VALUES (?, ?, 'q', 't', ?, 0, x'00', 'x', 1, 1, 1)`,
  );
  const states = ['scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled', 'waiting'];
  for (const [i, state] of states.entries()) insert.run(i + 1, `job-${i + 1}`, state);
  db.exec("INSERT INTO job_dependencies (child_seq, parent_id, policy) VALUES (7, 'job-3', 'cancel')");
  return db;
}

/** What each candidate value does to each checked column: 'ok', or the kind of error. */
function verdicts(db: Database.Database): string[] {
  const valid =
    'scheduled ready leased completed dead cancelled waiting attempts_exhausted lease_expired dead_lettered expired timeout pending failed cancel run wait';
  const candidates = [
    ...valid.split(' ').map((word) => `'${word}'`),
    ...["''", "'READY'", "'ready '", 'NULL', '1', "x'7265616479'", "CAST('dead' AS BLOB)"],
  ];
  const columns = [
    ['jobs', 'state', 'seq = 2'],
    ['jobs', 'dead_reason', 'seq = 5'],
    ['job_dependencies', 'state', 'child_seq = 7'],
    ['job_dependencies', 'policy', 'child_seq = 7'],
  ];
  const out: string[] = [];
  for (const [table, column, where] of columns) {
    for (const value of candidates) {
      let verdict = 'ok';
      db.exec('SAVEPOINT probe');
      try {
        db.exec(`UPDATE ${table} SET ${column} = ${value} WHERE ${where}`);
      } catch (error) {
        verdict = String((error as Error).message).replace(/:.*$/, '');
      }
      db.exec('ROLLBACK TO probe; RELEASE probe');
      out.push(`${table}.${column} = ${value}: ${verdict}`);
    }
  }
  return out;
}

test('0023: the same values accepted and refused as before, rows kept, no temporary B-tree per inserted row', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  assert.ok(rewrite > 0, 'the migration is embedded');
  const before = database(dir, 'before.db', migrations.slice(0, rewrite));
  const after = database(dir, 'after.db', migrations.slice(0, rewrite));
  try {
    const applied = migrate(after);
    assert.deepEqual(
      applied.map((step) => step.version),
      migrations.slice(rewrite).map((m) => m.version),
    );
    assert.equal(schemaVersion(after), migrations.at(-1)?.version);
    assert.equal(after.pragma('integrity_check', { simple: true }), 'ok');
    assert.equal(after.prepare('SELECT count(*) FROM jobs').pluck().get(), 7);
    const expected = verdicts(before);
    assert.ok(expected.some((v) => v.endsWith(': ok')) && expected.some((v) => v.includes('CHECK')));
    assert.deepEqual(verdicts(after), expected);

    const ephemeralTables = (db: Database.Database, sql: string, params: number) =>
      (db.prepare(`EXPLAIN ${sql}`).all(...Array<null>(params).fill(null)) as { opcode: string }[]).filter(
        (op) => op.opcode === 'OpenEphemeral',
      ).length;
    const insertJob = `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts,
      enqueued_at_ms, run_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
    const insertEdge =
      'INSERT INTO job_dependencies (child_seq, parent_id, state, policy) VALUES (?, ?, ?, ?)';
    assert.equal(ephemeralTables(before, insertJob, 10), 2, 'the lists built their tables per row');
    assert.equal(ephemeralTables(after, insertJob, 10), 0);
    assert.equal(ephemeralTables(before, insertEdge, 4), 2);
    assert.equal(ephemeralTables(after, insertEdge, 4), 0);
  } finally {
    before.close();
    after.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
