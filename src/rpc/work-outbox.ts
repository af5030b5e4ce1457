/**
 * What a Work stream sends: leased jobs and settlement answers.
 *
 * A worker that subscribed with `batch_responses` gets everything that became
 * ready in one turn of the event loop (a group commit answers many
 * settlements and leases at once) as one `batch` message, split only to stay
 * well under the message size limit. Others get one message per job and per
 * answer, as the protocol's first form had it.
 *
 * Answers go through the stream's ReadGate (a client that stops reading stops
 * being read); jobs are bounded by the credit the client granted and by the
 * room for answers not yet sent (unsent-answers.ts): each message that carries
 * jobs tells the sink their bytes, which the stream holds until HTTP/2 sent it.
 */
import type { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type {
  WorkResponse,
  WorkResponse_CancelNotice,
  WorkResponse_Settled,
  WorkResponse_TimeoutNotice,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { jobOverheadBytes, leasedJobBytes } from '../engine/leases/index.ts';

/** The leased jobs one message carries, and their bytes as the stream took room for them. */
export interface SentJobs {
  readonly jobs: readonly LeasedJob[];
  readonly bytes: number;
}

/** The parts of the stream the outbox writes to. */
export interface OutboxSink {
  /** Writes jobs (bounded by credit and room, so written whatever the client's reading). */
  writeJob(message: WorkResponse, sent: SentJobs): void;
  /** Writes answers (and the jobs of a message that has both), pausing reading while the client does not take them. */
  writeAnswer(message: WorkResponse, sent: SentJobs | undefined): void;
}

/** Most bytes (estimated) of one batch message, and at most this share of the message size limit. */
const batchBudgetBytes = 1024 * 1024;
const batchShareOfLimit = 0.5;
/** No timeout notices: shared, so a batch without any allocates nothing for them. */
const noTimeouts: WorkResponse_TimeoutNotice[] = [];

export class WorkOutbox {
  private settled: WorkResponse_Settled[] = [];
  private jobs: LeasedJob[] = [];
  private cancels: WorkResponse_CancelNotice[] = [];
  private timeouts = noTimeouts;
  private bytes = 0;
  /** The bytes of `jobs` alone, as the stream took room for them. */
  private jobBytes = 0;
  private scheduled = false;
  private readonly budgetBytes: number;
  private readonly flushBound = () => this.flush();

  constructor(
    private readonly sink: OutboxSink,
    private readonly batching: boolean,
    maxMessageBytes: number,
  ) {
    this.budgetBytes = Math.min(batchBudgetBytes, Math.floor(maxMessageBytes * batchShareOfLimit));
  }

  /** A leased job, of `bytes` (answer-size.ts's estimate: the room the stream took for it). */
  job(job: LeasedJob, bytes = leasedJobBytes(job, job.jobId.length)): void {
    if (!this.batching) {
      this.sink.writeJob({ kind: { $case: 'job', value: job } }, { jobs: [job], bytes });
      return;
    }
    if (this.bytes + bytes > this.budgetBytes) this.flush();
    this.jobs.push(job);
    this.bytes += bytes;
    this.jobBytes += bytes;
    this.schedule();
  }

  answer(settled: WorkResponse_Settled): void {
    if (!this.batching) {
      this.sink.writeAnswer({ kind: { $case: 'settled', value: settled } }, undefined);
      return;
    }
    const bytes = jobOverheadBytes + 3 * settled.message.length;
    if (this.bytes + bytes > this.budgetBytes) this.flush();
    this.settled.push(settled);
    this.bytes += bytes;
    this.schedule();
  }

  /** A job to stop: answers-like (through the gate), as many as the cancels an operator makes. */
  cancel(notice: WorkResponse_CancelNotice): void {
    if (!this.batching) {
      this.sink.writeAnswer({ kind: { $case: 'cancel', value: notice } }, undefined);
      return;
    }
    const bytes = jobOverheadBytes + 3 * (notice.jobId.length + notice.cancelledBy.length);
    if (this.bytes + bytes > this.budgetBytes) this.flush();
    this.cancels.push(notice);
    this.bytes += bytes;
    this.schedule();
  }

  /** An attempt that timed out: sent as a cancel notice is (through the gate). */
  timeout(notice: WorkResponse_TimeoutNotice): void {
    if (!this.batching) {
      this.sink.writeAnswer({ kind: { $case: 'timeout', value: notice } }, undefined);
      return;
    }
    const bytes = jobOverheadBytes + 3 * notice.jobId.length;
    if (this.bytes + bytes > this.budgetBytes) this.flush();
    if (this.timeouts === noTimeouts) this.timeouts = [];
    this.timeouts.push(notice);
    this.bytes += bytes;
    this.schedule();
  }

  /** Writes what is held now (before the stream ends). */
  flush(): void {
    this.scheduled = false;
    const { settled, jobs, cancels, timeouts } = this;
    if (settled.length === 0 && jobs.length === 0 && cancels.length === 0 && timeouts.length === 0) return;
    const message: WorkResponse = {
      kind: { $case: 'batch', value: { settled, jobs, cancels, timeouts } },
    };
    const withAnswers = settled.length > 0 || cancels.length > 0 || timeouts.length > 0;
    const sent: SentJobs | undefined = jobs.length > 0 ? { jobs, bytes: this.jobBytes } : undefined;
    this.discard();
    if (withAnswers || sent === undefined) this.sink.writeAnswer(message, sent);
    else this.sink.writeJob(message, sent);
  }

  /** Drops what is held and returns the jobs dropped (their leases to undo): the stream is gone. */
  discard(): LeasedJob[] {
    const { jobs } = this;
    this.settled = [];
    this.jobs = [];
    this.cancels = [];
    this.timeouts = noTimeouts;
    this.bytes = 0;
    this.jobBytes = 0;
    return jobs;
  }

  /** After the promises resolved in this turn (one commit answers many) have run. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    process.nextTick(this.flushBound);
  }
}
