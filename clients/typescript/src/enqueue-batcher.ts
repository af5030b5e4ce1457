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
 * sent twice. Jobs refused `queue_full` stored nothing and are sent again, until
 * the queue has room, the tries run out or the deadline nears: an atomic entry
 * refused for that alone as it was; a best-effort entry's refused jobs (all of
 * them, or the few refused among stored ones, as a part of their own whose
 * outcomes replace theirs: settle).
 *
 * Bounds: a batch the server refuses as over a bound of the call (overCallBound:
 * `limits.max_batch_jobs` lowered by a reload, `grpc.max_message_bytes` by a
 * restart) stored nothing. Its entries are sent once more, whether retries are on
 * or not, after the server's bounds are asked again and only if they went down,
 * cut by them (recut); never a second time. An entry failed by a broken Produce
 * stream may have been stored, so it is sent again only if keyed.
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
import { laterRetryDelayMs } from './backoff.ts';
import { type BatchAnswer, type BatchSender, lostWithStream } from './batch-senders.ts';
import type { Connection } from './connection.ts';
import { approxEncodedBytes } from './convert.ts';
import { closedError, overCallBound, retriedByClient, SeppError } from './errors.ts';
import {
  type EnqueueJob,
  type EnqueueResult,
  RejectionReason as ProtoRejectionReason,
} from './gen/sepp/v1/job.js';

/**
 * An atomic entry refused for a reason the server advises `later` for (rejectionsRetry): every
 * refusal is `queue_full`. Nothing of it was stored, so it may be sent again.
 */
function atomicRefusedForNow(answer: BatchAnswer): boolean {
  const atomic = answer.atomic;
  if (atomic === undefined || atomic.committed || atomic.rejections.length === 0) return false;
  return atomic.rejections.every((r) => r.reason === ProtoRejectionReason.QUEUE_FULL);
}

/** Which of `count` results from `offset` on are refusals for `queue_full` (nothing stored; `later`). */
function refusedForNow(results: readonly EnqueueResult[], offset: number, count: number): number[] {
  const refused: number[] = [];
  for (let i = 0; i < count; i++) {
    const outcome = results[offset + i]?.outcome;
    if (outcome?.$case === 'rejection' && outcome.value.reason === ProtoRejectionReason.QUEUE_FULL)
      refused.push(i);
  }
  return refused;
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
  /** Sent again once after a refusal as over a bound of the call (recut): never twice. */
  recut: boolean;
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
      recut: false,
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
    // A best-effort batch is answered one result per job; an atomic one by its outcome
    // (submitAtomic fails an answer without one).
    const mismatched =
      answer.atomic === undefined ? answer.results.length !== jobCount : entries[0]?.atomic !== true;
    if (mismatched) {
      const what = answer.atomic === undefined ? `${answer.results.length} results` : 'an atomic outcome';
      this.fail(entries, new SeppError(status.INTERNAL, `the server answered ${what} for ${jobCount} jobs`));
      return;
    }
    let offset = 0;
    for (const entry of entries) {
      this.settle(entry, answer, offset);
      offset += entry.jobs.length;
    }
  }

  /**
   * An entry's answer, or its `queue_full` refusals sent again: the whole entry when nothing of it
   * was stored, else its refused jobs alone (sendInParts), whose outcomes then replace theirs.
   */
  private settle(entry: Entry, answer: BatchAnswer, offset: number): void {
    if (entry.atomic || answer.atomic !== undefined) {
      if (!(entry.atomic && atomicRefusedForNow(answer) && this.sendAgainLater(entry)))
        entry.done(undefined, answer, offset);
      return;
    }
    const refused = refusedForNow(answer.results, offset, entry.jobs.length);
    if (refused.length === entry.jobs.length && this.sendAgainLater(entry)) return;
    const delayMs = refused.length === 0 || !entry.keyed ? undefined : this.laterDelayMs(entry);
    if (delayMs === undefined) {
      entry.done(undefined, answer, offset);
      return;
    }
    const results = answer.results.slice(offset, offset + entry.jobs.length);
    this.sendInParts(entry, [refused], results, entry.retries + 1, delayMs);
  }

  /**
   * Sends `parts` of a best-effort entry (each a list of its jobs' indexes) as entries of their
   * own after `delayMs`; their outcomes fill `results` (the entry's, one per job) and the entry is
   * done once every part is: with `results`, or with the first error a part failed with. A job
   * left without a result fails the entry as a short answer does (distribute).
   */
  private sendInParts(
    entry: Entry,
    parts: readonly number[][],
    results: (EnqueueResult | undefined)[],
    retries: number,
    delayMs: number,
  ): void {
    let waiting = parts.length;
    let failed: SeppError | undefined;
    for (const slots of parts) {
      const jobs = slots.map((slot) => entry.jobs[slot]!);
      const part: Entry = {
        jobs,
        bytes: jobs.reduce((sum, job) => sum + approxEncodedBytes(job), 0),
        atomic: false,
        keyed: entry.keyed,
        retries,
        recut: entry.recut,
        deadlineAtMs: entry.deadlineAtMs,
        done: (error, answer, offset) => {
          if (error !== undefined) failed ??= error;
          else {
            const answered = answer?.atomic === undefined ? answer?.results : undefined;
            slots.forEach((slot, i) => {
              results[slot] = answered?.[offset + i];
            });
          }
          if (--waiting > 0) return;
          const complete = results.filter((result) => result !== undefined);
          if (failed === undefined && complete.length !== entry.jobs.length) {
            failed = new SeppError(
              status.INTERNAL,
              `the server answered ${complete.length} results for ${entry.jobs.length} jobs`,
            );
          }
          if (failed !== undefined) entry.done(failed, undefined, 0);
          else entry.done(undefined, { results: complete }, 0);
        },
      };
      if (delayMs > 0) setTimeout(() => this.push(part), delayMs);
      else this.push(part);
    }
  }

  private fail(entries: Entry[], thrown: unknown): void {
    const error =
      thrown instanceof SeppError
        ? thrown
        : new SeppError(status.INTERNAL, String(thrown), { cause: thrown });
    // Refused as over a bound of the call, the server stored nothing; a broken stream may have.
    const recut = overCallBound(error)
      ? entries.filter((entry) => !entry.recut && (entry.keyed || !lostWithStream(error)))
      : [];
    if (recut.length > 0) this.recut(recut, error);
    for (const entry of entries) {
      if (recut.includes(entry)) continue;
      if (!(retriedByClient(error) && this.sendAgainLater(entry))) entry.done(error, undefined, 0);
    }
  }

  /**
   * Entries refused as over a bound of the call: once the server's bounds are asked again, and only
   * if they went down, each is sent once more, cut by them (an atomic one whole, if it now fits);
   * else they fail with `error`.
   */
  private recut(entries: Entry[], error: SeppError): void {
    void this.conn.relearnServerBounds().then((lowered) => {
      for (const entry of entries) {
        entry.recut = true;
        const fits = entry.jobs.length <= this.conn.options.maxBatchJobs;
        if (!lowered || this.conn.closed || (entry.atomic && !fits)) {
          entry.done(error, undefined, 0);
        } else if (entry.atomic || (fits && entry.bytes <= this.conn.options.maxMessageBytes)) {
          this.push(entry);
        } else {
          const parts: number[][] = [];
          let next = 0;
          for (const part of this.split(entry.jobs)) {
            parts.push(part.map((_, i) => next + i));
            next += part.length;
          }
          this.sendInParts(entry, parts, [], entry.retries, 0);
        }
      }
    });
  }

  /** How long until the entry may be sent again after a `later` answer; undefined when it may not. */
  private laterDelayMs(entry: Entry): number | undefined {
    if (!entry.keyed || this.conn.closed) return undefined;
    return laterRetryDelayMs(this.conn.options.retry, entry.retries, entry.deadlineAtMs);
  }

  /**
   * Queues the entry again after a backoff when retries are on, it is safe to repeat (keyed), and
   * tries and its deadline are left; false (nothing done) otherwise.
   */
  private sendAgainLater(entry: Entry): boolean {
    const delayMs = this.laterDelayMs(entry);
    if (delayMs === undefined) return false;
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
