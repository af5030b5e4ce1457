/**
 * Leases and their settlements, N jobs per statement (design note 0100,
 * sections 3 and 4): a lease is one `UPDATE` of the rows a materialized, LIMITed
 * sub-select picked and locked `FOR UPDATE SKIP LOCKED`, so leases on several
 * servers skip each other's rows instead of queueing behind them and no job is
 * leased twice; the acks of a Work message are one `DELETE … USING unnest(…)`.
 * Every settlement is fenced by the attempt. Settlements find a leased job by
 * `lease_deadline_ms IS NOT NULL` (set exactly while leased, a CHECK of the
 * schema), so only the id's index can serve them.
 */

import { jobsWaitOnIt } from '../dependencies.ts';
import type { AttemptKey, CompletingAck, LeaseParams, Leases, UndoneLeaseRow } from '../leases.ts';
import type { Op } from '../op.ts';
import type { AckedRow, AttemptRow, LeasedRow } from '../rows.ts';
import { noteLeased } from './dependencies.ts';
import {
  arrayRows,
  arrayStatement,
  type Connection,
  changes,
  firstRow,
  plannedEachTime,
  rows,
  type Statement,
  sendAhead,
  statement,
  value,
  writing,
} from './sql.ts';

/**
 * The columns of a LeasedRow, as every leasing statement returns them (`batch_id`: NULL but
 * for a batch's members, schema/postgres/0016), and `dependency_flags`
 * (noted for the results passed on at lease: dependencies.ts `noteLeased`). The rows come as
 * arrays (sql.ts `arrayStatement`) that `leasedRow` maps: one object literal per job rather
 * than the driver's object built key by key.
 */
const leasedNames = [
  'seq',
  'id',
  'queue',
  'type',
  'payload',
  'content_type',
  'priority',
  'attempt',
  'max_attempts',
  'attempt_base',
  'lease_deadline_ms',
  'enqueued_at_ms',
  'run_at_ms',
  'metadata_json',
  'traceparent',
  'tracestate',
  'idempotency_key',
  'last_error',
  'expires_at_ms',
  'group_key',
  'timeout_at_ms',
  'batch_id',
  'dependency_flags',
] as const satisfies readonly (keyof LeasedRow | 'dependency_flags')[];
type LeasedWithFlags = LeasedRow & { dependency_flags: number };
// A column added to LeasedRow but not to `leasedNames` fails the typecheck here.
const everyLeasedColumn: [Exclude<keyof LeasedRow, (typeof leasedNames)[number]>] extends [never]
  ? true
  : never = true;
/**
 * The payload comes as base64 text (`encode(…, 'base64')`, which breaks its lines every 76
 * characters; Buffer's base64 decoder skips them), not as bytea's hex text: 4 characters for 3
 * bytes instead of 2 for 1, less for the driver to read into a string and decode per job.
 */
const leasedColumns = leasedNames
  .map((name) => (name === 'payload' ? `encode(j.payload, 'base64') AS payload` : `j.${name}`))
  .join(', ');
/** Each column's place in a leased row's array. */
const at = Object.fromEntries(leasedNames.map((name, i) => [name, i])) as Record<
  (typeof leasedNames)[number],
  number
>;

function leasedRow(r: unknown[]): LeasedWithFlags {
  return {
    seq: r[at.seq] as number,
    id: r[at.id] as string,
    queue: r[at.queue] as string,
    type: r[at.type] as string,
    payload: Buffer.from(r[at.payload] as string, 'base64'),
    content_type: r[at.content_type] as string,
    priority: r[at.priority] as number,
    attempt: r[at.attempt] as number,
    max_attempts: r[at.max_attempts] as number,
    attempt_base: r[at.attempt_base] as number,
    lease_deadline_ms: r[at.lease_deadline_ms] as LeasedRow['lease_deadline_ms'],
    enqueued_at_ms: r[at.enqueued_at_ms] as number,
    run_at_ms: r[at.run_at_ms] as number,
    metadata_json: r[at.metadata_json] as LeasedRow['metadata_json'],
    traceparent: r[at.traceparent] as LeasedRow['traceparent'],
    tracestate: r[at.tracestate] as LeasedRow['tracestate'],
    idempotency_key: r[at.idempotency_key] as LeasedRow['idempotency_key'],
    last_error: r[at.last_error] as LeasedRow['last_error'],
    expires_at_ms: r[at.expires_at_ms] as LeasedRow['expires_at_ms'],
    group_key: r[at.group_key] as LeasedRow['group_key'],
    timeout_at_ms: r[at.timeout_at_ms] as LeasedRow['timeout_at_ms'],
    batch_id: r[at.batch_id] as LeasedRow['batch_id'],
    dependency_flags: r[at.dependency_flags] as number,
  };
}

/** The columns of an AttemptRow (jobs.ts reads them too). */
export const attemptColumns =
  'seq, id, queue, type, state, attempt, max_attempts, attempt_base, errors_json, cancelled_at_ms, cancelled_by, dependency_flags, timeout_at_ms, run_at_ms, leased_at_ms, worker_id';

/**
 * Leases the rows `picked` names: $3 now, $4 the deadline, $5 the latest deadline
 * a job's own lease_ms may reach, $6 the worker, $7 the queue's default_timeout_ms
 * (NULL: none). A job with its own lease_ms gets at least that long, up to $5. A job
 * with a hard timeout (its own timeout_ms, else $7) gets `timeout_at_ms` and its
 * deadline capped there (least() skips a NULL), so the lease-expiry sweep ends it.
 * The rows come back in `picked`'s order (`order`).
 *
 * Its plan is PostgreSQL's generic plan (`withGenericPlan`): with the table's statistics,
 * the generic plan's cost takes `LIMIT $2` for a tenth of the queue's ready jobs, more
 * than the custom plan's for the few it leases, so PostgreSQL planned the lease again at
 * every execution (~0.3 ms each, 12 µs per job in a W1 drain once the table had been
 * analyzed). The leased rows are found by `seq = ANY(ARRAY(…))`, the primary key's index
 * whatever the estimate: the join to `picked` hashed the whole table in the generic plan.
 */
const leaseStatement = (picked: string, order: string) =>
  arrayStatement(
    `WITH picked AS MATERIALIZED (${picked} ORDER BY ${order} LIMIT $2 FOR UPDATE SKIP LOCKED),
     leased AS (
     UPDATE jobs j
        SET state = 'leased', attempt = j.attempt + 1, leased_at_ms = $3::bigint,
            lease_deadline_ms = least(CASE WHEN j.lease_ms IS NULL THEN $4::bigint
                                ELSE greatest($4::bigint, least($3::bigint + j.lease_ms, $5::bigint)) END,
                                $3::bigint + coalesce(j.timeout_ms, $7::bigint)),
            timeout_at_ms = $3::bigint + coalesce(j.timeout_ms, $7::bigint),
            worker_id = $6
      WHERE j.seq = ANY (ARRAY(SELECT seq FROM picked))
     RETURNING ${leasedColumns})
     SELECT ${leasedNames.join(', ')} FROM leased ORDER BY ${order}`,
  );

const leaseReady = leaseStatement(
  `SELECT seq FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NULL`,
  'priority DESC, run_at_ms, seq',
);
const leaseUngroupedAt = leaseStatement(
  `SELECT seq FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NULL AND priority = $8`,
  'priority DESC, run_at_ms, seq',
);
const leaseGroupAt = leaseStatement(
  `SELECT seq FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key = $9 AND priority = $8`,
  'priority DESC, group_key, run_at_ms, seq',
);

/**
 * Around a statement whose generic plan is right at every size (the lease): its
 * transaction's plan_cache_mode forced to the generic plan, then set back to the
 * session's. Both are sent ahead on the writer's connection: no round trip of their own.
 */
const genericPlans = statement('SET LOCAL plan_cache_mode = force_generic_plan');
const plansAsBefore = statement('SET LOCAL plan_cache_mode TO DEFAULT');
function* withGenericPlan<T>(c: Connection, run: Op<T>): Op<T> {
  yield* sendAhead(c, genericPlans, []);
  const value = yield* run;
  yield* sendAhead(c, plansAsBefore, []);
  return value;
}

/** A leased job (at the attempt each statement adds) with no cancel asked: what an ack deletes or completes. */
const ackable = 'lease_deadline_ms IS NOT NULL AND cancelled_at_ms IS NULL';

/**
 * What the one-statement ack deletes: also in no workflow (`dependency_flags` 0, as for every
 * job without one): a job others wait on is kept completed and releases them, a member counts
 * in its batch — the engine's slow path (read, `complete`, release), in the same unit.
 */
const deletable = `${ackable} AND dependency_flags = 0`;

const ack = statement(
  `DELETE FROM jobs WHERE id = $1 AND attempt = $2 AND ${deletable} RETURNING queue, type, run_at_ms, leased_at_ms, worker_id`,
);
const ackMany = arrayStatement(
  `DELETE FROM jobs j USING unnest($1::text[], $2::integer[]) AS a(id, attempt)
    WHERE j.id = a.id AND j.attempt = a.attempt AND j.lease_deadline_ms IS NOT NULL AND j.cancelled_at_ms IS NULL
      AND j.dependency_flags = 0
   RETURNING j.id, j.queue, j.type, j.run_at_ms, j.leased_at_ms, j.worker_id`,
);
const ackedRow = (r: unknown[]): AckedRow & { id: string } => ({
  id: r[0] as string,
  queue: r[1] as string,
  type: r[2] as string,
  run_at_ms: r[3] as number,
  leased_at_ms: r[4] as number | null,
  worker_id: r[5] as string | null,
});
const complete = statement(
  `UPDATE jobs SET state = 'completed', completed_at_ms = $3, lease_deadline_ms = NULL,
                   result = $4, result_content_type = $5
    WHERE id = $1 AND attempt = $2 AND ${ackable}`,
);
/**
 * `complete` for a job others wait on (`jobsWaitOnIt`), kept completed for them: its row back,
 * with its flags, so the ack needs no read of it first (the per-ack path read it, then
 * completed it: two awaited round trips). Like every settlement, the UPDATE re-checks its
 * WHERE against the newest version of a row another server changed (an expiry, a cancel):
 * it completes the job only at the attempt the ack names, and then nobody else can.
 */
const keptColumns = 'j.id, j.queue, j.type, j.run_at_ms, j.leased_at_ms, j.worker_id, j.dependency_flags';
const completeDependedOn = arrayStatement(
  `UPDATE jobs j SET state = 'completed', completed_at_ms = $3, lease_deadline_ms = NULL,
                     result = $4, result_content_type = $5
    WHERE j.id = $1 AND j.attempt = $2 AND j.lease_deadline_ms IS NOT NULL AND j.cancelled_at_ms IS NULL
      AND (j.dependency_flags & ${jobsWaitOnIt}) <> 0
   RETURNING ${keptColumns}`,
);
/**
 * `completeDependedOn` for an ack batch's jobs others wait on: $1–$4 arrays (ids, attempts,
 * results, content types), $5 now. `id = ANY($1)` gives the planner the ids' index (unique:
 * one row each) whatever it estimates of `unnest`: without it, it hashed the arrays and read
 * every job.
 */
const completeDependedOnMany = plannedEachTime(
  `UPDATE jobs j SET state = 'completed', completed_at_ms = $5, lease_deadline_ms = NULL,
                     result = a.result, result_content_type = a.content_type
     FROM unnest($1::text[], $2::integer[], $3::bytea[], $4::text[]) AS a(id, attempt, result, content_type)
    WHERE j.id = ANY($1::text[]) AND j.id = a.id AND j.attempt = a.attempt AND j.lease_deadline_ms IS NOT NULL
      AND j.cancelled_at_ms IS NULL AND (j.dependency_flags & ${jobsWaitOnIt}) <> 0
   RETURNING ${keptColumns}`,
  'array',
);
const keptRow = (r: unknown[]): AckedRow & { id: string; dependency_flags: number } => ({
  ...ackedRow(r),
  dependency_flags: r[6] as number,
});
const reportProgress = statement(
  `UPDATE jobs SET progress_percent = coalesce($3, progress_percent),
                   progress_json = coalesce($4, progress_json), progress_at_ms = $5
    WHERE id = $1 AND attempt = $2 AND lease_deadline_ms IS NOT NULL
   RETURNING progress_percent, progress_json`,
);
const extend = statement(
  'UPDATE jobs SET lease_deadline_ms = $3 WHERE id = $1 AND attempt = $2 AND lease_deadline_ms IS NOT NULL',
);
const retry = statement(
  `UPDATE jobs SET state = $2, run_at_ms = $3, lease_deadline_ms = NULL, last_error = $4, errors_json = $5,
                   last_error_class = $6,
                   progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
    WHERE seq = $1`,
);
const fail = statement(
  `UPDATE jobs SET state = 'dead', dead_reason = $2, failed_at_ms = $3, lease_deadline_ms = NULL,
                   last_error = $4, errors_json = $5, last_error_class = $6
    WHERE seq = $1`,
);
/**
 * Leases taken back, $1 ids, $2 attempts: each job leased at its attempt with no cancel asked is
 * ready again at its old place, the lease's fields cleared; `attemptSet` says what becomes of
 * its attempt. Rare (an answer refused, a worker closing): planned each time, with
 * `id = ANY($1)` so the ids' index finds the rows (as completeDependedOnMany).
 */
const undoneLeases = (attemptSet: string) =>
  plannedEachTime(
    `UPDATE jobs j SET state = 'ready', ${attemptSet}, leased_at_ms = NULL, lease_deadline_ms = NULL,
                       worker_id = NULL, timeout_at_ms = NULL
       FROM unnest($1::text[], $2::integer[]) AS a(id, attempt)
      WHERE j.id = ANY($1::text[]) AND j.id = a.id AND j.attempt = a.attempt AND j.lease_deadline_ms IS NOT NULL
        AND j.cancelled_at_ms IS NULL
     RETURNING j.id, j.queue, j.type, j.group_key`,
  );
/**
 * Leases that never reached their worker (Leases.undoLeases): on the attempt they had before,
 * a number that never left the server, so no one can settle with it.
 */
const undoLeases = undoneLeases('attempt = j.attempt - 1');
/**
 * Leases their workers gave back unstarted (Leases.giveBackLeases): the attempt stays (its worker
 * holds that number, so the next lease takes a new one) and the budget grows by one instead.
 */
const giveBackLeases = undoneLeases('attempt_base = j.attempt_base + 1');
/** Runs an undoneLeases statement over `keys` (ids distinct): the rows it changed. */
function* undone(c: Connection, s: Statement, keys: readonly AttemptKey[]): Op<UndoneLeaseRow[]> {
  if (keys.length === 0) return [];
  return yield* rows<UndoneLeaseRow>(c, s, [keys.map((k) => k.jobId), keys.map((k) => k.attempt)]);
}
const finishCancelled = statement(
  `UPDATE jobs SET state = 'cancelled', lease_deadline_ms = NULL,
                   last_error = coalesce($2, last_error), errors_json = coalesce($3, errors_json)
    WHERE seq = $1 AND state = 'leased'`,
);
const expiredSql = `SELECT ${attemptColumns} FROM jobs WHERE state = 'leased' AND lease_deadline_ms <= $1
    ORDER BY lease_deadline_ms LIMIT $2`;
const expired = statement(expiredSql);
/** In a write (maintenance on every server): each server takes different expired leases. */
const expiredLocked = statement(`${expiredSql} FOR UPDATE SKIP LOCKED`);
const nextDeadline = statement("SELECT min(lease_deadline_ms) AS v FROM jobs WHERE state = 'leased'");
const holders = statement(
  `SELECT worker_id, count(*) AS jobs, min(leased_at_ms) AS since_ms FROM jobs WHERE state = 'leased'
    GROUP BY worker_id ORDER BY worker_id`,
);

const leaseValues = (p: LeaseParams & { queue: string; limit: number }) => [
  p.queue,
  p.limit,
  p.nowMs,
  p.leaseDeadlineMs,
  p.maxLeaseDeadlineMs,
  p.workerId,
  p.timeoutMs,
];

/** Runs a lease statement and notes the flags of what it leased. */
function* lease(c: Connection, s: Statement, values: readonly unknown[]): Op<LeasedRow[]> {
  const leased = yield* withGenericPlan(c, arrayRows(c, s, values, leasedRow));
  noteLeased(c, leased);
  return leased;
}

export function leaseOps(c: Connection): Leases {
  void everyLeasedColumn;
  return {
    *leaseReady(p) {
      if (p.limit <= 0) return [];
      return yield* lease(c, leaseReady, leaseValues(p));
    },
    *leaseUngroupedAt(p) {
      if (p.limit <= 0) return [];
      return yield* lease(c, leaseUngroupedAt, [...leaseValues(p), p.priority]);
    },
    *leaseGroupAt(p) {
      if (p.limit <= 0) return [];
      return yield* lease(c, leaseGroupAt, [...leaseValues(p), p.priority, p.groupKey]);
    },
    *ack(key) {
      return yield* firstRow<AckedRow>(c, ack, [key.jobId, key.attempt]);
    },
    *ackMany(keys) {
      if (keys.length === 0) return [];
      return yield* arrayRows(c, ackMany, [keys.map((k) => k.jobId), keys.map((k) => k.attempt)], ackedRow);
    },
    *complete(p) {
      yield* changes(c, complete, [p.jobId, p.attempt, p.nowMs, p.result, p.resultContentType]);
    },
    *completeDependedOn(p) {
      const kept = yield* arrayRows(
        c,
        completeDependedOn,
        [p.jobId, p.attempt, p.nowMs, p.result, p.resultContentType],
        keptRow,
      );
      return kept[0];
    },
    *completeDependedOnMany(keys: readonly CompletingAck[], nowMs: number) {
      if (keys.length === 0) return [];
      return yield* arrayRows(
        c,
        completeDependedOnMany,
        [
          keys.map((k) => k.jobId),
          keys.map((k) => k.attempt),
          keys.map((k) => k.result),
          keys.map((k) => k.resultContentType),
          nowMs,
        ],
        keptRow,
      );
    },
    *reportProgress(p) {
      return yield* firstRow<{ progress_percent: number | null; progress_json: string | null }>(
        c,
        reportProgress,
        [p.jobId, p.attempt, p.percent, p.json, p.nowMs],
      );
    },
    *extend(p) {
      yield* changes(c, extend, [p.jobId, p.attempt, p.leaseDeadlineMs]);
    },
    *retry(p) {
      yield* changes(c, retry, [p.seq, p.state, p.runAtMs, p.lastError, p.errorsJson, p.lastErrorClass]);
    },
    *fail(p) {
      yield* changes(c, fail, [p.seq, p.deadReason, p.nowMs, p.lastError, p.errorsJson, p.lastErrorClass]);
    },
    *undoLeases(keys) {
      return yield* undone(c, undoLeases, keys);
    },
    *giveBackLeases(keys) {
      return yield* undone(c, giveBackLeases, keys);
    },
    *finishCancelled(p) {
      yield* changes(c, finishCancelled, [p.seq, p.lastError, p.errorsJson]);
    },
    *expired(p) {
      return yield* rows<AttemptRow>(c, writing(c) ? expiredLocked : expired, [p.nowMs, p.limit]);
    },
    *nextDeadlineMs() {
      return (yield* value<number | null>(c, nextDeadline, [])) ?? null;
    },
    *holders() {
      return yield* rows<{ worker_id: string | null; jobs: number; since_ms: number }>(c, holders, []);
    },
  };
}
