/**
 * Workflows on the PostgreSQL store (issue 33; schema/postgres/0008_workflows.sql): the
 * dependency edges and the release of a waiting job, with the semantics of the SQLite
 * store's (src/store/sqlite/dependencies.ts) behind the same capability; its batches are
 * batches.ts, composed in here. Only jobs
 * that take part in a workflow reach these statements (`dependency_flags`).
 *
 * Several servers write these tables at once (READ COMMITTED: each statement sees what
 * committed before it began, and an UPDATE re-checks its WHERE against the newest version
 * of a row it had to wait for). Each decision that must happen once is made by a statement
 * that changes a row and checks, in the same statement, the state it changes from; the row
 * lock it takes holds until commit, so a second server waits, then sees the first's commit:
 *
 * - **A waiting job is released once.** Two servers ending the last two dependencies of a
 *   fan-in would each resolve its own edge and each still see the other's pending (neither
 *   committed), and neither would release. So `pendingChildren`, in a write, locks the
 *   waiting jobs' rows (`FOR UPDATE OF c`, in seq order, so two such reads never wait on
 *   each other in a cycle): the second server waits for the first's commit, and its
 *   `anyPending` (a later statement, a new snapshot) sees the first's edge resolved. An
 *   edge is resolved by `UPDATE … WHERE state = 'pending'`, so at most once; `release` by
 *   `UPDATE … WHERE state = 'waiting'`. `releaseCompleted` (an ack batch's jobs others wait
 *   on, together) takes the same locks, for all of them in one statement in seq order, then
 *   resolves and releases in the next (a new snapshot, taken once the locks are held): a
 *   job is moved there only when no edge from a job outside the batch is still pending.
 * - **A job's dependents never exceed limits.max_dependents_per_job.** The enqueue checks a
 *   job's count of dependents (`job_dependents`) before it adds edges to it, and adds to the
 *   count in the same unit. The count is read by `targets`, after the statement before it
 *   locked the job's row: a unit on another server adding edges to the same job holds that
 *   lock until its commit, so the count read is the one it committed; and it cannot add
 *   more until this unit commits. (A job made in this unit, a flow's, is seen by no other.)
 * - **A new edge is never left pending on a job that already ended.** `targets`, in a
 *   write, locks the named jobs (`FOR NO KEY UPDATE`, in id order) and reads their newest
 *   version: an ack in flight on another server is waited for (a job it deleted is then
 *   unknown, one it completed is an edge resolved at once), and an ack that comes after
 *   waits for the enqueue's commit, then finds the job's `jobsWaitOnIt` flag set (the
 *   one-statement ack no longer matches it) and releases the new job.
 *
 * Deadlocks: these row locks are taken in a fixed order within a statement (seq or id
 * order), but a writer's transaction holds the units of a batch, and two servers' batches
 * may take two rows (two batches' rows, two waiting jobs) in opposite orders. PostgreSQL
 * then fails one of the two transactions (40P01, a StorageFailure): nothing of it is
 * committed, so nothing is released or enqueued twice, and its callers are answered
 * UNAVAILABLE and try again (tests/store/postgres-servers.test.ts races them).
 *
 * Round trips: one statement per operation; the ones that take lists (`targets`, `add`'s
 * edges, `addMembers`) take them as arrays. What answers nothing (`add`, `release`,
 * `resolveToEnded`, `failFromFailed`, `markQueue`, `forget`, `forgetDependents`, `addMembers`, `setCompletion`) is sent ahead on the writer's
 * pipelined connection (sql.ts `sendAhead`): it travels with the next statement a unit
 * waits for, so a flow's edges and a fan-out's releases cost no round trip each. `resolve`
 * also answers whether the job has another pending edge, kept for the `anyPending` that
 * follows it. `releaseCompleted` is one awaited round trip (its locking statement is sent
 * ahead), `ofMany` one per lease.
 */
import {
  type Dependencies,
  type DependencyEdgeRow,
  type DependencyTargetRow,
  type DependentRow,
  type FlowJobRow,
  type JobResultRow,
  jobsWaitOnIt,
  type KeptFailureRow,
  leftoverLines,
  type ReleasedRow,
  type WaitingChildRow,
  waitsOnJobs,
} from '../dependencies.ts';
import { batchOps } from './batches.ts';
import {
  arrayRows,
  type Connection,
  firstRow,
  plannedEachTime,
  rows,
  sendAhead,
  statement,
  value,
  writing,
} from './sql.ts';

/** The named jobs $1, each with its count of dependents; without a row, its edges (`countDependents`). */
const targets = statement(
  `SELECT j.id, j.seq, j.state,
          coalesce(n.dependents, (SELECT count(*) FROM job_dependencies d WHERE d.parent_id = j.id))::integer
            AS dependents, coalesce(n.other_dependents, 0) AS other_dependents, j.created_by
     FROM jobs j LEFT JOIN job_dependents n ON n.parent_id = j.id
    WHERE j.id = ANY($1::text[]) ORDER BY j.id`,
);
/**
 * In a write, before `targets`: the named jobs locked, in id order, in a statement of their own
 * (sent ahead, one round trip with `targets`). `targets`' snapshot then comes after every unit
 * that held one of them committed, so the counts it reads are exact (see the top of this file).
 */
const lockTargets = statement('SELECT 1 FROM jobs WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE');
/**
 * A unit's new edges (sent before) to the jobs $1, $2 of them each, added to their counts, $3 of
 * them other keys' (schema/postgres/0025_job_creators.sql); a job without a row yet gets its
 * edges' count, these included (see Dependencies.countDependents). No
 * two units write one job's row at once: each locked the job first (`targets`), or made it.
 */
const countDependents = statement(
  `INSERT INTO job_dependents (parent_id, dependents, other_dependents)
   SELECT v.id, CASE WHEN EXISTS (SELECT 1 FROM job_dependents n WHERE n.parent_id = v.id) THEN v.added
                     ELSE (SELECT count(*) FROM job_dependencies d WHERE d.parent_id = v.id) END, v.others
     FROM unnest($1::text[], $2::integer[], $3::integer[]) AS v(id, added, others)
   ON CONFLICT (parent_id) DO UPDATE SET dependents = job_dependents.dependents + excluded.dependents,
                                         other_dependents = job_dependents.other_dependents + excluded.other_dependents`,
);

/**
 * $1 the waiting job (its INSERT wrote its waitsOnJobs flag), $2 its policy, $3–$5 the edges
 * (parent ids, states, names); `addMarking` also marks the jobs $6, the parents whose INSERT
 * did not write their jobsWaitOnIt flag (jobs named by id, and a flow's jobs stored before
 * the job that waits on them was added).
 */
const addEdgesSql = `WITH child AS (SELECT seq FROM jobs WHERE id = $1),
   edges AS (
     INSERT INTO job_dependencies (child_seq, parent_id, state, policy, name)
     SELECT child.seq, e.parent_id, e.state, $2, e.name
       FROM child, unnest($3::text[], $4::text[], $5::text[]) AS e(parent_id, state, name)`;
const add = statement(`${addEdgesSql}) SELECT 1`);
const addMarking = statement(
  `${addEdgesSql})
   UPDATE jobs SET dependency_flags = dependency_flags | ${jobsWaitOnIt}
    WHERE id = ANY($6::text[]) AND id <> $1 AND (dependency_flags & ${jobsWaitOnIt}) = 0`,
);
const edgesOf = statement(
  `SELECT d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state, p.queue AS parent_queue,
          p.type AS parent_type, octet_length(p.result) AS result_bytes, p.result_content_type
     FROM jobs c JOIN job_dependencies d ON d.child_seq = c.seq
     LEFT JOIN jobs p ON p.id = d.parent_id
    WHERE c.id = $1 ORDER BY p.seq`,
);
/**
 * `edgesOf` for a lease's jobs at once, by their seqs ($1), each job's edges as `edgesOf` orders
 * them. Each job's edges, and each edge's job, through a LATERAL subquery on one value (kept
 * apart by OFFSET 0): index probes whatever the planner estimates (with `child_seq = ANY($1)`
 * and no statistics yet, it read every edge and hashed every job).
 */
const edgesOfSeqs = plannedEachTime(
  `SELECT s.seq AS child_seq, d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state,
          p.queue AS parent_queue, p.type AS parent_type, p.result_bytes, p.result_content_type
     FROM unnest($1::bigint[]) AS s(seq),
          LATERAL (SELECT d.parent_id, d.name, d.state FROM job_dependencies d
                    WHERE d.child_seq = s.seq OFFSET 0) AS d
          LEFT JOIN LATERAL (SELECT p.seq, p.state, p.queue, p.type, octet_length(p.result) AS result_bytes,
                                    p.result_content_type
                               FROM jobs p WHERE p.id = d.parent_id OFFSET 0) AS p ON true
    ORDER BY s.seq, p.seq`,
);
/** The results a lease passes on, each read once however many of its jobs wait on it. */
const resultsOf = statement('SELECT id, result FROM jobs WHERE id = ANY($1::text[])');
const dependentsOf = statement(
  `SELECT c.id, c.queue, c.type, c.state, d.state AS edge_state
     FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
    WHERE d.parent_id = $1 ORDER BY d.child_seq LIMIT $2`,
);
/** The waiting jobs a delete of some dead letters cancels, each once (Dependencies.waitingOnDead). */
const waitingOnDead = statement(
  `SELECT count(*)::int AS waiting FROM (
     SELECT DISTINCT d.child_seq FROM jobs p
       JOIN job_dependencies d ON d.parent_id = p.id
       JOIN jobs c ON c.seq = d.child_seq
      WHERE p.id = ANY($2::text[]) AND p.queue = $1 AND p.state = 'dead'
        AND d.state = 'pending' AND c.state = 'waiting'
      LIMIT $3) AS w`,
);
const pendingChildrenSql = `SELECT c.seq, c.id, c.queue, c.type, c.attempt, c.state, c.run_at_ms, c.idempotency_key,
          d.policy, c.dependency_flags
     FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
    WHERE d.parent_id = $1 AND d.state = 'pending' AND c.state = 'waiting' ORDER BY d.child_seq`;
const pendingChildren = statement(pendingChildrenSql);
/** In a write: the waiting jobs' rows locked, in seq order (see the top of this file). */
const pendingChildrenLocked = statement(`${pendingChildrenSql} FOR UPDATE OF c`);
/**
 * Resolves the edge $1 → $2 if pending; says whether it did and whether another edge of the
 * job is still pending (the statement's snapshot comes after the job's row was locked).
 */
const resolve = statement(
  `WITH r AS (
     UPDATE job_dependencies SET state = $3
      WHERE child_seq = $2 AND parent_id = $1 AND state = 'pending' RETURNING 1)
   SELECT EXISTS (SELECT 1 FROM r) AS resolved,
          EXISTS (SELECT 1 FROM job_dependencies
                   WHERE child_seq = $2 AND state = 'pending' AND parent_id <> $1) AS others`,
);
/**
 * The pending edges from the jobs $1, found one job at a time through the pending edges'
 * parent index, as `pendingChildren` finds them: each a LATERAL subquery on one id, kept apart
 * by OFFSET 0, so the plan does not depend on statistics (a fresh or busy table has none
 * before autovacuum's first ANALYZE, and the planner then preferred reading every pending edge).
 */
const pendingEdgesOf = `SELECT x.tid, x.child_seq FROM unnest($1::text[]) AS p(id),
       LATERAL (SELECT d.ctid AS tid, d.child_seq FROM job_dependencies d
                 WHERE d.parent_id = p.id AND d.state = 'pending' OFFSET 0) AS x`;
/**
 * `releaseCompleted`, first statement: the waiting jobs with a pending edge from any of the
 * jobs $1 (which completed in this transaction) locked, in seq order, as `pendingChildren`
 * locks them one parent at a time. Sent ahead: what it returns is not needed, only that its
 * locks are held before the next statement begins (see `releaseCompleted`).
 */
const lockPendingChildren = plannedEachTime(
  `SELECT c.seq FROM jobs c
    WHERE c.seq = ANY(ARRAY(SELECT e.child_seq FROM (${pendingEdgesOf}) AS e)) AND c.state = 'waiting'
    ORDER BY c.seq FOR UPDATE`,
);
/**
 * `releaseCompleted`, second statement: the pending edges from $1 to waiting jobs (`w`)
 * resolved as completed (by their ctid, read in this statement: no other transaction changes
 * an edge from a job this one just completed), and each of those jobs left with no pending
 * edge moved to ready, or scheduled while its run_at_ms is after $2. The outer UPDATE sees the
 * statement's snapshot, from before `r` resolved its edges: so a job is left waiting only for
 * a pending edge from a job not in $1 (every pending edge from one in $1 to a waiting job is
 * one `r` resolves).
 */
const releaseCompleted = plannedEachTime(
  `WITH e AS MATERIALIZED (${pendingEdgesOf}),
   w AS MATERIALIZED (
     SELECT c.seq FROM jobs c WHERE c.seq = ANY(ARRAY(SELECT child_seq FROM e)) AND c.state = 'waiting'),
   r AS (
     UPDATE job_dependencies d SET state = 'completed'
      WHERE d.ctid = ANY(ARRAY(SELECT e.tid FROM e WHERE e.child_seq = ANY(ARRAY(SELECT seq FROM w))))
        AND d.state = 'pending')
   UPDATE jobs j SET state = CASE WHEN j.run_at_ms > $2::bigint THEN 'scheduled' ELSE 'ready' END
    WHERE j.seq = ANY(ARRAY(SELECT seq FROM w)) AND j.state = 'waiting'
      AND NOT EXISTS (SELECT 1 FROM job_dependencies x
                       WHERE x.child_seq = j.seq AND x.state = 'pending' AND x.parent_id <> ALL($1::text[]))
   RETURNING j.seq, j.id, j.queue, j.type, j.attempt, j.state, j.run_at_ms`,
  'array',
);
const releasedRow = (r: unknown[]): ReleasedRow => ({
  seq: r[0] as number,
  id: r[1] as string,
  queue: r[2] as string,
  type: r[3] as string,
  attempt: r[4] as number,
  state: r[5] as ReleasedRow['state'],
  run_at_ms: r[6] as number,
});
/**
 * An ended job's pending edges to jobs that are not waiting (failed; completed as it is
 * deleted), and a cancelled waiting job's
 * pending edges from failed ones. Neither decides anything (no job moves): a unit on another
 * server cancelling the waiting job while this one fails the other, each before the other's
 * commit, leaves their edge pending, drawn as before.
 */
const resolveToEnded = statement(
  `UPDATE job_dependencies d SET state = $2
    WHERE d.parent_id = $1 AND d.state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.seq = d.child_seq AND c.state = 'waiting')`,
);
const failFromFailed = statement(
  `UPDATE job_dependencies d SET state = 'failed'
    WHERE d.child_seq = $1 AND d.state = 'pending'
      AND EXISTS (SELECT 1 FROM jobs p WHERE p.id = d.parent_id AND p.state IN ('dead', 'cancelled'))`,
);
const anyPending = statement(
  "SELECT EXISTS (SELECT 1 FROM job_dependencies WHERE child_seq = $1 AND state = 'pending') AS v",
);
const release = statement("UPDATE jobs SET state = $2 WHERE seq = $1 AND state = 'waiting'");
const forget = statement('DELETE FROM job_dependencies WHERE child_seq = $1');
/**
 * Jobs $1 whose failure a unit left to maintenance (engine/dependencies/failures.ts), those with
 * a pending edge from them: one probe of job_dependencies_pending each.
 */
const keepFailures = statement(
  `INSERT INTO dependency_failures (job_id)
   SELECT k.id FROM unnest($1::text[]) AS k(id)
    WHERE EXISTS (SELECT 1 FROM job_dependencies d WHERE d.parent_id = k.id AND d.state = 'pending')
   ON CONFLICT DO NOTHING`,
);
/**
 * Up to $1 kept jobs, oldest id first, taken (deleted) with their state now: rows another
 * server's pass has locked are passed over, so two passes never take the same job.
 */
const takeFailures = statement(
  `WITH taken AS (
     DELETE FROM dependency_failures WHERE job_id IN (
       SELECT job_id FROM dependency_failures ORDER BY job_id LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING job_id)
   SELECT t.job_id AS id, j.state FROM taken t LEFT JOIN jobs j ON j.id = t.job_id ORDER BY t.job_id`,
);
const forgetDependents = statement('DELETE FROM job_dependents WHERE parent_id = $1');
/** Rows of deleted jobs (tests and diagnostics: it reads both tables whole). */
const leftovers = statement(
  `SELECT (SELECT count(*) FROM job_dependents n WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = n.parent_id))::integer
            AS counts,
          (SELECT count(*) FROM job_dependencies d WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.seq = d.child_seq))::integer
            AS edges`,
);
const queuesWithDependencies = statement('SELECT name FROM queues WHERE has_dependencies ORDER BY name');
const markQueue = statement(
  'UPDATE queues SET has_dependencies = true WHERE name = $1 AND NOT has_dependencies',
);
/**
 * A step of a flow's walk, both ways: the parents through each id's edges, the children through
 * the parent index, one id at a time (a LATERAL subquery on one value, kept apart by OFFSET 0:
 * index probes whatever the planner estimates, as edgesOfSeqs); the LIMIT bounds the edges it
 * reads. (Joined to a view of every edge instead, each step read the whole job_dependencies
 * table: a chain of 1,000 jobs took 1.4 s, steps × every edge stored.)
 */
const flowNeighbours = statement(
  `SELECT n.id FROM unnest($1::text[]) AS f(id),
          LATERAL (SELECT d.parent_id AS id FROM jobs c JOIN job_dependencies d ON d.child_seq = c.seq
                    WHERE c.id = f.id
                   UNION ALL
                   SELECT c.id FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
                    WHERE d.parent_id = f.id
                   OFFSET 0) AS n
    LIMIT $2`,
);
const flowRows = statement(
  'SELECT id, seq, queue, type, state, flow_name FROM jobs WHERE id = ANY($1::text[])',
);

/**
 * The `dependency_flags` of the jobs the connection's last lease statement took (leases.ts
 * notes them): a job leased without `waitsOnJobs` has no edges, ever (the bit is set only
 * in its enqueue's unit), so the results passed on at lease (`of`, once per leased job of a
 * queue that has had dependencies) need no round trip for it.
 */
const leasedFlags = new WeakMap<
  Connection,
  { rows: readonly { id: string }[]; byId: Map<string, number> | undefined }
>();

/**
 * Notes the rows a lease returned, whose `dependency_flags` (read by the lease statement) `of`
 * looks up: by id, indexed at its first call, so a lease from a queue that never had
 * dependencies (`of` is not called for it) costs nothing per job.
 */
export function noteLeased(c: Connection, leased: readonly { id: string }[]): void {
  leasedFlags.set(c, { rows: leased, byId: undefined });
}

/**
 * Of `seqs`, the ones the last lease on `c` did not return without `waitsOnJobs` (those have
 * no edges): the jobs whose edges `ofMany` must read.
 */
function mayHaveEdges(c: Connection, seqs: readonly number[]): readonly number[] {
  const noted = leasedFlags.get(c);
  if (noted === undefined) return seqs;
  const without = new Set<number>();
  for (const row of noted.rows) {
    const leased = row as { seq?: number; dependency_flags?: number };
    if (
      leased.seq !== undefined &&
      leased.dependency_flags !== undefined &&
      (leased.dependency_flags & waitsOnJobs) === 0
    )
      without.add(leased.seq);
  }
  return without.size === 0 ? seqs : seqs.filter((seq) => !without.has(seq));
}

/** The flags of a job the last lease on `c` returned, or undefined. */
function leasedFlagsOf(c: Connection, id: string): number | undefined {
  const noted = leasedFlags.get(c);
  if (noted === undefined) return undefined;
  if (noted.byId === undefined) {
    noted.byId = new Map();
    for (const row of noted.rows)
      noted.byId.set(row.id, (row as { dependency_flags?: number }).dependency_flags ?? waitsOnJobs);
  }
  return noted.byId.get(id);
}

export function dependencyOps(c: Connection): Dependencies {
  /** What the last `resolve` learnt: whether the job has another pending edge, valid until the next statement. */
  let resolved: { childSeq: number; others: boolean; at: number } | undefined;
  const statementsSent = () => c.transaction?.statements ?? -1;
  return {
    ...batchOps(c),
    *targets(ids) {
      if (ids.length === 0) return [];
      if (writing(c)) yield* sendAhead(c, lockTargets, [ids]);
      return yield* rows<DependencyTargetRow>(c, targets, [ids]);
    },
    *countDependents(counts) {
      if (counts.size === 0) return;
      const ids = [...counts.keys()].sort();
      const added = ids.map((id) => counts.get(id)!);
      yield* sendAhead(c, countDependents, [ids, added.map((n) => n.added), added.map((n) => n.others)]);
    },
    *of(childId) {
      const flags = leasedFlagsOf(c, childId);
      if (flags !== undefined && (flags & waitsOnJobs) === 0) return [];
      return yield* rows<DependencyEdgeRow>(c, edgesOf, [childId]);
    },
    *ofMany(childSeqs) {
      const seqs = mayHaveEdges(c, childSeqs);
      if (seqs.length === 0) return [];
      return yield* rows<DependencyEdgeRow & { child_seq: number }>(c, edgesOfSeqs, [seqs]);
    },
    *results(ids) {
      if (ids.length === 0) return [];
      return yield* rows<JobResultRow>(c, resultsOf, [ids]);
    },
    *dependentsOf(p) {
      return yield* rows<DependentRow>(c, dependentsOf, [p.parentId, p.limit]);
    },
    *waitingOnDead({ queue, ids, limit }) {
      if (ids.length === 0) return 0;
      return (yield* firstRow<{ waiting: number }>(c, waitingOnDead, [queue, ids, limit]))?.waiting ?? 0;
    },
    *add({ childId, policy, edges }) {
      const edgeArrays = [
        childId,
        policy,
        edges.map((e) => e.parentId),
        edges.map((e) => e.state),
        edges.map((e) => e.name ?? null),
      ];
      const unmarked = edges.flatMap((e) => (e.parentMarked === true ? [] : [e.parentId]));
      if (unmarked.length === 0) yield* sendAhead(c, add, edgeArrays);
      else yield* sendAhead(c, addMarking, [...edgeArrays, unmarked]);
    },
    *pendingChildren(parentId) {
      return yield* rows<WaitingChildRow>(c, writing(c) ? pendingChildrenLocked : pendingChildren, [
        parentId,
      ]);
    },
    *resolve(p) {
      const row = yield* firstRow<{ resolved: boolean; others: boolean }>(c, resolve, [
        p.parentId,
        p.childSeq,
        p.state,
      ]);
      resolved =
        row?.resolved === true
          ? { childSeq: p.childSeq, others: row.others, at: statementsSent() }
          : undefined;
      return row?.resolved === true;
    },
    *anyPending(childSeq) {
      const known = resolved;
      resolved = undefined;
      // Only right after the resolve of this job's edge, with no statement in between.
      if (
        known !== undefined &&
        known.childSeq === childSeq &&
        known.at === statementsSent() &&
        known.at >= 0
      )
        return known.others;
      return (yield* value<boolean>(c, anyPending, [childSeq])) === true;
    },
    *release(p) {
      yield* sendAhead(c, release, [p.seq, p.state]);
    },
    *resolveToEnded(parentId, state) {
      yield* sendAhead(c, resolveToEnded, [parentId, state]);
    },
    *failFromFailed(childSeq) {
      yield* sendAhead(c, failFromFailed, [childSeq]);
    },
    *releaseCompleted({ parentIds, nowMs }) {
      if (parentIds.length === 0) return [];
      // The locks first, in a statement of their own: the release's snapshot then comes after
      // another server's transaction that held one of these jobs committed (its edges resolved).
      yield* sendAhead(c, lockPendingChildren, [parentIds]);
      const released = yield* arrayRows(c, releaseCompleted, [parentIds, nowMs], releasedRow);
      return released.sort((a, b) => a.seq - b.seq);
    },
    *forget(childSeq) {
      yield* sendAhead(c, forget, [childSeq]);
    },
    *keepFailures(jobIds) {
      if (jobIds.length > 0) yield* sendAhead(c, keepFailures, [jobIds]);
    },
    *takeFailures(limit) {
      return yield* rows<KeptFailureRow>(c, takeFailures, [limit]);
    },
    *forgetDependents(parentId) {
      yield* sendAhead(c, forgetDependents, [parentId]);
    },
    *leftovers() {
      const left = yield* firstRow<{ counts: number; edges: number }>(c, leftovers, []);
      return leftoverLines(left?.counts ?? 0, left?.edges ?? 0);
    },
    *queuesWithDependencies() {
      return (yield* rows<{ name: string }>(c, queuesWithDependencies, [])).map((row) => row.name);
    },
    *markQueue(queue) {
      yield* sendAhead(c, markQueue, [queue]);
    },
    *flowNeighbours(p) {
      return (yield* rows<{ id: string }>(c, flowNeighbours, [p.ids, p.limit])).map((row) => row.id);
    },
    *flowRows(ids) {
      return yield* rows<FlowJobRow>(c, flowRows, [ids]);
    },
  };
}
