/**
 * CreateBatch and AddToBatch under refusals, with the client's retries on (`retry.unavailable`),
 * by the policy enqueue follows (enqueue-batcher.ts); with them off, each is one call.
 *
 * - A member refused `queue_full` stored nothing (each member is enqueued on its own merits): it
 *   is added to the batch again after a backoff, with the members refused with it, until the
 *   queues have room, the tries run out or the deadline nears; the outcome of its last try
 *   replaces its refusal.
 * - A keyless member gets one of the SDK's idempotency keys (`sepp-retry:<uuid>`) before it is
 *   first sent, as an enqueued job does (a debounced one takes none). An AddToBatch whose members
 *   are all keyed (or debounced) is then safe to repeat after UNAVAILABLE: a member the lost
 *   send stored is found by its key and answered as that job, and a duplicate never joins the
 *   batch twice (batches.ts on the server).
 * - A CreateBatch is never repeated after UNAVAILABLE: it may have created the batch, and a
 *   repeat would create a second one. A call the server refused with an answer marked `later`
 *   stored nothing: it is sent again as it was.
 * - `seal` waits for the members refused for now, since a sealed batch takes members only from
 *   its own running members. The first call (CreateBatch or AddToBatch) asks the server to seal
 *   only if every member was stored (`seal_if_all_stored`): with nothing refused that one call
 *   is all. Otherwise the batch is left open, the refused members are added again, and
 *   SealBatch seals it once they are in or given up. A server older than the field ignores it
 *   and answers the batch open: it is sealed by SealBatch too. An AddToBatch with the field
 *   repeated after UNAVAILABLE whose first send sealed the batch is answered as that send
 *   (the server finds every member by its key in the batch).
 * - A SealBatch that fails leaves the batch open: its error is a BatchLeftOpenError, which
 *   carries the batch's id.
 */
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { laterRetryDelayMs, sleep } from './backoff.ts';
import type { Connection } from './connection.ts';
import { sdkRetryKeyPrefix } from './enqueue-batcher.ts';
import { BatchLeftOpenError, toSeppError } from './errors.ts';
import { BatchState, type Batch as ProtoBatch } from './gen/sepp/v1/batch.js';
import { type EnqueueJob, type EnqueueResult, RejectionReason } from './gen/sepp/v1/job.js';

/** A CreateBatch's or AddToBatch's answer. */
export interface BatchAnswer {
  batch?: ProtoBatch | undefined;
  results: EnqueueResult[];
}

/** How to send a batch's members: the first call, and an add of members to the batch it made. */
export interface BatchCalls {
  /**
   * The call as asked, with `seal` as given; `sealIfAllStored`: seal only if no member is
   * refused; `repeatable`: safe to repeat after UNAVAILABLE.
   */
  first(
    jobs: EnqueueJob[],
    seal: boolean,
    repeatable: boolean,
    sealIfAllStored: boolean,
  ): Promise<BatchAnswer>;
  /** Adds members to the batch `batchId` again (unsealed); safe to repeat after UNAVAILABLE. */
  again(batchId: string, jobs: EnqueueJob[]): Promise<BatchAnswer>;
}

/** The members of `results` refused `queue_full`, by index. */
function refusedForNow(results: readonly EnqueueResult[]): number[] {
  const refused: number[] = [];
  results.forEach((result, index) => {
    const outcome = result.outcome;
    if (outcome?.$case === 'rejection' && outcome.value.reason === RejectionReason.QUEUE_FULL)
      refused.push(index);
  });
  return refused;
}

/**
 * Sends a batch's members (see the top): `create` says whether the first call creates the batch
 * (never repeated after UNAVAILABLE).
 */
export async function sendBatchMembers(
  conn: Connection,
  calls: BatchCalls,
  jobs: EnqueueJob[],
  options: {
    seal: boolean;
    create: boolean;
    deadlineMs?: number | undefined;
    signal?: AbortSignal | undefined;
  },
): Promise<BatchAnswer> {
  const { retry } = conn.options;
  if (!retry.unavailable) return calls.first(jobs, options.seal, false, false);
  const deadlineAtMs = conn.deadline(options.deadlineMs);
  // Every member keyed (or debounced) from here on: an add of them is safe to repeat.
  for (const job of jobs) {
    if (job.idempotencyKey === '' && job.debounceKey === '')
      job.idempotencyKey = `${sdkRetryKeyPrefix}${randomUUID()}`;
  }
  let retries = 0;
  let answer: BatchAnswer;
  for (;;) {
    try {
      answer = await calls.first(jobs, false, !options.create, options.seal);
      break;
    } catch (error) {
      // Answered `later` by the server (not a lost answer): nothing was stored.
      const e = toSeppError(error);
      const delayMs =
        e.retry === 'later' && e.grpcCode !== status.UNAVAILABLE && !conn.closed
          ? laterRetryDelayMs(retry, retries++, deadlineAtMs)
          : undefined;
      if (delayMs === undefined || options.signal?.aborted) throw error;
      await sleep(delayMs, options.signal);
    }
  }
  const results = [...answer.results];
  let batch = answer.batch;
  const batchId = batch?.id ?? '';
  for (
    let refused = refusedForNow(results);
    refused.length > 0 && batchId !== '';
    refused = refusedForNow(results)
  ) {
    const delayMs = conn.closed ? undefined : laterRetryDelayMs(retry, retries++, deadlineAtMs);
    if (delayMs === undefined || options.signal?.aborted) break;
    await sleep(delayMs, options.signal);
    if (options.signal?.aborted) break;
    const added = await calls.again(
      batchId,
      refused.map((index) => jobs[index]!),
    );
    refused.forEach((index, i) => {
      const result = added.results[i];
      if (result !== undefined) results[index] = result;
    });
    batch = added.batch ?? batch;
  }
  // Open: members were refused, or the server predates seal_if_all_stored.
  if (options.seal && batch?.state === BatchState.OPEN) {
    const sealed = await conn
      .invoke(
        conn.rpc.sealBatch,
        { batchId },
        {
          deadlineMs: options.deadlineMs,
          signal: options.signal,
          retrySafe: true,
        },
      )
      .catch((error: unknown) => {
        throw new BatchLeftOpenError(batchId, toSeppError(error));
      });
    batch = sealed.batch ?? batch;
  }
  return { batch, results };
}
