/**
 * Jobs as rows: the insert (several rows per statement, multi-row.ts: a batch of
 * 50 jobs is one INSERT instead of 50), the reads by id, and the time-driven
 * changes (promotion of due jobs, retention sweeps). Prepared once; each lists
 * its parameters; time is always a parameter.
 */
import { jobsWaitOnIt, readerStates, waitsOnJobs } from '../dependencies.ts';
import type { Jobs } from '../jobs.ts';
import type { Op } from '../op.ts';
import type {
  AttemptRow,
  ControlRow,
  DebounceTargetRow,
  DebounceUpdate,
  JobRow,
  JobSummaryRow,
  NewJobRow,
} from '../rows.ts';
import type { DependencyStatements } from './dependencies.ts';
import { attemptColumns } from './leases.ts';
import { MultiRowStatement } from './multi-row.ts';
import type { Preparer } from './prepare-on-use.ts';

/** The columns of NewJobRow every job has a value for, in statement order. */
const requiredColumns = [
  'id',
  'queue',
  'type',
  'state',
  'priority',
  'payload',
  'content_type',
  'max_attempts',
  'enqueued_at_ms',
  'run_at_ms',
] as const satisfies readonly (keyof NewJobRow)[];
/** The columns of NewJobRow that are null for most jobs (every one of them without a DEFAULT: omitted, it is NULL). */
const optionalColumns = [
  'metadata_json',
  'traceparent',
  'tracestate',
  'idempotency_key',
  'lease_ms',
  'expires_at_ms',
  'group_key',
  'timeout_ms',
] as const satisfies readonly (keyof NewJobRow)[];
type Listed =
  | (typeof requiredColumns)[number]
  | (typeof optionalColumns)[number]
  | 'dependency_flags'
  | 'flow_name'
  | 'created_by';
// A field added to NewJobRow but not to a list fails the typecheck here, rather than being dropped.
const everyColumnListed: [Exclude<keyof NewJobRow, Listed>] extends [never] ? true : never = true;

/**
 * Which INSERT a batch of jobs goes through: with its optional columns (`full`) or without them
 * (`lean`: every one null in every row, the common job); and with none of dependency flags, flow
 * names and creators (`plain`: the columns keep their defaults, 0, NULL and NULL), with creators
 * only (`created`: a job made with an API key, outside a workflow), or with all three (`flagged`:
 * some row is in a workflow). Each value a statement binds costs: the eight nulls of a plain job
 * were ~0.4 µs of a W5 job's 3.5 µs INSERT (measured, bench/results/w5enq-2026-12-07.md).
 */
type Extra = 'plain' | 'created' | 'flagged';
type InsertKind = `${'full' | 'lean'}-${Extra}`;
type JobInserts = Record<InsertKind, MultiRowStatement<NewJobRow, never>>;

/** The INSERT of the required columns, then the optional ones unless `lean`, then the columns `extra` names. */
function prepareJobInsert(db: Preparer, lean: boolean, extra: Extra): MultiRowStatement<NewJobRow, never> {
  const columns: readonly Exclude<Listed, 'dependency_flags' | 'flow_name' | 'created_by'>[] = lean
    ? requiredColumns
    : [...requiredColumns, ...optionalColumns];
  const listed =
    extra === 'flagged'
      ? [...columns, 'dependency_flags', 'flow_name', 'created_by']
      : extra === 'created'
        ? [...columns, 'created_by']
        : columns;
  return new MultiRowStatement<NewJobRow, never>(
    db,
    listed.length,
    (tuples) => `INSERT INTO jobs (${listed.join(', ')}) VALUES ${tuples}`,
    (values, offset, job) => {
      for (let c = 0; c < columns.length; c++) values[offset + c] = job[columns[c]!];
      if (extra === 'flagged') {
        values[offset + columns.length] = job.dependency_flags ?? 0;
        values[offset + columns.length + 1] = job.flow_name ?? null;
        values[offset + columns.length + 2] = job.created_by ?? null;
      } else if (extra === 'created') {
        values[offset + columns.length] = job.created_by ?? null;
      }
    },
    'exact',
  );
}

/** Prepares the multi-row INSERTs of jobs; `run` inserts rows in the order given (seq follows it). */
export function prepareJobInserts(db: Preparer): JobInserts {
  void everyColumnListed;
  return {
    'full-plain': prepareJobInsert(db, false, 'plain'),
    'full-created': prepareJobInsert(db, false, 'created'),
    'full-flagged': prepareJobInsert(db, false, 'flagged'),
    'lean-plain': prepareJobInsert(db, true, 'plain'),
    'lean-created': prepareJobInsert(db, true, 'created'),
    'lean-flagged': prepareJobInsert(db, true, 'flagged'),
  };
}

/** Whether `row` has a value in an optional column (then its batch needs the `full` INSERT). */
function hasOptional(row: NewJobRow): boolean {
  for (const column of optionalColumns) if (row[column] !== null) return true;
  return false;
}

/** What a list shows of a job: everything but the payload, whose size is given instead. */
export const summaryColumns = `seq, id, queue, type, state, priority, content_type, length(payload) AS payload_bytes, attempt,
  max_attempts, attempt_base, idempotency_key, enqueued_at_ms, run_at_ms, lease_deadline_ms, worker_id,
  substr(last_error, 1, 200) AS last_error, dead_reason, failed_at_ms, completed_at_ms, expires_at_ms,
  cancelled_at_ms, cancelled_by, group_key, leased_at_ms`;

type SweepParams = { queue: string; state: string; beforeMs: number; limit: number };

export function prepareJobStatements(db: Preparer) {
  return {
    jobById: db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?'),
    attemptById: db.prepare<[string], AttemptRow>(`SELECT ${attemptColumns} FROM jobs WHERE id = ?`),
    controlRowById: db.prepare<[string], ControlRow>(
      `SELECT seq, id, queue, type, state, priority, attempt, run_at_ms, expires_at_ms, worker_id, idempotency_key,
              group_key, cancelled_at_ms, cancelled_by, completed_at_ms, dependency_flags
         FROM jobs WHERE id = ?`,
    ),
    /** The state of a job (a schedule's overlap policy asks for its last job's). */
    jobStateById: db.prepare<[string], string>('SELECT state FROM jobs WHERE id = ?').pluck(),
    /** Summaries of the jobs whose seqs are in @seqsJson (a JSON array): one primary-key probe each. */
    summariesBySeqs: db.prepare<[{ seqsJson: string }], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs WHERE seq IN (SELECT value FROM json_each(@seqsJson))`,
    ),
    deleteJob: db.prepare<[number]>('DELETE FROM jobs WHERE seq = ?'),

    // ---- debounce (schema/0019_debounce.sql): the terms match jobs_debounce's WHERE
    debounceTarget: db.prepare<[{ queue: string; key: string }], DebounceTargetRow>(
      `SELECT seq, id, queue, state, run_at_ms, debounce_until_ms FROM jobs INDEXED BY jobs_debounce
        WHERE queue = @queue AND debounce_key = @key AND attempt = 0 AND state IN ('scheduled', 'ready')
        ORDER BY seq DESC LIMIT 1`,
    ),
    markDebounced: db.prepare<[{ id: string; key: string; untilMs: number | null }]>(
      'UPDATE jobs SET debounce_key = @key, debounce_until_ms = @untilMs WHERE id = @id',
    ),
    debounce: db.prepare<[DebounceUpdate]>(
      `UPDATE jobs SET payload = @payload, content_type = @content_type, metadata_json = @metadata_json,
              traceparent = @traceparent, tracestate = @tracestate, run_at_ms = @run_at_ms, state = @state
        WHERE seq = @seq`,
    ),

    // ---- time-driven work
    promoteDue: db.prepare<[{ nowMs: number; limit: number }], { queue: string }>(
      `UPDATE jobs SET state = 'ready'
        WHERE seq IN (SELECT seq FROM jobs WHERE state = 'scheduled' AND run_at_ms <= @nowMs
                      ORDER BY run_at_ms LIMIT @limit)
        RETURNING queue`,
    ),
    nextRunAt: db
      .prepare<[], number | null>("SELECT min(run_at_ms) FROM jobs WHERE state = 'scheduled'")
      .pluck(),
    sweepDead: sweepStatement(db, 'dead', 'failed_at_ms'),
    sweepCompleted: sweepStatement(db, 'completed', 'completed_at_ms'),
    sweepCancelled: sweepStatement(db, 'cancelled', 'cancelled_at_ms'),
  };
}

/**
 * A retention sweep of one final state, oldest first. A job others depend on stays while
 * one of them may still read it (readerStates; docs/decisions/0101-workflows-design.md);
 * `dependency_flags` is 0 for every other job, so the check costs them nothing. Returns the deleted jobs' seqs, ids and flags, so
 * the edges of the ones that waited on others go with them, and the counts of dependents of
 * the ones others waited on.
 */
function sweepStatement(db: Preparer, state: 'dead' | 'completed' | 'cancelled', endedAt: string) {
  return db.prepare<[SweepParams], { seq: number; id: string; dependency_flags: number }>(
    `DELETE FROM jobs WHERE seq IN (
       SELECT j.seq FROM jobs j WHERE j.queue = @queue AND j.state = '${state}' AND j.${endedAt} < @beforeMs
          AND ((j.dependency_flags & ${jobsWaitOnIt}) = 0 OR NOT EXISTS (
                SELECT 1 FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
                 WHERE d.parent_id = j.id AND c.state IN (${readerStates(state)})))
        ORDER BY j.${endedAt} LIMIT @limit)
     RETURNING seq, id, dependency_flags`,
  );
}

type JobStatements = ReturnType<typeof prepareJobStatements>;

/**
 * `forgets`: the dependency capability's statements (dependencies.ts) that drop the edges of a
 * swept job that waited on others and the count of dependents of one others waited on.
 */
export function jobOps(
  sql: JobStatements,
  inserts: JobInserts,
  forgets: Pick<DependencyStatements, 'forget' | 'forgetDependentsOf'>,
): Jobs {
  const sweeps = { dead: sql.sweepDead, completed: sql.sweepCompleted, cancelled: sql.sweepCancelled };
  return {
    *get(id) {
      return sql.jobById.get(id);
    },
    *attempt(id) {
      return sql.attemptById.get(id);
    },
    *control(id) {
      return sql.controlRowById.get(id);
    },
    *stateOf(id) {
      return sql.jobStateById.get(id);
    },
    *summaries(seqs): Op<JobSummaryRow[]> {
      return seqs.length === 0 ? [] : sql.summariesBySeqs.all({ seqsJson: JSON.stringify(seqs) });
    },
    *nextRunAtMs() {
      return sql.nextRunAt.get() ?? null;
    },
    *insert(rows) {
      // Jobs outside workflows made without a key have no flags, most jobs no optional field: their
      // rows go through an INSERT without those columns; a key's jobs add their creator only.
      let extra: Extra = 'plain';
      let full = false;
      for (const row of rows) {
        if ((row.dependency_flags ?? 0) !== 0 || (row.flow_name ?? null) !== null) extra = 'flagged';
        else if (extra === 'plain' && (row.created_by ?? null) !== null) extra = 'created';
        if (!full && hasOptional(row)) full = true;
      }
      inserts[`${full ? 'full' : 'lean'}-${extra}`].run(rows);
    },
    *delete(seq) {
      sql.deleteJob.run(seq);
    },
    *debounceTarget(p) {
      return sql.debounceTarget.get(p);
    },
    *markDebounced(rows) {
      for (const row of rows) sql.markDebounced.run(row);
    },
    *debounce(p) {
      sql.debounce.run(p);
    },
    *promoteDue(p) {
      return sql.promoteDue.all(p);
    },
    *sweep(p) {
      const swept = sweeps[p.state].all(p);
      for (const job of swept) {
        if ((job.dependency_flags & waitsOnJobs) !== 0) forgets.forget.run(job.seq);
        if ((job.dependency_flags & jobsWaitOnIt) !== 0) forgets.forgetDependentsOf.run(job.id);
      }
      return {
        swept: swept.length,
        dependedOn: swept.filter((job) => (job.dependency_flags & jobsWaitOnIt) !== 0),
      };
    },
  };
}
