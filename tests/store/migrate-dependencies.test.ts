/**
 * Migration 0012 (job dependencies) on a database that already holds jobs in every
 * state: the `waiting` state is allowed, every queue gets its counter, the new
 * column reads 0 for every stored job (so none of them takes a dependency path),
 * and every row and counter is kept. Migration 0022 (an edge in three indexes) on a
 * database with edges: the pending ones are still found and resolved.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { counterMismatches, prepareCountStatements } from '../../src/store/sqlite/counts.ts';
import { prepareDependencyStatements } from '../../src/store/sqlite/dependencies.ts';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { migrate, schemaVersion } from '../../src/store/sqlite/migrate.ts';

const dependencies = migrations.findIndex((m) => m.name.endsWith('_dependencies.sql'));

test('0012 on a database with jobs: a waiting state and counter, new columns 0, every row and counter kept', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  const db = new Database(join(dir, 'sepp.db'));
  try {
    assert.ok(dependencies > 0, 'the dependencies migration is embedded');
    migrate(db, migrations.slice(0, dependencies));
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
    const insert = db.prepare(
      `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms)
       VALUES (?, 'q', 't', ?, 0, x'00', 'x', 1, 1, 1)`,
    );
    const states = ['scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled'];
    states.forEach((state, i) => {
      insert.run(`job-${i}`, state);
      db.prepare("UPDATE queue_counts SET jobs = jobs + 1 WHERE queue = 'q' AND state = ?").run(state);
    });
    assert.throws(() => db.exec("UPDATE jobs SET state = 'waiting' WHERE id = 'job-0'"), /CHECK constraint/);

    const applied = migrate(db);
    assert.deepEqual(
      applied.map((step) => step.version),
      migrations.slice(dependencies).map((m) => m.version),
    );
    assert.equal(schemaVersion(db), migrations.at(-1)?.version);
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    const sql = prepareCountStatements(db);
    assert.deepEqual(counterMismatches(sql), []);
    assert.equal(sql.inState.get('q', 'waiting'), 0);
    assert.deepEqual(db.prepare('SELECT DISTINCT dependency_flags FROM jobs').all(), [
      { dependency_flags: 0 },
    ]);
    db.exec("UPDATE jobs SET state = 'waiting' WHERE id = 'job-0'");
    assert.throws(() => db.exec("UPDATE jobs SET state = 'gone' WHERE id = 'job-1'"), /CHECK constraint/);
    assert.throws(
      () =>
        db.exec("INSERT INTO job_dependencies (child_seq, parent_id, policy) VALUES (1, 'job-1', 'maybe')"),
      /CHECK constraint/,
    );
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('later', 2)");
    assert.equal(sql.queueCounts.all('later').length, 7);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('0022 on a database with edges: pending edges found through the parent index, resolved ones passed over', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  const db = new Database(join(dir, 'sepp.db'));
  try {
    const threeIndexes = migrations.findIndex((m) => m.name.endsWith('_dependency_edges_three_indexes.sql'));
    assert.ok(threeIndexes > dependencies, 'the migration is embedded');
    migrate(db, migrations.slice(0, threeIndexes));
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
    const insert = db.prepare(
      `INSERT INTO jobs (seq, id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms)
       VALUES (?, ?, 'q', 't', ?, 0, x'00', 'x', 1, 1, 1)`,
    );
    insert.run(1, 'parent', 'leased');
    insert.run(2, 'done', 'completed');
    insert.run(3, 'child-a', 'waiting');
    insert.run(4, 'child-b', 'waiting');
    db.exec(`INSERT INTO job_dependencies (child_seq, parent_id, state, policy) VALUES
      (3, 'parent', 'pending', 'cancel'), (3, 'done', 'completed', 'cancel'),
      (4, 'done', 'completed', 'cancel'), (4, 'parent', 'pending', 'cancel')`);

    migrate(db);
    const names = db
      .prepare("SELECT name FROM sqlite_schema WHERE tbl_name = 'job_dependencies'")
      .pluck()
      .all();
    assert.ok(!names.includes('job_dependencies_pending'), 'the duplicate index is gone');
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    const sql = prepareDependencyStatements(db);
    assert.deepEqual(
      sql.pendingChildren.all('parent').map((row) => row.id),
      ['child-a', 'child-b'],
    );
    assert.deepEqual(sql.pendingChildren.all('done'), []);
    assert.deepEqual(sql.resolveCompleted.all(JSON.stringify(['parent', 'done'])).sort(), [3, 4]);
    assert.deepEqual(sql.pendingChildren.all('parent'), []);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('0030 on a database with batch members: each a lease can take gets its batch id, by the id index; others none', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-migrate-'));
  const db = new Database(join(dir, 'sepp.db'));
  try {
    const batchIds = migrations.findIndex((m) => m.name.endsWith('_job_batch_id.sql'));
    assert.ok(batchIds > dependencies, 'the migration is embedded');
    migrate(db, migrations.slice(0, batchIds));
    db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('q', 1)");
    const insert = db.prepare(
      `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms, dependency_flags)
       VALUES (?, 'q', 't', ?, 0, x'00', 'x', 1, 1, 1, ?)`,
    );
    insert.run('plain', 'ready', 0);
    insert.run('member-1', 'ready', 4);
    insert.run('member-2', 'dead', 4);
    // Its lease is over: the migration leaves its row alone.
    insert.run('member-done', 'completed', 4);
    db.exec(`INSERT INTO batches (id, state, created_at_ms, members, pending) VALUES ('b1', 'sealed', 1, 1, 1), ('b2', 'open', 1, 2, 1);
             INSERT INTO batch_members (job_id, batch_id, position) VALUES ('member-1', 'b1', 0), ('member-2', 'b2', 0),
               ('member-done', 'b2', 1), ('swept-job', 'b2', 2)`);
    migrate(db);
    assert.deepEqual(db.prepare('SELECT id, batch_id FROM jobs ORDER BY id').all(), [
      { id: 'member-1', batch_id: 'b1' },
      { id: 'member-2', batch_id: 'b2' },
      { id: 'member-done', batch_id: null },
      { id: 'plain', batch_id: null },
    ]);
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    // Its UPDATE finds the members' rows through the id index, not by a scan of the jobs.
    const { sql } = migrations[batchIds]!;
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${sql.slice(sql.search(/^UPDATE/m))}`)
      .all()
      .map((row) => (row as { detail: string }).detail);
    assert.ok(
      plan.some((detail) => /^SEARCH jobs USING (COVERING )?INDEX/.test(detail)),
      plan.join('\n'),
    );
    assert.ok(!plan.some((detail) => /^SCAN jobs\b/.test(detail)), plan.join('\n'));
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
