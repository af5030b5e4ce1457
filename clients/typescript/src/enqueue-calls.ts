/**
 * Enqueues through the batcher (enqueue-batcher.ts), turned into the SDK's
 * answers: one job, a best-effort batch split by the server's
 * `max_batch_jobs` and message size, or an all-or-nothing batch.
 */
import { status } from '@grpc/grpc-js';
import { rejectionName } from './convert.ts';
import type { EnqueueBatcher } from './enqueue-batcher.ts';
import { JobRejectedError, type JobRejection, SeppError, statusOfRejection } from './errors.ts';
import type { EnqueueAccepted, EnqueueJob, EnqueueResult } from './gen/sepp/v1/job.js';
import type { Enqueued, EnqueueOutcome } from './types.ts';

function rejectionOf(result: EnqueueResult | undefined, index: number): JobRejection | undefined {
  const outcome = result?.outcome;
  if (outcome?.$case !== 'rejection') return undefined;
  return { index, reason: rejectionName(outcome.value.reason), message: outcome.value.message };
}

function enqueuedOf(accepted: EnqueueAccepted): Enqueued {
  return { id: accepted.jobId, deduplicated: accepted.deduplicated, debounced: accepted.debounced };
}

export function outcomeOf(result: EnqueueResult | undefined): EnqueueOutcome {
  const outcome = result?.outcome;
  if (outcome?.$case === 'accepted') {
    return { ok: true, ...enqueuedOf(outcome.value) };
  }
  if (outcome?.$case === 'rejection') {
    return { ok: false, reason: rejectionName(outcome.value.reason), message: outcome.value.message };
  }
  return { ok: false, reason: 'invalid_job', message: 'the server sent no result for this job' };
}

/** One job; JobRejectedError when refused. */
export function submitOne(
  batcher: EnqueueBatcher,
  job: EnqueueJob,
  deadlineMs: number | undefined,
): Promise<Enqueued> {
  return new Promise<Enqueued>((resolve, reject) => {
    batcher.submit([job], false, deadlineMs, (error, answer, offset) => {
      if (error !== undefined) {
        reject(error);
        return;
      }
      const result = answer?.atomic === undefined ? answer?.results[offset] : undefined;
      const outcome = result?.outcome;
      if (outcome?.$case === 'accepted') {
        resolve(enqueuedOf(outcome.value));
        return;
      }
      const rejection = rejectionOf(result, 0) ?? {
        index: 0,
        reason: 'invalid_job',
        message: 'the server sent no result for this job',
      };
      reject(new JobRejectedError(statusOfRejection[rejection.reason], [rejection]));
    });
  });
}

/** Jobs best effort, in messages the server takes (EnqueueBatcher.split): one outcome per job, in order. */
export async function submitBatch(
  batcher: EnqueueBatcher,
  protoJobs: EnqueueJob[],
  deadlineMs: number | undefined,
): Promise<EnqueueOutcome[]> {
  const chunks = batcher.split(protoJobs).map(
    (chunk) =>
      new Promise<EnqueueOutcome[]>((resolve, reject) => {
        batcher.submit(chunk, false, deadlineMs, (error, answer, offset) => {
          if (error !== undefined) reject(error);
          else if (answer === undefined || answer.atomic !== undefined) reject(new Error('unreachable'));
          else resolve(chunk.map((_, i) => outcomeOf(answer.results[offset + i])));
        });
      }),
  );
  return (await Promise.all(chunks)).flat();
}

/** Jobs all or nothing: their ids, or JobRejectedError listing every refused job. */
export function submitAtomic(
  batcher: EnqueueBatcher,
  protoJobs: EnqueueJob[],
  deadlineMs: number | undefined,
): Promise<Enqueued[]> {
  return new Promise((resolve, reject) => {
    batcher.submit(protoJobs, true, deadlineMs, (error, answer) => {
      if (error !== undefined) {
        reject(error);
        return;
      }
      const atomic = answer?.atomic;
      if (atomic === undefined) {
        reject(new SeppError(status.INTERNAL, 'the server sent no atomic outcome'));
        return;
      }
      if (atomic.committed) {
        resolve(atomic.results.map((r) => enqueuedOf(r)));
        return;
      }
      const rejections = atomic.rejections.map((r) => ({
        index: r.index,
        reason: rejectionName(r.reason),
        message: r.message,
      }));
      const first = rejections[0];
      if (first === undefined) {
        reject(new SeppError(status.INTERNAL, 'the server refused the batch without saying why'));
        return;
      }
      reject(new JobRejectedError(statusOfRejection[first.reason], rejections));
    });
  });
}
