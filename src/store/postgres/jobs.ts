/**
 * Jobs as rows: the insert (every row of a batch in one statement, from arrays),
 * the reads by id, and the time-driven changes (promotion of due jobs,
 * retention sweeps), which lock what they take with SKIP LOCKED so that every
 * server may run them at once, each taking different rows.
 */

import { jobsWaitOnIt, readerStates, waitsOnJobs } from '../dependencies.ts';
import type { Jobs } from '../jobs.ts';
import type { AttemptRow, ControlRow, DebounceTargetRow, JobRow, JobSummaryRow, NewJobRow } from '../rows.ts';
import { jobEnds } from './job-ends.ts';
import { attemptColumns } from './leases.ts';
import { type Connection, changes, firstRow, rows, statement, value, writing } from './sql.ts';

/** Every column of NewJobRow but its dependency flags, flow name and creator, with its array type, in statement order. */
const columns = [
  ['id', 'text'],
  ['queue', 'text'],
  ['type', 'text'],
  ['state', 'text'],
  ['priority', 'smallint'],
  ['payload', 'bytea'],
  ['content_type', 'text'],
  ['metadata_json', 'text'],
  ['traceparent', 'text'],
  ['tracestate', 'text'],
  ['idempotency_key', 'text'],
  ['max_attempts', 'integer'],
  ['lease_ms', 'bigint'],
  ['enqueued_at_ms', 'bigint'],
  ['run_at_ms', 'bigint'],
  ['expires_at_ms', 'bigint'],
  ['group_key', 'text'],
  ['timeout_ms', 'bigint'],
] as const satisfies readonly (readonly [keyof NewJobRow, string])[];
type Listed = (typeof columns)[number][0] | 'dependency_flags' | 'flow_name' | 'created_by';
// A field added to NewJobRow but not to `columns` fails the typecheck here, rather than being dropped.
const everyColumnListed: [Exclude<keyof NewJobRow, Listed>] extends [never] ? true : never = true;

/**
 * Inserts the rows in the order given (their seqs follow it): one statement, one array per
 * column; with `flagged`, dependency_flags, flow_name and created_by too (a job in a workflow or
 * made with an API key: most jobs on a server without keys have none, and the columns keep their
 * defaults, 0, NULL and NULL).
 */
const insertStatement = (flagged: boolean) => {
  const listed: readonly (readonly [string, string])[] = flagged
    ? [...columns, ['dependency_flags', 'integer'], ['flow_name', 'text'], ['created_by', 'text']]
    : columns;
  const names = listed.map(([name]) => name).join(', ');
  return statement(
    `INSERT INTO jobs (${names})
     SELECT ${names}
       FROM unnest(${listed.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
            WITH ORDINALITY AS t(${names}, ord)
      ORDER BY ord`,
  );
};
const insertJobs = insertStatement(false);
const insertFlaggedJobs = insertStatement(true);

/** What a list shows of a job: everything but the payload, whose size is given instead. */
export const summaryColumns = `seq, id, queue, type, state, priority, content_type, octet_length(payload) AS payload_bytes,
  attempt, max_attempts, attempt_base, idempotency_key, enqueued_at_ms, run_at_ms, lease_deadline_ms, worker_id,
  substr(last_error, 1, 200) AS last_error, dead_reason, failed_at_ms, completed_at_ms, expires_at_ms,
  cancelled_at_ms, cancelled_by, group_key, leased_at_ms`;

/** Every column of a JobRow, as `SELECT *` would give them without the ones a JobRow lacks. */
export const jobColumns = `seq, id, queue, type, state, priority, payload, content_type, metadata_json, traceparent,
  tracestate, idempotency_key, attempt, max_attempts, attempt_base, enqueued_at_ms, run_at_ms, leased_at_ms,
  lease_deadline_ms, worker_id, last_error, errors_json, dead_reason, failed_at_ms, completed_at_ms, expires_at_ms,
  cancelled_at_ms, cancelled_by, result, result_content_type, progress_percent, progress_json, progress_at_ms,
  group_key, dependency_flags, timeout_ms, timeout_at_ms, debounce_key, debounce_until_ms`;

/** A read by id, and the same locking the row for a write unit (sql.ts `writing`). */
const byId = (columns: string) => ({
  read: statement(`SELECT ${columns} FROM jobs WHERE id = $1`),
  lock: statement(`SELECT ${columns} FROM jobs WHERE id = $1 FOR UPDATE`),
});
const jobById = byId(jobColumns);
const attemptById = byId(attemptColumns);
const controlById = byId(
  `seq, id, queue, type, state, priority, attempt, run_at_ms, expires_at_ms, worker_id, idempotency_key,
   group_key, cancelled_at_ms, cancelled_by, completed_at_ms, dependency_flags`,
);
const stateById = statement('SELECT state AS v FROM jobs WHERE id = $1');
const summariesBySeqs = statement(`SELECT ${summaryColumns} FROM jobs WHERE seq = ANY($1::bigint[])`);
const deleteJob = statement('DELETE FROM jobs WHERE seq = $1');

// ---- debounce (schema/postgres/0007_debounce_enqueue_timeout.sql)
/** The advisory-lock class of debounce keys (the second key is the hash of queue and key). */
const debounceLockClass = 24220;
const lockDebounceKey = statement(
  `SELECT pg_advisory_xact_lock(${debounceLockClass}, hashtext($1 || E'\\n' || $2))`,
);
const debounceTarget = statement(
  `SELECT seq, id, queue, state, run_at_ms, debounce_until_ms FROM jobs
    WHERE queue = $1 AND debounce_key = $2 AND attempt = 0 AND state IN ('scheduled', 'ready')
    ORDER BY seq DESC LIMIT 1 FOR UPDATE`,
);
const markDebounced = statement(
  `UPDATE jobs j SET debounce_key = t.key, debounce_until_ms = t.until_ms
     FROM unnest($1::text[], $2::text[], $3::bigint[]) AS t(id, key, until_ms) WHERE j.id = t.id`,
);
const debounceJob = statement(
  `UPDATE jobs SET payload = $2, content_type = $3, metadata_json = $4, traceparent = $5, tracestate = $6,
          run_at_ms = $7, state = $8
    WHERE seq = $1`,
);
const promoteDue = statement(
  `WITH due AS MATERIALIZED (
     SELECT seq FROM jobs WHERE state = 'scheduled' AND run_at_ms <= $1
      ORDER BY run_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)
   UPDATE jobs j SET state = 'ready' FROM due WHERE j.seq = due.seq
   RETURNING j.queue, j.run_at_ms`,
);
const nextRunAt = statement("SELECT min(run_at_ms) AS v FROM jobs WHERE state = 'scheduled'");
/**
 * A retention sweep of one final state, oldest first, taking the edges of swept jobs that
 * waited on others with them, and the counts of dependents of those others waited on. A job others depend on stays while one of them may still read it
 * (readerStates; docs/decisions/0101-workflows-design.md);
 * `dependency_flags` is 0 for every other job, so the check costs them nothing.
 */
const sweep = (state: 'dead' | 'completed' | 'cancelled', column: string) =>
  statement(
    `WITH swept AS (
       DELETE FROM jobs WHERE seq IN (
         SELECT j.seq FROM jobs j WHERE j.queue = $1 AND j.state = '${state}' AND j.${column} < $2
            AND ((j.dependency_flags & ${jobsWaitOnIt}) = 0 OR NOT EXISTS (
                  SELECT 1 FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq
                   WHERE d.parent_id = j.id AND c.state IN (${readerStates(state)})))
          ORDER BY j.${column} LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING seq, id, dependency_flags),
     edges AS (
       DELETE FROM job_dependencies WHERE child_seq IN (
         SELECT seq FROM swept WHERE (dependency_flags & ${waitsOnJobs}) <> 0)),
     counts AS (
       DELETE FROM job_dependents WHERE parent_id IN (
         SELECT id FROM swept WHERE (dependency_flags & ${jobsWaitOnIt}) <> 0))
     SELECT seq, id, dependency_flags FROM swept`,
  );
const sweeps = {
  dead: sweep('dead', 'failed_at_ms'),
  completed: sweep('completed', 'completed_at_ms'),
  cancelled: sweep('cancelled', 'cancelled_at_ms'),
};

export function jobOps(c: Connection): Jobs {
  void everyColumnListed;
  return {
    *get(id) {
      return yield* firstRow<JobRow>(c, writing(c) ? jobById.lock : jobById.read, [id]);
    },
    *attempt(id) {
      return yield* firstRow<AttemptRow>(c, writing(c) ? attemptById.lock : attemptById.read, [id]);
    },
    *control(id) {
      return yield* firstRow<ControlRow>(c, writing(c) ? controlById.lock : controlById.read, [id]);
    },
    *stateOf(id) {
      return yield* value<string>(c, stateById, [id]);
    },
    *summaries(seqs) {
      if (seqs.length === 0) return [];
      return yield* rows<JobSummaryRow>(c, summariesBySeqs, [seqs]);
    },
    *nextRunAtMs() {
      return (yield* value<number | null>(c, nextRunAt, [])) ?? null;
    },
    ends: (ids) => jobEnds(c, ids),
    *insert(jobs) {
      if (jobs.length === 0) return;
      const arrays: unknown[] = columns.map(([name]) => jobs.map((job) => job[name]));
      // Jobs outside workflows made without a key have no flags, flow name nor creator: their rows go
      // through the INSERT without those columns.
      const flagged = (job: NewJobRow) =>
        (job.dependency_flags ?? 0) !== 0 ||
        (job.flow_name ?? null) !== null ||
        (job.created_by ?? null) !== null;
      if (!jobs.some(flagged)) {
        yield* changes(c, insertJobs, arrays);
      } else {
        const flags = jobs.map((job) => job.dependency_flags ?? 0);
        const names = jobs.map((job) => job.flow_name ?? null);
        yield* changes(c, insertFlaggedJobs, [
          ...arrays,
          flags,
          names,
          jobs.map((job) => job.created_by ?? null),
        ]);
      }
    },
    *delete(seq) {
      yield* changes(c, deleteJob, [seq]);
    },
    *debounceTarget(p) {
      // Two servers debouncing one key at once: the second waits for the first's commit, then
      // finds its job (read committed: each statement sees what committed before it began).
      if (writing(c)) yield* changes(c, lockDebounceKey, [p.queue, p.key]);
      return yield* firstRow<DebounceTargetRow>(c, debounceTarget, [p.queue, p.key]);
    },
    *markDebounced(marks) {
      if (marks.length === 0) return;
      yield* changes(c, markDebounced, [
        marks.map((m) => m.id),
        marks.map((m) => m.key),
        marks.map((m) => m.untilMs),
      ]);
    },
    *debounce(p) {
      yield* changes(c, debounceJob, [
        p.seq,
        p.payload,
        p.content_type,
        p.metadata_json,
        p.traceparent,
        p.tracestate,
        p.run_at_ms,
        p.state,
      ]);
    },
    *promoteDue(p) {
      const promoted = yield* rows<{ queue: string; run_at_ms: number }>(c, promoteDue, [p.nowMs, p.limit]);
      return promoted.sort((a, b) => a.run_at_ms - b.run_at_ms).map((row) => ({ queue: row.queue }));
    },
    *sweep(p) {
      type Swept = { seq: number; id: string; dependency_flags: number };
      const swept = yield* rows<Swept>(c, sweeps[p.state], [p.queue, p.beforeMs, p.limit]);
      return {
        swept: swept.length,
        dependedOn: swept.filter((job) => (job.dependency_flags & jobsWaitOnIt) !== 0),
      };
    },
  };
}
