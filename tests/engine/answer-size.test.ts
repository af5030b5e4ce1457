/**
 * The size estimate of a leased job (src/engine/leases/answer-size.ts) is an upper bound of its
 * encoded size: the Work stream cuts its answers by it and a reserve with an answer budget leases
 * no more than the budget holds. A batch member carries its batch id and its lease's token, which
 * the estimate counts like the job's other strings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { leasedJobBytes } from '../../src/engine/leases/answer-size.ts';

/** A protocol job as the server sends it, small but for what `fields` sets. */
function member(fields: Partial<LeasedJob>): LeasedJob {
  return LeasedJob.fromPartial({
    jobId: '0193e4a2-7c1b-7d3e-9f00-123456789abc',
    queue: 'q',
    type: 't',
    contentType: 'application/json',
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: 1_800_000_000_000,
    enqueuedAtMs: 1_800_000_000_000,
    runAtMs: 1_800_000_000_000,
    ...fields,
  });
}

const estimate = (job: LeasedJob) => leasedJobBytes(job, job.jobId.length);

test("a member's batch id and lease token are counted: the estimate is never below the encoded size", () => {
  const token = 'x'.repeat(43);
  for (const batchId of ['', 'b', 'batch-'.repeat(200), '批'.repeat(300)]) {
    const job = member({ batchId, leaseToken: batchId === '' ? '' : token });
    const encodedBytes = LeasedJob.encode(job).finish().length;
    assert.ok(
      estimate(job) >= encodedBytes,
      `batch id of ${batchId.length}: ${estimate(job)} < ${encodedBytes}`,
    );
  }
  // Each counts at least its length: a token adds what it weighs, not a share of the allowance.
  const without = member({ batchId: 'b' });
  const withToken = member({ batchId: 'b', leaseToken: token });
  assert.ok(estimate(withToken) - estimate(without) >= token.length);
});
