/**
 * The dependency edges (schema/0012_dependencies.sql): who waits on whom, and the
 * release of a waiting job. Every statement is a primary-key or index probe bounded
 * by one job's edges; none runs for a job without dependencies or dependents.
 */
import {
  afterEveryBatchId,
  type BatchMemberRow,
  type BatchRow,
  batchMember,
  type Dependencies,
  type DependencyEdgeRow,
  type DependencyTargetRow,
  type DependentRow,
  type DependentsAdded,
  type EdgeState,
  type FlowJobRow,
  type JobResultRow,
  jobsWaitOnIt,
  type KeptFailureRow,
  leftoverLines,
  type MemberState,
  type ReleasedRow,
  type WaitingChildRow,
} from '../dependencies.ts';
import type { Op } from '../op.ts';
import { MultiRowStatement } from './multi-row.ts';
import { objectRows } from './object-rows.ts';
import type { Preparer } from './prepare-on-use.ts';

/**
 * From this many edges a job's edges are stored with two statements of many rows rather
 * than two per edge: measured (a table of 50,000 jobs, CPU per job's edges) 4 edges
 * 59 → 55 µs, 8 edges 109 → 72 µs, 20 edges 270 → 140-158 µs; below it the set form cost
 * more than it saved (1 edge 18 → 27 µs, 2 edges 31 → 37 µs). Checked again with the
 * waiting job's seq bound (then returned by the UPDATE that marked it; its INSERT marks it
 * now, and the seq is read once) rather than read per edge: in the engine, 20 edges one by
 * one still cost 1.3-1.8× the set statements. Those
 * were JSON arrays (json_each) until multi-row VALUES statements of the exact size
 * (multi-row.ts, up to 50 rows each) measured cheaper: 20 edges' INSERT 126-155 → 109 µs,
 * the parents' UPDATE 42-45 → 30-32 µs (statements alone; docs/decisions/0012, (h)). A
 * flow's own parents are marked by their INSERT (NewJobRow.dependency_flags, decision 0012
 * (j)): the UPDATE runs for the others only.
 */
const manyEdges = 4;

/** One edge's row of the multi-row INSERT: child_seq, parent_id, state, policy, name. */
type EdgeRow = readonly [number, string, EdgeState, string, string | null];

/**
 * The parents of a job's edges marked as depended on, found by id (`tuples`: `(?), …`). A
 * parent already marked is not written again (a root that 20 jobs wait on is written once).
 */
export const markParentsSql = (tuples: string) =>
  `UPDATE jobs SET dependency_flags = dependency_flags | ${jobsWaitOnIt}
    WHERE id IN (VALUES ${tuples}) AND dependency_flags & ${jobsWaitOnIt} = 0`;

/** A job's edges from manyEdges on: the INSERT of their rows, and the mark of their parents. */
function prepareEdgeSets(db: Preparer) {
  return {
    addEdges: new MultiRowStatement<EdgeRow, never>(
      db,
      5,
      (tuples) => `INSERT INTO job_dependencies (child_seq, parent_id, state, policy, name) VALUES ${tuples}`,
      (values, offset, edge) => {
        for (let i = 0; i < 5; i++) values[offset + i] = edge[i]!;
      },
      'exact',
    ),
    markEdgesDependedOn: new MultiRowStatement<string, never>(
      db,
      1,
      (tuples) => markParentsSql(tuples),
      (values, offset, parentId) => {
        values[offset] = parentId;
      },
      'exact',
    ),
  };
}

export function prepareDependencyStatements(db: Preparer) {
  return {
    // A named job and its count of dependents; without a row, its edges (Dependencies.countDependents).
    target: db.prepare<[string], DependencyTargetRow>(
      `SELECT j.id, j.seq, j.state,
              coalesce(n.dependents, (SELECT count(*) FROM job_dependencies d INDEXED BY job_dependencies_parent
                                       WHERE d.parent_id = j.id)) AS dependents,
              coalesce(n.other_dependents, 0) AS other_dependents, j.created_by
         FROM jobs j LEFT JOIN job_dependents n ON n.parent_id = j.id WHERE j.id = ?`,
    ),
    // A unit's new edges (stored before) to each job, added to its count (schema/0026_job_dependents.sql),
    // and those other keys made to its count of theirs (0032); a job without a row yet gets its
    // edges' count, these included. In statements of many rows.
    countDependents: new MultiRowStatement<readonly [string, DependentsAdded], never>(
      db,
      3,
      (tuples) => `INSERT INTO job_dependents (parent_id, dependents, other_dependents)
        SELECT v.column1,
               CASE WHEN EXISTS (SELECT 1 FROM job_dependents n WHERE n.parent_id = v.column1) THEN v.column2
                    ELSE (SELECT count(*) FROM job_dependencies d INDEXED BY job_dependencies_parent
                           WHERE d.parent_id = v.column1) END,
               v.column3
          FROM (VALUES ${tuples}) AS v WHERE true
        ON CONFLICT (parent_id) DO UPDATE SET dependents = dependents + excluded.dependents,
                                              other_dependents = other_dependents + excluded.other_dependents`,
      (values, offset, [parentId, { added, others }]) => {
        values[offset] = parentId;
        values[offset + 1] = added;
        values[offset + 2] = others;
      },
    ),
    // The waiting job's seq, which its edges name (its INSERT wrote its flag: one probe of jobs_id).
    childSeq: db.prepare<[string], number>('SELECT seq FROM jobs WHERE id = ?').pluck(),
    // A job's edges one by one (below manyEdges), or in statements of many (prepareEdgeSets).
    addEdge: db.prepare<
      [{ childSeq: number; parentId: string; state: EdgeState; policy: string; name: string | null }]
    >(
      `INSERT INTO job_dependencies (child_seq, parent_id, state, policy, name)
        VALUES (@childSeq, @parentId, @state, @policy, @name)`,
    ),
    // A parent already marked is not written again (a root that 20 jobs wait on is written once).
    markDependedOn: db.prepare<[string]>(
      `UPDATE jobs SET dependency_flags = dependency_flags | ${jobsWaitOnIt}
        WHERE id = ? AND dependency_flags & ${jobsWaitOnIt} = 0`,
    ),
    ...prepareEdgeSets(db),
    edgesOf: db.prepare<[string], DependencyEdgeRow>(
      `SELECT d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state, p.queue AS parent_queue,
              p.type AS parent_type, octet_length(p.result) AS result_bytes, p.result_content_type
         FROM jobs c JOIN job_dependencies d ON d.child_seq = c.seq
         LEFT JOIN jobs p ON p.id = d.parent_id
        WHERE c.id = ? ORDER BY p.seq`,
    ),
    // edgesOf by the waiting job's seq: one probe of the edges' primary key when there are none.
    edgesOfSeq: db.prepare<[number], DependencyEdgeRow>(
      `SELECT d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state, p.queue AS parent_queue,
              p.type AS parent_type, octet_length(p.result) AS result_bytes, p.result_content_type
         FROM job_dependencies d LEFT JOIN jobs p ON p.id = d.parent_id
        WHERE d.child_seq = ? ORDER BY p.seq`,
    ),
    // edgesOfSeq for a lease's jobs in one statement: @seqsJson is [seq, …].
    // A lease's edges are many rows (a W5 collector has 20): read as arrays (object-rows.ts).
    edgesOfSeqs: objectRows<[string], DependencyEdgeRow & { child_seq: number }>(
      db.prepare<[string], unknown>(
        `SELECT d.child_seq, d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state,
                p.queue AS parent_queue, p.type AS parent_type, octet_length(p.result) AS result_bytes,
                p.result_content_type
           FROM job_dependencies d LEFT JOIN jobs p ON p.id = d.parent_id
          WHERE d.child_seq IN (SELECT value FROM json_each(?)) ORDER BY d.child_seq, p.seq`,
      ),
      [
        'child_seq',
        'parent_id',
        'name',
        'edge_state',
        'parent_state',
        'parent_queue',
        'parent_type',
        'result_bytes',
        'result_content_type',
      ],
    ),
    // The results a lease passes on, each read once however many of its jobs wait on it: @idsJson is [id, …].
    resultsOf: db.prepare<[string], JobResultRow>(
      'SELECT id, result FROM jobs WHERE id IN (SELECT value FROM json_each(?))',
    ),
    dependentsOf: db.prepare<[{ parentId: string; limit: number }], DependentRow>(
      `SELECT c.id, c.queue, c.type, c.state, d.state AS edge_state
         FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
        WHERE d.parent_id = @parentId ORDER BY d.child_seq LIMIT @limit`,
    ),
    // The waiting jobs a delete of some dead letters cancels, each once (Dependencies.waitingOnDead).
    waitingOnDead: db
      .prepare<[{ queue: string; idsJson: string; limit: number }], number>(
        `SELECT count(*) FROM (
           SELECT DISTINCT d.child_seq FROM jobs p
             JOIN job_dependencies d INDEXED BY job_dependencies_parent ON d.parent_id = p.id
             JOIN jobs c ON c.seq = d.child_seq
            WHERE p.id IN (SELECT value FROM json_each(@idsJson)) AND p.queue = @queue AND p.state = 'dead'
              AND d.state = 'pending' AND c.state = 'waiting'
            LIMIT @limit)`,
      )
      .pluck(),
    pendingChildren: db.prepare<[string], WaitingChildRow>(
      `SELECT c.seq, c.id, c.queue, c.type, c.attempt, c.state, c.run_at_ms, c.idempotency_key,
              d.policy, c.dependency_flags
         FROM job_dependencies d INDEXED BY job_dependencies_parent JOIN jobs c ON c.seq = d.child_seq
        WHERE d.parent_id = ? AND d.state = 'pending' AND c.state = 'waiting' ORDER BY d.child_seq`,
    ),
    resolve: db.prepare<[{ parentId: string; childSeq: number; state: string }]>(
      `UPDATE job_dependencies SET state = @state
        WHERE child_seq = @childSeq AND parent_id = @parentId AND state = 'pending'`,
    ),
    // An ended job's pending edges to jobs that are not waiting (job_dependencies_pending), and a
    // cancelled waiting job's pending edges from failed ones (job_dependencies_pending_child).
    resolveToEnded: db.prepare<[{ parentId: string; state: string }]>(
      `UPDATE job_dependencies SET state = @state
        WHERE parent_id = @parentId AND state = 'pending'
          AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.seq = child_seq AND c.state = 'waiting')`,
    ),
    failFromFailed: db.prepare<[number]>(
      `UPDATE job_dependencies SET state = 'failed'
        WHERE child_seq = ? AND state = 'pending'
          AND EXISTS (SELECT 1 FROM jobs p WHERE p.id = parent_id AND p.state IN ('dead', 'cancelled'))`,
    ),
    anyPending: db
      .prepare<[number], number>(
        `SELECT EXISTS (SELECT 1 FROM job_dependencies INDEXED BY job_dependencies_pending_child
          WHERE child_seq = ? AND state = 'pending')`,
      )
      .pluck(),
    release: db.prepare<[{ seq: number; state: string }]>(
      "UPDATE jobs SET state = @state WHERE seq = @seq AND state = 'waiting'",
    ),
    // The set form of the release, for the jobs of an ack batch that completed (docs/decisions/0012):
    // their pending edges to waiting jobs resolved in one statement (job_dependencies_parent probed per
    // parent, the waiting job by its seq), returning each edge's waiting job…
    resolveCompleted: db
      .prepare<[string], number>(
        `UPDATE job_dependencies AS d SET state = 'completed'
           FROM jobs AS c
          WHERE d.parent_id IN (SELECT value FROM json_each(?)) AND d.state = 'pending'
            AND c.seq = d.child_seq AND c.state = 'waiting'
          RETURNING child_seq`,
      )
      .pluck(),
    // … and those left with no pending edge moved to ready (scheduled while their run time is ahead).
    releaseResolved: db.prepare<[{ seqsJson: string; nowMs: number }], ReleasedRow>(
      `UPDATE jobs SET state = CASE WHEN run_at_ms > @nowMs THEN 'scheduled' ELSE 'ready' END
        WHERE seq IN (SELECT value FROM json_each(@seqsJson)) AND state = 'waiting'
          AND NOT EXISTS (SELECT 1 FROM job_dependencies INDEXED BY job_dependencies_pending_child
                           WHERE child_seq = jobs.seq AND state = 'pending')
        RETURNING seq, id, queue, type, attempt, state, run_at_ms`,
    ),
    forget: db.prepare<[number]>('DELETE FROM job_dependencies WHERE child_seq = ?'),
    // Jobs whose failure a unit left to maintenance (engine/dependencies/failures.ts).
    // Only a job with a pending edge from it: one probe of job_dependencies_parent.
    keepFailure: db.prepare<[{ id: string }]>(
      `INSERT OR IGNORE INTO dependency_failures (job_id) SELECT @id
        WHERE EXISTS (SELECT 1 FROM job_dependencies INDEXED BY job_dependencies_parent
                       WHERE parent_id = @id AND state = 'pending')`,
    ),
    keptFailures: db.prepare<[number], KeptFailureRow>(
      `SELECT f.job_id AS id, j.state FROM dependency_failures f LEFT JOIN jobs j ON j.id = f.job_id
        ORDER BY f.job_id LIMIT ?`,
    ),
    forgetFailure: db.prepare<[string]>('DELETE FROM dependency_failures WHERE job_id = ?'),
    forgetDependentsOf: db.prepare<[string]>('DELETE FROM job_dependents WHERE parent_id = ?'),
    // Rows of deleted jobs (tests and diagnostics: each reads its table whole).
    countsLeft: db
      .prepare<[], number>(
        'SELECT count(*) FROM job_dependents n WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = n.parent_id)',
      )
      .pluck(),
    edgesLeft: db
      .prepare<[], number>(
        'SELECT count(*) FROM job_dependencies d WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.seq = d.child_seq)',
      )
      .pluck(),
    queuesWithDependencies: db
      .prepare<[], string>('SELECT name FROM queues WHERE has_dependencies = 1')
      .pluck(),
    markQueue: db.prepare<[string]>('UPDATE queues SET has_dependencies = 1 WHERE name = ?'),
    // A step of a flow's walk, both ways: the parents through the child's edges (primary key), the
    // children through the parent index; the LIMIT bounds the edges it reads.
    flowNeighbours: db
      .prepare<[{ idsJson: string; limit: number }], string>(
        `SELECT d.parent_id FROM json_each(@idsJson) JOIN jobs c ON c.id = json_each.value
           JOIN job_dependencies d ON d.child_seq = c.seq
         UNION ALL
         SELECT c.id FROM json_each(@idsJson)
           JOIN job_dependencies d INDEXED BY job_dependencies_parent ON d.parent_id = json_each.value
           JOIN jobs c ON c.seq = d.child_seq
         LIMIT @limit`,
      )
      .pluck(),
    flowRows: db.prepare<[string], FlowJobRow>(
      `SELECT id, seq, queue, type, state, flow_name FROM jobs WHERE id IN (SELECT value FROM json_each(?))`,
    ),
    pendingMembers: db
      .prepare<[{ batchId: string; limit: number }], string>(
        `SELECT job_id FROM batch_members INDEXED BY batch_members_batch
          WHERE batch_id = @batchId AND state = 'pending' ORDER BY position LIMIT @limit`,
      )
      .pluck(),
    // ---- batches (schema/0014_batches.sql)
    batch: db.prepare<[string], BatchRow>('SELECT * FROM batches WHERE id = ?'),
    batchMembers: db.prepare<[{ batchId: string; afterPosition: number; limit: number }], BatchMemberRow>(
      `SELECT m.job_id, m.position, m.state AS member_state, j.state AS job_state
         FROM batch_members m INDEXED BY batch_members_batch LEFT JOIN jobs j ON j.id = m.job_id
        WHERE m.batch_id = @batchId AND m.position > @afterPosition ORDER BY m.position LIMIT @limit`,
    ),
    membership: db.prepare<[string], { batch_id: string; state: MemberState }>(
      'SELECT batch_id, state FROM batch_members WHERE job_id = ?',
    ),
    unendedBatches: db
      .prepare<[], number>("SELECT count(*) FROM batches INDEXED BY batches_unended WHERE state <> 'ended'")
      .pluck(),
    createBatch: db.prepare<
      [
        {
          id: string;
          nowMs: number;
          onCompleteJson: string | null;
          onSuccessJson: string | null;
          owner: string;
        },
      ]
    >(
      `INSERT INTO batches (id, state, created_at_ms, on_complete_json, on_success_json, on_death_json, owner)
        VALUES (@id, 'open', @nowMs, @onCompleteJson, @onSuccessJson, @onDeathJson, @owner)`,
    ),
    unendedBatchesOf: db
      .prepare<[{ owner: string; limit: number }], number>(
        `SELECT count(*) FROM (SELECT 1 FROM batches INDEXED BY batches_unended_owner
          WHERE owner = @owner AND state <> 'ended' LIMIT @limit)`,
      )
      .pluck(),
    addMember: db.prepare<[{ batchId: string; jobId: string }]>(
      `INSERT INTO batch_members (job_id, batch_id, position)
        SELECT @jobId, @batchId, members FROM batches WHERE id = @batchId`,
    ),
    countMember: db.prepare<[{ batchId: string }]>(
      'UPDATE batches SET members = members + 1, pending = pending + 1 WHERE id = @batchId',
    ),
    /** Marks a member and keeps its batch with it, for its leases (schema/0030_job_batch_id.sql). */
    markMember: db.prepare<[{ batchId: string; jobId: string }]>(
      `UPDATE jobs SET dependency_flags = dependency_flags | ${batchMember}, batch_id = @batchId WHERE id = @jobId`,
    ),
    seal: db.prepare<[{ batchId: string; nowMs: number }]>(
      "UPDATE batches SET state = 'sealed', sealed_at_ms = @nowMs WHERE id = @batchId AND state = 'open'",
    ),
    memberEnded: db
      .prepare<[{ jobId: string; state: string }], string>(
        `UPDATE batch_members SET state = @state WHERE job_id = @jobId AND state = 'pending' RETURNING batch_id`,
      )
      .pluck(),
    countEnded: db.prepare<[{ batchId: string; completed: number; dead: number; cancelled: number }]>(
      `UPDATE batches SET pending = pending - 1, completed = completed + @completed, dead = dead + @dead,
              cancelled = cancelled + @cancelled
        WHERE id = @batchId`,
    ),
    /** The batch's first dead member (schema/0028_batch_death.sql): set once, while NULL. */
    firstDeath: db.prepare<[{ batchId: string; jobId: string }]>(
      'UPDATE batches SET first_dead_id = @jobId WHERE id = @batchId AND first_dead_id IS NULL',
    ),
    endBatch: db.prepare<[{ batchId: string; nowMs: number }], BatchRow>(
      `UPDATE batches SET state = 'ended', ended_at_ms = @nowMs
        WHERE id = @batchId AND state = 'sealed' AND pending = 0 RETURNING *`,
    ),
    // ---- listing and retention (schema/0025_batch_retention.sql): each one bounded range of an index
    listBatches: db.prepare<[{ beforeId: string; limit: number }], BatchRow>(
      'SELECT * FROM batches WHERE id < @beforeId ORDER BY id DESC LIMIT @limit',
    ),
    listBatchesByState: db.prepare<[{ state: string; beforeId: string; limit: number }], BatchRow>(
      `SELECT * FROM batches INDEXED BY batches_by_state
        WHERE state = @state AND id < @beforeId ORDER BY id DESC LIMIT @limit`,
    ),
    listBatchesByOwner: db.prepare<[{ owner: string; beforeId: string; limit: number }], BatchRow>(
      `SELECT * FROM batches INDEXED BY batches_by_owner
        WHERE owner = @owner AND id < @beforeId ORDER BY id DESC LIMIT @limit`,
    ),
    listEndedBatchesOf: db.prepare<[{ owner: string; beforeId: string; limit: number }], BatchRow>(
      `SELECT * FROM batches INDEXED BY batches_by_owner
        WHERE owner = @owner AND state = 'ended' AND id < @beforeId ORDER BY id DESC LIMIT @limit`,
    ),
    /** One owner's open or sealed batches: at most limits.max_open_batches_per_key rows, sorted here. */
    listUnendedBatchesOf: db.prepare<
      [{ owner: string; state: string; beforeId: string; limit: number }],
      BatchRow
    >(
      `SELECT * FROM batches INDEXED BY batches_unended_owner
        WHERE owner = @owner AND state <> 'ended' AND state = @state AND id < @beforeId ORDER BY id DESC LIMIT @limit`,
    ),
    /** Members of batches ended before @beforeMs: the batches in ended_at_ms order, each one's members by position. */
    sweepBatchMembers: db.prepare<[{ beforeMs: number; limit: number }]>(
      `DELETE FROM batch_members WHERE job_id IN (
         SELECT m.job_id FROM batches b INDEXED BY batches_ended
           CROSS JOIN batch_members m INDEXED BY batch_members_batch ON m.batch_id = b.id
          WHERE b.state = 'ended' AND b.ended_at_ms < @beforeMs LIMIT @limit)`,
    ),
    /** Batches ended before @beforeMs with no member row left, oldest first. */
    sweepBatches: db.prepare<[{ beforeMs: number; limit: number }]>(
      `DELETE FROM batches WHERE id IN (
         SELECT b.id FROM batches b INDEXED BY batches_ended
          WHERE b.state = 'ended' AND b.ended_at_ms < @beforeMs
            AND NOT EXISTS (SELECT 1 FROM batch_members m INDEXED BY batch_members_batch WHERE m.batch_id = b.id)
          ORDER BY b.ended_at_ms LIMIT @limit)`,
    ),
    // ---- secrets (schema/0031_lease_token_secret.sql)
    keepSecret: db.prepare<[{ name: string; candidate: Uint8Array }]>(
      'INSERT INTO server_secrets (name, secret) VALUES (@name, @candidate) ON CONFLICT (name) DO NOTHING',
    ),
    secret: db.prepare<[string], Buffer>('SELECT secret FROM server_secrets WHERE name = ?').pluck(),
    setDeath: db.prepare<[{ batchId: string; deathJobId: string | null; error: string | null }]>(
      'UPDATE batches SET death_job_id = @deathJobId, completion_error = @error WHERE id = @batchId',
    ),
    setCompletion: db.prepare<
      [{ batchId: string; completeJobId: string | null; successJobId: string | null; error: string | null }]
    >(
      `UPDATE batches SET complete_job_id = @completeJobId, success_job_id = @successJobId,
              completion_error = @error
        WHERE id = @batchId`,
    ),
  };
}

export type DependencyStatements = ReturnType<typeof prepareDependencyStatements>;

export function dependencyOps(sql: DependencyStatements): Dependencies {
  return {
    *targets(ids): Op<DependencyTargetRow[]> {
      const rows: DependencyTargetRow[] = [];
      for (const id of ids) {
        const row = sql.target.get(id);
        if (row !== undefined) rows.push(row);
      }
      return rows;
    },
    *of(childId, childSeq) {
      return childSeq === undefined ? sql.edgesOf.all(childId) : sql.edgesOfSeq.all(childSeq);
    },
    *ofMany(childSeqs) {
      return sql.edgesOfSeqs.all(JSON.stringify(childSeqs));
    },
    *results(ids) {
      return ids.length === 0 ? [] : sql.resultsOf.all(JSON.stringify(ids));
    },
    *dependentsOf(p) {
      return sql.dependentsOf.all(p);
    },
    *waitingOnDead({ queue, ids, limit }) {
      if (ids.length === 0) return 0;
      return sql.waitingOnDead.get({ queue, idsJson: JSON.stringify(ids), limit }) ?? 0;
    },
    *add({ childId, policy, edges }) {
      const childSeq = sql.childSeq.get(childId);
      // Not stored (it is, in the caller's transaction): no edge, as an INSERT … SELECT from it would add.
      if (childSeq === undefined) return;
      if (edges.length < manyEdges) {
        for (const edge of edges) {
          sql.addEdge.run({
            childSeq,
            parentId: edge.parentId,
            state: edge.state,
            policy,
            name: edge.name ?? null,
          });
          if (edge.parentMarked !== true) sql.markDependedOn.run(edge.parentId);
        }
        return;
      }
      sql.addEdges.run(
        edges.map((edge): EdgeRow => [childSeq, edge.parentId, edge.state, policy, edge.name ?? null]),
      );
      const unmarked = edges.flatMap((edge) => (edge.parentMarked === true ? [] : [edge.parentId]));
      if (unmarked.length > 0) sql.markEdgesDependedOn.run(unmarked);
    },
    *pendingChildren(parentId) {
      return sql.pendingChildren.all(parentId);
    },
    *resolve(p) {
      return sql.resolve.run(p).changes > 0;
    },
    *resolveToEnded(parentId, state) {
      sql.resolveToEnded.run({ parentId, state });
    },
    *failFromFailed(childSeq) {
      sql.failFromFailed.run(childSeq);
    },
    *anyPending(childSeq) {
      return sql.anyPending.get(childSeq) === 1;
    },
    *release(p) {
      sql.release.run(p);
    },
    *releaseCompleted({ parentIds, nowMs }) {
      const seqs = sql.resolveCompleted.all(JSON.stringify(parentIds));
      if (seqs.length === 0) return [];
      const released = sql.releaseResolved.all({ seqsJson: JSON.stringify([...new Set(seqs)]), nowMs });
      return released.sort((a, b) => a.seq - b.seq);
    },
    *countDependents(counts) {
      if (counts.size > 0) sql.countDependents.run([...counts]);
    },
    *queuesWithDependencies() {
      return sql.queuesWithDependencies.all();
    },
    *markQueue(queue) {
      sql.markQueue.run(queue);
    },
    *forget(childSeq) {
      sql.forget.run(childSeq);
    },
    *keepFailures(jobIds) {
      for (const id of jobIds) sql.keepFailure.run({ id });
    },
    *takeFailures(limit) {
      const taken = sql.keptFailures.all(limit);
      for (const { id } of taken) sql.forgetFailure.run(id);
      return taken;
    },
    *forgetDependents(parentId) {
      sql.forgetDependentsOf.run(parentId);
    },
    *leftovers() {
      return leftoverLines(sql.countsLeft.get() ?? 0, sql.edgesLeft.get() ?? 0);
    },
    *flowNeighbours(p) {
      return sql.flowNeighbours.all({ idsJson: JSON.stringify(p.ids), limit: p.limit });
    },
    *flowRows(ids) {
      return sql.flowRows.all(JSON.stringify(ids));
    },
    *pendingMembers(p) {
      return sql.pendingMembers.all(p);
    },
    *batch(id) {
      return sql.batch.get(id);
    },
    *batchMembers(p) {
      return sql.batchMembers.all(p);
    },
    *membership(jobId) {
      return sql.membership.get(jobId);
    },
    *unendedBatches() {
      return sql.unendedBatches.get() ?? 0;
    },
    *createBatch(p) {
      sql.createBatch.run(p);
    },
    *unendedBatchesOf(p) {
      return sql.unendedBatchesOf.get(p) ?? 0;
    },
    *addMembers({ batchId, jobIds }) {
      for (const jobId of jobIds) {
        sql.addMember.run({ batchId, jobId });
        sql.countMember.run({ batchId });
        sql.markMember.run({ batchId, jobId });
      }
    },
    *seal(p) {
      return sql.seal.run(p).changes > 0;
    },
    *memberEnded({ jobId, state }) {
      const batchId = sql.memberEnded.get({ jobId, state });
      if (batchId === undefined) return null;
      sql.countEnded.run({
        batchId,
        completed: state === 'completed' ? 1 : 0,
        dead: state === 'dead' ? 1 : 0,
        cancelled: state === 'cancelled' ? 1 : 0,
      });
      // The first death of the batch: only the unit that finds first_dead_id NULL sets it.
      const firstDeath = state === 'dead' && sql.firstDeath.run({ batchId, jobId }).changes > 0;
      return { batchId, firstDeath };
    },
    *endBatch(p) {
      return sql.endBatch.get(p);
    },
    *setDeath(p) {
      sql.setDeath.run(p);
    },
    *setCompletion(p) {
      sql.setCompletion.run(p);
    },
    *listBatches({ state, owner, beforeId, limit }) {
      const page = { beforeId: beforeId ?? afterEveryBatchId, limit };
      if (owner !== null) {
        if (state === null) return sql.listBatchesByOwner.all({ ...page, owner });
        return state === 'ended'
          ? sql.listEndedBatchesOf.all({ ...page, owner })
          : sql.listUnendedBatchesOf.all({ ...page, owner, state });
      }
      return state === null ? sql.listBatches.all(page) : sql.listBatchesByState.all({ ...page, state });
    },
    *sweepBatches(p) {
      const members = sql.sweepBatchMembers.run(p).changes;
      // Members left (the chunk was full): their batches wait for the next pass.
      const batches = members === p.limit ? 0 : sql.sweepBatches.run(p).changes;
      return { members, batches };
    },
    *secret(p) {
      sql.keepSecret.run(p);
      return sql.secret.get(p.name)!;
    },
  };
}
