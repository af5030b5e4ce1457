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
import { prepareAdminStatements } from '../../src/store/sqlite/admin-statements.ts';
import { prepareBrowseStatements } from '../../src/store/sqlite/browse-statements.ts';
import { prepareFlowStatements } from '../../src/store/sqlite/flow-statements.ts';
import { type Db, openDataDir } from '../../src/store/sqlite/open.ts';
import { prepareStatements } from '../../src/store/sqlite/statements.ts';

interface Prepared {
  source: string;
}

function plan(db: Db, statement: Prepared): string[] {
  const names = [...new Set([...statement.source.matchAll(/@([a-z_]+)/g)].map((m) => m[1]!))];
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
 * index, grouped by worker: as many rows as there are leases, not jobs).
 */
const allowedScans = new Set([
  'allQueues',
  'allCounts',
  'countsFromRows',
  'seqsAnyTypeAsc',
  'seqsAnyTypeDesc',
  'queuesWithGroups',
  'idsContaining',
  'leasesByWorker',
  'storedJobs',
]);

test('every admin and engine statement reads through an index, without sorting', () => {
  withDb((db) => {
    const all = {
      ...prepareStatements(db),
      ...prepareAdminStatements(db),
      ...prepareBrowseStatements(db),
      ...prepareFlowStatements(db),
    };
    const problems: string[] = [];
    for (const [name, statement] of Object.entries(all)) {
      const source = (statement as unknown as Prepared).source;
      if (!/^\s*(SELECT|UPDATE|DELETE|INSERT)/i.test(source) || allowedScans.has(name)) continue;
      for (const step of plan(db, statement as unknown as Prepared)) {
        const scan = /^SCAN (?!json_each)/.test(step);
        if (scan || step.includes('TEMP B-TREE')) problems.push(`${name}: ${step}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});

test('the hot path keeps its indexes', () => {
  withDb((db) => {
    const sql = prepareStatements(db);
    const uses = (statement: Prepared, index: string) =>
      assert.ok(
        plan(db, statement).some((step) => step.includes(`INDEX ${index} `)),
        `${statement.source} uses ${index}`,
      );
    uses(sql.leaseReady, 'jobs_ready');
    uses(sql.oldestReadyAtPriority, 'jobs_ready');
    uses(sql.promoteDue, 'jobs_scheduled');
    uses(sql.expiredLeases, 'jobs_leased');
    uses(sql.sweepDead, 'jobs_dead');
    uses(sql.deadPageByReason, 'jobs_dead_reason');
    const admin = prepareAdminStatements(db);
    uses(admin.seqsOfTypeAsc, 'jobs_by_state_type');
    uses(admin.jobIdByIdempotencyKey, 'jobs_idempotency');
    uses(admin.auditPageByActor, 'audit_log_actor');
    // The lease picks its jobs from the index alone: a table read per candidate cost ~15 % more CPU per lease.
    assert.ok(
      plan(db, sql.leaseReady).some((step) => step.includes('COVERING INDEX jobs_ready ')),
      'the plain lease chooses its jobs from jobs_ready alone',
    );
    const flow = prepareFlowStatements(db);
    uses(flow.topUngroupedPriority, 'jobs_ready');
    uses(flow.hasUngroupedAt, 'jobs_ready');
    uses(flow.leaseUngroupedAt, 'jobs_ready');
    uses(flow.topGroupedPriority, 'jobs_group_ready');
    uses(flow.nextGroupAt, 'jobs_group_ready');
    uses(flow.leaseGroupAt, 'jobs_group_ready');
    uses(flow.leasedInGroup, 'jobs_group_leased');
    uses(flow.sweepBuckets, 'flow_buckets_refilled');
    const browse = prepareBrowseStatements(db);
    uses(browse.dueScanAsc, 'jobs_scheduled_due');
    uses(browse.retryScanDesc, 'jobs_retrying_due');
    uses(browse.seqScanAsc, 'jobs_by_state_type');
    // Filters no index answers (error text, metadata, group) read the candidate rows by primary key only.
    assert.ok(
      plan(db, browse.residual).includes('SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)'),
      'the residual filter reads the rows the index ranges found, by seq',
    );
    assert.ok(
      plan(db, browse.leasesByWorker).includes('SCAN jobs USING INDEX jobs_leased'),
      'leases: the leased rows only',
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
