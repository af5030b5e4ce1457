/**
 * A batch's completion jobs (issue 33): `on_complete`, `on_success` and `on_death`, checked
 * and stored as the batch is created, and enqueued in the unit that ends the batch (or counts
 * its first death), each once. The payload each gets is `{"batch": {...}, "data": ...}`; a
 * job the queue refuses at that moment is named in the batch's `completion_error`.
 */
import type { BatchMemberRow, BatchRow, Dependencies } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { isRejection, validateJob } from '../jobs/index.ts';
import type { EnqueueRequest, EnqueueResult } from '../types.ts';
import type { BatchCompletionJob } from '../workflow-types.ts';

/** Member ids a completion job's payload lists; above it, `membersOmitted` (page them with GetBatch). */
export const completionMemberIds = 1_000;

/**
 * A completion job as stored (batches.on_complete_json): the request and its JSON payload as
 * the caller's text (`dataJson`, checked to be JSON), written into the job's payload as it is:
 * parsing it and writing it out again would change it (an integer above 2^53 loses digits) or
 * fail (JSON.stringify recurses: a payload nested 100,000 deep overflows the stack). Batches
 * stored before kept the parsed value (`data`); they still end with it.
 */
export interface StoredCompletion extends Omit<BatchCompletionJob, 'payload' | 'contentType'> {
  dataJson?: string | null;
  data?: unknown;
}

/** Enqueues inside a running unit, each job on its own merits (the Enqueuer's enqueueWithin). */
export type EnqueueWithin = (
  tx: StoreTx,
  requests: readonly EnqueueRequest[],
  audit?: AuditInput,
) => Op<EnqueueResult[]>;

const refusedFields = [
  'dependsOn',
  'onDependencyFailure',
  'idempotencyKey',
  'uniqueWhileActive',
  'runAtMs',
  'expiresAtMs',
] as const;

/** What to give instead, where there is something. */
const refusedHints: Readonly<Record<(typeof refusedFields)[number], string>> = {
  dependsOn: ' (it runs when the batch ends)',
  onDependencyFailure: ' (it runs when the batch ends)',
  idempotencyKey: ' (the batch enqueues it exactly once)',
  uniqueWhileActive: ' (the batch enqueues it exactly once)',
  runAtMs: ' (an absolute time; delayMs counts from the end of the batch)',
  expiresAtMs: ' (an absolute time; ttlMs counts from the end of the batch)',
};

/** A completion job as it will be stored (its JSON), null for none, or a SeppError naming the field. */
export function storedCompletion(
  ctx: EngineContext,
  field: string,
  job: BatchCompletionJob | undefined,
): string | null {
  if (job === undefined) return null;
  for (const name of refusedFields) {
    if ((job as Record<string, unknown>)[name] !== undefined) {
      throw new SeppError(
        'invalid_argument',
        `${field}: a completion job takes no ${name}${refusedHints[name]}`,
      );
    }
  }
  let dataJson: string | null = null;
  if (job.payload.byteLength > 0) {
    try {
      dataJson = new TextDecoder('utf-8', { fatal: true }).decode(job.payload);
      // Only a check: JSON.parse does not recurse, whatever the nesting.
      JSON.parse(dataJson);
    } catch {
      throw new SeppError(
        'invalid_argument',
        `${field}: the payload must be JSON (the job gets {"batch": ..., "data": <payload>})`,
      );
    }
  }
  const checked = validateJob(job, ctx.clock.nowMs(), ctx.queues, ctx.limits);
  if (isRejection(checked)) throw new SeppError('invalid_argument', `${field}: ${checked.message}`);
  const { payload: _payload, contentType: _contentType, ...rest } = job;
  const stored: StoredCompletion = { ...rest, dataJson };
  return JSON.stringify(stored);
}

export class BatchCompletions {
  constructor(private readonly enqueueWithin: EnqueueWithin) {}

  /**
   * The batch's first member died (`jobId`, counted in `tx`): enqueues its on_death job, if
   * it has one, with that member's id and last error (null when it has none: an operator
   * dead-lettered it, or expiry deleted it). Returns the row as it now is.
   */
  *onFirstDeath(tx: StoreTx, store: Dependencies, row: BatchRow, jobId: string): Op<BatchRow> {
    if (row.on_death_json === null) return row;
    const error = (yield* tx.jobs.get(jobId))?.last_error ?? null;
    const members = yield* store.batchMembers({
      batchId: row.id,
      afterPosition: -1,
      limit: completionMemberIds,
    });
    const request = completionRequest(row, row.on_death_json, 'death', members, { jobId, error });
    const [result] = yield* this.enqueueWithin(tx, [request]);
    const deathJobId = result?.ok === true ? result.jobId : null;
    const refused = result?.ok === true ? null : `on_death: ${result?.message ?? 'not enqueued'}`;
    yield* store.setDeath({ batchId: row.id, deathJobId, error: refused });
    return { ...row, death_job_id: deathJobId, completion_error: refused };
  }

  /**
   * The batch ended (`row`, moved to `ended` in `tx`): enqueues its on_complete job, and its
   * on_success job when every member completed. Returns the row as it now is.
   */
  *onEnd(tx: StoreTx, store: Dependencies, row: BatchRow): Op<BatchRow> {
    const succeeded = row.dead === 0 && row.cancelled === 0;
    const members =
      row.on_complete_json === null && (row.on_success_json === null || !succeeded)
        ? []
        : yield* store.batchMembers({ batchId: row.id, afterPosition: -1, limit: completionMemberIds });
    // An on_death job refused earlier is told first.
    const errors: string[] = row.completion_error === null ? [] : [row.completion_error];
    const enqueue = function* (this: BatchCompletions, json: string | null, outcome: 'complete' | 'success') {
      if (json === null) return null;
      const [result] = yield* this.enqueueWithin(tx, [completionRequest(row, json, outcome, members)]);
      if (result?.ok) return result.jobId;
      errors.push(`on_${outcome}: ${result?.message ?? 'not enqueued'}`);
      return null;
    }.bind(this);
    const completeJobId = yield* enqueue(row.on_complete_json, 'complete');
    const successJobId = succeeded ? yield* enqueue(row.on_success_json, 'success') : null;
    const error = errors.length === 0 ? null : errors.join('; ');
    yield* store.setCompletion({ batchId: row.id, completeJobId, successJobId, error });
    return { ...row, complete_job_id: completeJobId, success_job_id: successJobId, completion_error: error };
  }
}

/**
 * A completion job's request: its payload is `{"batch": {...}, "data": ...}`; an on_death
 * job's batch also tells how many are still pending and which member died first.
 */
function completionRequest(
  row: BatchRow,
  json: string,
  outcome: 'complete' | 'success' | 'death',
  members: readonly BatchMemberRow[],
  firstDead?: { jobId: string; error: string | null },
): EnqueueRequest {
  const { data, dataJson, ...request } = JSON.parse(json) as StoredCompletion;
  const batch = {
    id: row.id,
    outcome,
    completed: row.completed,
    dead: row.dead,
    cancelled: row.cancelled,
    members: members.map((m) => m.job_id),
    membersOmitted: row.members > members.length,
    ...(firstDead === undefined ? {} : { pending: row.pending, firstDead }),
  };
  return {
    ...request,
    payload: new TextEncoder().encode(
      `{"batch":${JSON.stringify(batch)},"data":${dataJson ?? JSON.stringify(data ?? null)}}`,
    ),
    contentType: 'application/json',
  };
}
