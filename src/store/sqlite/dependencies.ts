/**
 * The dependency edges (schema/0012_dependencies.sql): who waits on whom, and the
 * release of a waiting job. Every statement is a primary-key or index probe bounded
 * by one job's edges; none runs for a job without dependencies or dependents.
 */
import {
  type Dependencies,
  type DependencyEdgeRow,
  type DependencyTargetRow,
  type DependentRow,
  type EdgeState,
  jobsWaitOnIt,
  type WaitingChildRow,
  waitsOnJobs,
} from '../dependencies.ts';
import type { Op } from '../op.ts';
import type { Db } from './open.ts';

export function prepareDependencyStatements(db: Db) {
  return {
    target: db.prepare<[string], DependencyTargetRow>('SELECT id, seq, state FROM jobs WHERE id = ?'),
    markWaiting: db.prepare<[string]>(
      `UPDATE jobs SET dependency_flags = dependency_flags | ${waitsOnJobs} WHERE id = ?`,
    ),
    addEdge: db.prepare<
      [{ childId: string; parentId: string; state: EdgeState; policy: string; name: string | null }]
    >(
      `INSERT INTO job_dependencies (child_seq, parent_id, state, policy, name)
        SELECT seq, @parentId, @state, @policy, @name FROM jobs WHERE id = @childId`,
    ),
    markDependedOn: db.prepare<[string]>(
      `UPDATE jobs SET dependency_flags = dependency_flags | ${jobsWaitOnIt} WHERE id = ?`,
    ),
    edgesOf: db.prepare<[string], DependencyEdgeRow>(
      `SELECT d.parent_id, d.name, d.state AS edge_state, p.state AS parent_state, p.queue AS parent_queue,
              p.type AS parent_type, p.result, p.result_content_type
         FROM jobs c JOIN job_dependencies d ON d.child_seq = c.seq
         LEFT JOIN jobs p ON p.id = d.parent_id
        WHERE c.id = ? ORDER BY p.seq`,
    ),
    dependentsOf: db.prepare<[{ parentId: string; limit: number }], DependentRow>(
      `SELECT c.id, c.queue, c.state, d.state AS edge_state
         FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
        WHERE d.parent_id = @parentId ORDER BY d.child_seq LIMIT @limit`,
    ),
    pendingChildren: db.prepare<[string], WaitingChildRow>(
      `SELECT c.seq, c.id, c.queue, c.type, c.attempt, c.state, c.run_at_ms, c.idempotency_key,
              d.policy, c.dependency_flags
         FROM job_dependencies d INDEXED BY job_dependencies_pending JOIN jobs c ON c.seq = d.child_seq
        WHERE d.parent_id = ? AND d.state = 'pending' AND c.state = 'waiting' ORDER BY d.child_seq`,
    ),
    resolve: db.prepare<[{ parentId: string; childSeq: number; state: string }]>(
      `UPDATE job_dependencies SET state = @state
        WHERE child_seq = @childSeq AND parent_id = @parentId AND state = 'pending'`,
    ),
    pendingOf: db
      .prepare<[number], number>(
        "SELECT count(*) FROM job_dependencies WHERE child_seq = ? AND state = 'pending'",
      )
      .pluck(),
    release: db.prepare<[{ seq: number; state: string }]>(
      "UPDATE jobs SET state = @state WHERE seq = @seq AND state = 'waiting'",
    ),
    forget: db.prepare<[number]>('DELETE FROM job_dependencies WHERE child_seq = ?'),
    queuesWithDependencies: db
      .prepare<[], string>('SELECT name FROM queues WHERE has_dependencies = 1')
      .pluck(),
    markQueue: db.prepare<[string]>('UPDATE queues SET has_dependencies = 1 WHERE name = ?'),
  };
}

type DependencyStatements = ReturnType<typeof prepareDependencyStatements>;

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
    *of(childId) {
      return sql.edgesOf.all(childId);
    },
    *dependentsOf(p) {
      return sql.dependentsOf.all(p);
    },
    *add({ childId, policy, edges }) {
      sql.markWaiting.run(childId);
      for (const edge of edges) {
        sql.addEdge.run({
          childId,
          parentId: edge.parentId,
          state: edge.state,
          policy,
          name: edge.name ?? null,
        });
        sql.markDependedOn.run(edge.parentId);
      }
    },
    *pendingChildren(parentId) {
      return sql.pendingChildren.all(parentId);
    },
    *resolve(p) {
      return sql.resolve.run(p).changes > 0;
    },
    *pendingOf(childSeq) {
      return sql.pendingOf.get(childSeq) ?? 0;
    },
    *release(p) {
      sql.release.run(p);
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
  };
}
