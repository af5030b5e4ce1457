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
 * Retries: only with `retry.unavailable`, only after UNAVAILABLE, and only for
 * entries whose every job has an idempotency key — a keyless job that may
 * have been stored is never sent twice. With `retry.unavailable` on, a job
 * given without a key gets one of the SDK's (`sepp-retry:<uuid>`) before it is
 * first sent, so that it too can be retried: an UNAVAILABLE answer may come
 * after the server stored the job (a failover of its database mid-commit), and
 * the repeat then answers the stored job's id instead of storing it again. A job
 * with a debounce key gets no key (the server refuses both) and is retried too: a
 * repeat is absorbed by the job the first send stored while that job waits.
 */
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { backoffDelayMs } from './backoff.ts';
import type { BatchAnswer, BatchSender } from './batch-senders.ts';
import type { Connection } from './connection.ts';
import { approxEncodedBytes } from './convert.ts';
import { closedError, SeppError } from './errors.ts';
import type { EnqueueJob } from './gen/sepp/v1/job.js';

/** The prefix of the idempotency keys the SDK gives keyless jobs when it may retry them. */
export const sdkRetryKeyPrefix = 'sepp-retry:';

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
      entry.done(undefined, answer, offset);
      offset += entry.jobs.length;
    }
  }

  private fail(entries: Entry[], thrown: unknown): void {
    const error =
      thrown instanceof SeppError
        ? thrown
        : new SeppError(status.INTERNAL, String(thrown), { cause: thrown });
    const { retry } = this.conn.options;
    for (const entry of entries) {
      const delayMs = backoffDelayMs(entry.retries, retry.baseDelayMs, retry.maxDelayMs);
      const retryable =
        error.retryable &&
        retry.unavailable &&
        entry.keyed &&
        entry.retries + 1 < retry.maxAttempts &&
        !this.conn.closed &&
        Date.now() + delayMs < entry.deadlineAtMs;
      if (!retryable) {
        entry.done(error, undefined, 0);
        continue;
      }
      entry.retries++;
      setTimeout(() => this.push(entry), delayMs);
    }
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
