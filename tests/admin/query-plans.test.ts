/**
 * Every admin query is an index read (SPEC §7: ≤ 100 ms with a million jobs):
 * EXPLAIN QUERY PLAN of each admin statement shows no table scan and no sort.
 * The engine's own statements are checked too, so the indexes added for the
 * admin never steal a hot-path query from the index it was written for.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { prepareAuditStatements } from '../../src/store/sqlite/audit.ts';
import { prepareBrowseStatements } from '../../src/store/sqlite/browse.ts';
import { prepareBulkStatements } from '../../src/store/sqlite/bulk.ts';
import { prepareControlStatements } from '../../src/store/sqlite/control.ts';
import { prepareCountStatements } from '../../src/store/sqlite/counts.ts';
import { prepareDeadLetterStatements } from '../../src/store/sqlite/dead-letters.ts';
import { markParentsSql, prepareDependencyStatements } from '../../src/store/sqlite/dependencies.ts';
import { prepareFlowStatements } from '../../src/store/sqlite/flow.ts';
import { prepareJobStatements } from '../../src/store/sqlite/jobs.ts';
import { prepareKeyStatements } from '../../src/store/sqlite/keys.ts';
import { prepareLeaseStatements } from '../../src/store/sqlite/leases.ts';
import { type Db, openDataDir } from '../../src/store/sqlite/open.ts';
import { prepareQueueStatements } from '../../src/store/sqlite/queues.ts';
import { prepareScheduleStatements } from '../../src/store/sqlite/schedules.ts';
import { prepareSessionStatements } from '../../src/store/sqlite/sessions.ts';
import { prepareSettingStatements } from '../../src/store/sqlite/settings.ts';

interface Prepared {
  source: string;
}

function plan(db: Db, statement: Prepared): string[] {
  const names = [...new Set([...statement.source.matchAll(/@([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))];
  const positional = (statement.source.match(/\?/g) ?? []).length;
  const explain = db.prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${statement.source}`);
  const rows =
    names.length > 0
      ? explain.all(Object.fromEntries(names.map((n) => [n, 1])))
      : explain.all(...Array(positional).fill('x'));
  return rows.map((r) => r.detail);
}

function withDb(fn: (db: Db) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-plans-'));
  const db = openDataDir(dir, { durability: 'relaxed' });
  try {
    fn(db);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Reads over whole tiny tables; the fallback for queues with hundreds of job types
 * (job-queries.ts); and the bounded reads of browse-statements.ts: the newest ids
 * (LIMIT @scan of the id index) and the leases held now (the jobs_leased partial
 * index, grouped by worker: as many rows as there are leases, not jobs); top errors
 * (the newest LIMIT @scan dead letters of one queue through jobs_dead, grouped in a
 * temporary tree: at most 50,000 rows, read only by an operator's page).
 */
const allowedScans = new Set([
  'allQueues',
  'allCounts',
  'countsFromRows',
  'seqsAnyTypeAsc',
  'seqsAnyTypeDesc',
  // A state's one range across types, for a store that keeps the state in no index by type:
  // none on SQLite, so no list reads it (src/store/browse.ts unindexedByType).
  'acrossTypesAsc',
  'acrossTypesDesc',
  'queuesWithGroups',
  'idsContaining',
  'leasesByWorker',
  'errorGroups',
  'storedJobs',
  // Whole small tables, bounded by limits and read only at start or by an operator's listing:
  // schedules (limits.max_schedules), run-time overrides (settings × queues) and admin
  // sessions (users × admin.max_sessions_per_user, read once as the admin app starts).
  'allSchedules',
  'scheduleCount',
  'allOverrides',
  'liveSessions',
  // Workflows: the queues that ever had a waiting job (read once at open); the unended batches
  // (a count over their partial index, bounded by limits.max_open_batches_per_key per key);
  // one job's edges in the order of their jobs (a sort of at most max_dependencies_per_job rows),
  // and a lease's jobs' edges (at most max_reserve_jobs × max_dependencies_per_job rows, each a
  // result passed on in the same answer).
  'queuesWithDependencies',
  'unendedBatches',
  'edgesOf',
  'edgesOfSeq',
  'edgesOfSeqs',
  // The jobs whose failure is still to pass on, in key order up to LIMIT: the WITHOUT ROWID
  // table is its own index (empty but for a long chain being cancelled). The rows deleted
  // jobs left behind: read whole by counterMismatches only (tests and diagnostics).
  'keptFailures',
  'countsLeft',
  'edgesLeft',
  // How many waiting jobs a delete of some dead letters cancels, for the admin's dialog: the
  // distinct waiting jobs, up to LIMIT (1,000), in a temporary tree of at most that many rows.
  'waitingOnDead',
]);

test('every statement of the SQLite store reads through an index, without sorting', () => {
  withDb((db) => {
    const all = {
      ...prepareQueueStatements(db),
      ...prepareCountStatements(db),
      ...prepareJobStatements(db),
      ...prepareKeyStatements(db),
      ...prepareLeaseStatements(db),
      ...prepareFlowStatements(db),
      ...prepareControlStatements(db),
      ...prepareDeadLetterStatements(db),
      ...prepareBrowseStatements(db),
      ...prepareScheduleStatements(db),
      ...prepareAuditStatements(db),
      ...prepareSettingStatements(db),
      ...prepareSessionStatements(db),
      ...prepareDependencyStatements(db),
    };
    // Every module's statements are here, none shadowed by another's of the same name.
    const count = [
      prepareQueueStatements,
      prepareCountStatements,
      prepareJobStatements,
      prepareKeyStatements,
      prepareLeaseStatements,
      prepareFlowStatements,
      prepareControlStatements,
      prepareDeadLetterStatements,
      prepareBrowseStatements,
      prepareScheduleStatements,
      prepareAuditStatements,
      prepareSettingStatements,
      prepareSessionStatements,
      prepareDependencyStatements,
    ].reduce((n, prepare) => n + Object.keys(prepare(db)).length, 0);
    assert.equal(Object.keys(all).length, count);
    const problems: string[] = [];
    for (const [name, statement] of Object.entries(all)) {
      const source = (statement as unknown as Prepared).source;
      if (!/^\s*(SELECT|UPDATE|DELETE|INSERT)/i.test(source) || allowedScans.has(name)) continue;
      for (const step of plan(db, statement as unknown as Prepared)) {
        // Reading a subquery's own result is no scan of a table: the subquery's steps are
        // in the plan too, and checked like any other (readyHeads: 10 of them, LIMITed).
        const scan = /^SCAN (?!json_each|\(subquery-|CONSTANT ROW)/.test(step);
        if (scan || step.includes('TEMP B-TREE')) problems.push(`${name}: ${step}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});

test('the hot path keeps its indexes', () => {
  withDb((db) => {
    const leases = prepareLeaseStatements(db);
    const jobs = prepareJobStatements(db);
    const uses = (statement: Prepared, index: string) =>
      assert.ok(
        plan(db, statement).some((step) => step.includes(`INDEX ${index} `)),
        `${statement.source} uses ${index}`,
      );
    uses(leases.leaseReady, 'jobs_ready');
    uses(prepareQueueStatements(db).oldestReadyAtPriority, 'jobs_ready');
    uses(jobs.promoteDue, 'jobs_scheduled');
    uses(leases.expiredLeases, 'jobs_leased');
    uses(jobs.sweepDead, 'jobs_dead');
    uses(prepareDeadLetterStatements(db).deadPageByReason, 'jobs_dead_reason');
    uses(prepareBrowseStatements(db).seqsOfTypeAsc, 'jobs_by_state_type');
    uses(prepareKeyStatements(db).jobIdByIdempotencyKey, 'jobs_idempotency');
    uses(prepareAuditStatements(db).auditPageByActor, 'audit_log_actor');
    // The lease picks its jobs from the index alone: a table read per candidate cost ~15 % more CPU per lease.
    assert.ok(
      plan(db, leases.leaseReady).some((step) => step.includes('COVERING INDEX jobs_ready ')),
      'the plain lease chooses its jobs from jobs_ready alone',
    );
    const flow = prepareFlowStatements(db);
    uses(flow.topUngroupedPriority, 'jobs_ready');
    uses(flow.hasUngroupedAt, 'jobs_ready');
    uses(leases.leaseUngroupedAt, 'jobs_ready');
    uses(flow.topGroupedPriority, 'jobs_group_ready');
    uses(flow.nextGroupAt, 'jobs_group_ready');
    uses(leases.leaseGroupAt, 'jobs_group_ready');
    uses(flow.leasedInGroup, 'jobs_group_leased');
    uses(flow.sweepBuckets, 'flow_buckets_refilled');
    // A job's edges: the waiting job's seq found by id, every parent found by id.
    const dependencies = prepareDependencyStatements(db);
    uses(dependencies.childSeq, 'sqlite_autoindex_jobs_1');
    uses(dependencies.markDependedOn, 'sqlite_autoindex_jobs_1');
    for (const rows of [4, 20, 50])
      uses(
        db.prepare(markParentsSql(Array.from({ length: rows }, () => '(?)').join(', '))),
        'sqlite_autoindex_jobs_1',
      );
    uses(dependencies.pendingChildren, 'job_dependencies_parent');
    uses(dependencies.resolveCompleted, 'job_dependencies_parent');
    uses(dependencies.anyPending, 'job_dependencies_pending_child');
    const browse = prepareBrowseStatements(db);
    uses(browse.dueScanAsc, 'jobs_scheduled_due');
    uses(browse.retryScanDesc, 'jobs_retrying_due');
    uses(browse.seqScanAsc, 'jobs_by_state_type');
    // Filters no index answers (error text, metadata, group, age, a dead reason) read the candidate rows by primary key only.
    assert.ok(
      plan(db, browse.residual).includes('SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)'),
      'the residual filter reads the rows the index ranges found, by seq',
    );
    // A schedule's jobs (idempotency key shapes) too, in the list's filter and in a bulk slice
    // (the count of "all N matching" and each change): the candidates by seq, nothing else.
    for (const statement of [browse.residual, prepareBulkStatements(db).countMatching]) {
      const other = plan(db, statement).filter(
        (step) =>
          !/^(SCAN json_each|LIST SUBQUERY \d+$|SEARCH jobs USING INTEGER PRIMARY KEY \(rowid=\?\)$)/.test(
            step,
          ),
      );
      assert.deepEqual(other, [], statement.source);
    }
    assert.ok(
      plan(db, leases.leasesByWorker).includes('SCAN jobs USING COVERING INDEX jobs_leased'),
      'leases: the leased entries of the index only, no table read (Workers page at 80,000 leases)',
    );
    // The newest ids: the id index read backwards, a covering read that stops at @scan.
    assert.ok(
      plan(db, browse.idsContaining).some((step) => /COVERING INDEX sqlite_autoindex_jobs_1/.test(step)),
    );
    assert.ok(
      plan(db, browse.idsByPrefix).some((step) =>
        /SEARCH jobs USING COVERING INDEX sqlite_autoindex_jobs_1 \(id>\? AND id<\?\)/.test(step),
      ),
    );
  });
});
