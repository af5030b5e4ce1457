/**
 * Coalescing of enqueues, as ioredis pipelines commands: every enqueue made in
 * the same turn of the event loop is collected and sent as one batch (a
 * Produce message, or one EnqueueBatch call), at most `maxBatchJobs` jobs and
 * `maxMessageBytes` per batch. Fifty producers each awaiting one enqueue thus
 * cost the server one message and one group commit per round, not fifty.
 *
 * Each enqueue is an entry; a batch's answer is split back into the entries'
 * results in order. An atomic enqueue is always a batch of its own.
 *
 * Retries: only with `retry.unavailable`, only after UNAVAILABLE or an answer
 * marked `sepp-retry: later` (retriedByClient), and only for entries whose every
 * job has an idempotency key — a keyless job that may have been stored is never
 * sent twice. An enqueue refused `queue_full` (refusedForNow: one job, or an
 * atomic batch refused for that alone) stored nothing and is sent again the
 * same way, until the queue has room, the tries run out or its deadline nears.
 * With `retry.unavailable` on, a job given without a key gets one of the SDK's
 * (`sepp-retry:<uuid>`) before it is first sent, so that it too can be
 * retried: an UNAVAILABLE answer may come after the server stored the job (a
 * failover of its database mid-commit), and the repeat then answers the stored
 * job's id instead of storing it again. A job with a debounce key gets no key
 * (the server refuses both) and is retried too: a repeat is absorbed by the job
 * the first send stored while that job waits.
 */
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { backoffDelayMs } from './backoff.ts';
import type { BatchAnswer, BatchSender } from './batch-senders.ts';
import type { Connection } from './connection.ts';
import { approxEncodedBytes } from './convert.ts';
import { closedError, retriedByClient, SeppError } from './errors.ts';
import { type EnqueueJob, RejectionReason as ProtoRejectionReason } from './gen/sepp/v1/job.js';

/**
 * The entry was refused whole for a reason the server advises `later` for (rejectionsRetry): a
 * single-job entry (an enqueue, or a batch of one) refused `queue_full`, or an atomic one whose
 * every refusal is. Nothing of it was stored, so it may be sent again. A best-effort batch's
 * refused jobs stay outcomes of the batch.
 */
function refusedForNow(entry: Entry, answer: BatchAnswer, offset: number): boolean {
  if (entry.atomic) {
    const atomic = answer.atomic;
    if (atomic === undefined || atomic.committed || atomic.rejections.length === 0) return false;
    return atomic.rejections.every((r) => r.reason === ProtoRejectionReason.QUEUE_FULL);
  }
  if (entry.jobs.length !== 1 || answer.atomic !== undefined) return false;
  const outcome = answer.results[offset]?.outcome;
  return outcome?.$case === 'rejection' && outcome.value.reason === ProtoRejectionReason.QUEUE_FULL;
}

/** The prefix of the idempotency keys the SDK gives keyless jobs when it may retry them. */
export const sdkRetryKeyPrefix = 'sepp-retry:';
/** The bytes such a key adds to a job: the prefix, a UUID, and the field's tag and length. */
const sdkRetryKeyBytes = sdkRetryKeyPrefix.length + 36 + 2;

/** How an entry learns its outcome: an error, or the batch answer and where its jobs start in it. */
type Done = (error: SeppError | undefined, answer: BatchAnswer | undefined, offset: number) => void;

interface Entry {
  jobs: EnqueueJob[];
  bytes: number;
  atomic: boolean;
  /** Every job has an idempotency key, so sending it again cannot store anything twice. */
  keyed: boolean;
  retries: number;
  deadlineAtMs: number;
  done: Done;
}

export class EnqueueBatcher {
  private pending: Entry[] = [];
  private scheduled = false;
  private closing = false;
  private readonly flushBound = () => this.flush();
  private outstanding = 0;
  private idle: (() => void) | undefined;
  /** Jobs handed to the sender (for tuning and tests). */
  jobsSent = 0;
  /** Batches handed to the sender (for tuning and tests). */
  batchesSent = 0;

  constructor(
    private readonly conn: Connection,
    private readonly sender: BatchSender,
  ) {}

  /**
   * A best-effort batch cut into parts the server takes in one message each: at most `maxBatchJobs`
   * jobs and `maxMessageBytes` (by approxEncodedBytes, with the key `submit` gives a keyless job when
   * retries are on). A job larger than a message alone is a part of its own.
   */
  split(jobs: readonly EnqueueJob[]): EnqueueJob[][] {
    const { maxBatchJobs, maxMessageBytes, retry } = this.conn.options;
    const parts: EnqueueJob[][] = [];
    let part: EnqueueJob[] = [];
    let bytes = 0;
    for (const job of jobs) {
      const keyless = retry.unavailable && job.idempotencyKey === '' && job.debounceKey === '';
      const jobBytes = approxEncodedBytes(job) + (keyless ? sdkRetryKeyBytes : 0);
      if (part.length > 0 && (part.length >= maxBatchJobs || bytes + jobBytes > maxMessageBytes)) {
        parts.push(part);
        part = [];
        bytes = 0;
      }
      part.push(job);
      bytes += jobBytes;
    }
    if (part.length > 0) parts.push(part);
    return parts;
  }

  /** Queues jobs for the next flush; `done` is called once with their outcome. */
  submit(jobs: EnqueueJob[], atomic: boolean, deadlineMs: number | undefined, done: Done): void {
    if (this.closing || this.conn.closed) {
      done(closedError('enqueue'), undefined, 0);
      return;
    }
    // First: a deadline that is not a number of ms throws before anything counts this entry.
    const deadlineAtMs = this.conn.deadline(deadlineMs);
    let bytes = 0;
    let keyed = true;
    const retried = this.conn.options.retry.unavailable;
    for (const job of jobs) {
      // A debounced job takes no idempotency key (the server refuses both): sent again, it is
      // absorbed by the job that took the first send while that waits, which is what a
      // debounced update means; so it is retried as a keyed job is.
      const debounced = job.debounceKey !== '';
      if (job.idempotencyKey === '' && retried && !debounced) {
        job.idempotencyKey = `${sdkRetryKeyPrefix}${randomUUID()}`;
      }
      bytes += approxEncodedBytes(job);
      if (job.idempotencyKey === '' && !debounced) keyed = false;
    }
    this.outstanding++;
    this.push({
      jobs,
      bytes,
      atomic,
      keyed,
      retries: 0,
      deadlineAtMs,
      done: (error, answer, offset) => {
        this.outstanding--;
        done(error, answer, offset);
        if (this.outstanding === 0) this.idle?.();
      },
    });
  }

  private push(entry: Entry): void {
    this.pending.push(entry);
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.conn.options.flushOn === 'setImmediate') setImmediate(this.flushBound);
    else process.nextTick(this.flushBound);
  }

  private flush(): void {
    // The first batch waits for the server's bounds, once per client (Connection.learnServerBounds).
    const learning = this.conn.learnServerBounds();
    if (learning !== undefined) {
      void learning.then(this.flushBound);
      return;
    }
    this.scheduled = false;
    const entries = this.pending;
    this.pending = [];
    const { maxBatchJobs, maxMessageBytes } = this.conn.options;
    let batch: Entry[] = [];
    let jobs = 0;
    let bytes = 0;
    for (const entry of entries) {
      if (entry.atomic) {
        this.send([entry], true);
        continue;
      }
      if (
        batch.length > 0 &&
        (jobs + entry.jobs.length > maxBatchJobs || bytes + entry.bytes > maxMessageBytes)
      ) {
        this.send(batch, false);
        batch = [];
        jobs = 0;
        bytes = 0;
      }
      batch.push(entry);
      jobs += entry.jobs.length;
      bytes += entry.bytes;
    }
    if (batch.length > 0) this.send(batch, false);
  }

  private send(entries: Entry[], atomic: boolean): void {
    let jobs: EnqueueJob[];
    let bytes = 0;
    let deadlineAtMs = Number.POSITIVE_INFINITY;
    if (entries.length === 1) {
      const entry = entries[0]!;
      jobs = entry.jobs;
      bytes = entry.bytes;
      deadlineAtMs = entry.deadlineAtMs;
    } else {
      jobs = [];
      for (const entry of entries) {
        for (const job of entry.jobs) jobs.push(job);
        bytes += entry.bytes;
        if (entry.deadlineAtMs < deadlineAtMs) deadlineAtMs = entry.deadlineAtMs;
      }
    }
    this.jobsSent += jobs.length;
    this.batchesSent++;
    this.sender.send(jobs, atomic, bytes, deadlineAtMs).then(
      (answer) => this.distribute(entries, jobs.length, answer),
      (error: unknown) => this.fail(entries, error),
    );
  }

  private distribute(entries: Entry[], jobCount: number, answer: BatchAnswer): void {
    if (answer.atomic === undefined && answer.results.length !== jobCount) {
      this.fail(
        entries,
        new SeppError(
          status.INTERNAL,
          `the server answered ${answer.results.length} results for ${jobCount} jobs`,
        ),
      );
      return;
    }
    let offset = 0;
    for (const entry of entries) {
      if (!(refusedForNow(entry, answer, offset) && this.sendAgainLater(entry)))
        entry.done(undefined, answer, offset);
      offset += entry.jobs.length;
    }
  }

  private fail(entries: Entry[], thrown: unknown): void {
    const error =
      thrown instanceof SeppError
        ? thrown
        : new SeppError(status.INTERNAL, String(thrown), { cause: thrown });
    for (const entry of entries) {
      if (!(retriedByClient(error) && this.sendAgainLater(entry))) entry.done(error, undefined, 0);
    }
  }

  /**
   * Queues the entry again after a backoff when retries are on, it is safe to repeat (keyed), and
   * tries and its deadline are left; false (nothing done) otherwise.
   */
  private sendAgainLater(entry: Entry): boolean {
    const { retry } = this.conn.options;
    const delayMs = backoffDelayMs(entry.retries, retry.baseDelayMs, retry.maxDelayMs);
    if (
      !retry.unavailable ||
      !entry.keyed ||
      entry.retries + 1 >= retry.maxAttempts ||
      this.conn.closed ||
      Date.now() + delayMs >= entry.deadlineAtMs
    ) {
      return false;
    }
    entry.retries++;
    setTimeout(() => this.push(entry), delayMs);
    return true;
  }

  /** Sends what is queued, waits for every answer, then closes the sender. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.scheduled) this.flush();
    if (this.outstanding > 0) {
      await new Promise<void>((resolve) => {
        this.idle = resolve;
      });
    }
    await this.sender.close();
  }
}
