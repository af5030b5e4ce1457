/**
 * Flows (issue 33): a graph of jobs enqueued in one call, all or none, whose jobs
 * name each other locally (`after`). Build one with `new Flow().add(name, job)`, or
 * give the jobs as a list; `client.enqueueFlow` answers each job's id by its name.
 *
 *   const flow = new Flow()
 *     .add('extract', { queue: 'etl', type: 'extract', json: { day } })
 *     .add('load', { queue: 'etl', type: 'load', after: ['extract'] });
 *   const { load } = await client.enqueueFlow(flow);
 */
import { status } from '@grpc/grpc-js';
import { laterRetryDelayMs, sleep } from './backoff.ts';
import type { BatchSender } from './batch-senders.ts';
import type { Connection } from './connection.ts';
import { approxEncodedBytes, flowJobFromSpec, rejectionName, utf8Bytes } from './convert.ts';
import { JobRejectedError, overCallBound, rejectionsRetry, SeppError, statusOfRejection } from './errors.ts';
import type { CallOptions, Enqueued, JobSpec } from './job-types.ts';

/** One job of a flow: a job, and the names of the flow's jobs it runs after. */
export interface FlowJobSpec extends JobSpec {
  /** Names of jobs of the same flow this job waits for (with `dependsOn`, ids of stored jobs). */
  after?: readonly string[];
}

/** A flow's jobs by name, in the order added. */
export class Flow {
  readonly jobs: (FlowJobSpec & { name: string })[] = [];

  /** Adds a job named `name` (unique in the flow; same rules as a queue name). */
  add(name: string, job: FlowJobSpec): this {
    this.jobs.push({ ...job, name });
    return this;
  }
}

/**
 * A flow refused as over a bound of the call (`limits.max_flow_jobs`, `grpc.max_message_bytes`,
 * which a reload or a restart may have lowered): unlike a batch, the SDK cannot cut it and send it
 * again, so the error says so, with the flow's size, before the server's words (which name the
 * limit).
 */
function overFlowBound(error: unknown, jobs: number, bytes: number): unknown {
  if (error instanceof SeppError && overCallBound(error)) {
    error.message =
      `the flow (${jobs} jobs, about ${bytes} bytes) is one all-or-nothing request, which the SDK ` +
      `cannot cut: split it into smaller flows. ${error.message}`;
  }
  return error;
}

/**
 * EnqueueFlow: each job's id by its name, or JobRejectedError listing every refused job by index.
 * A flow refused for full queues alone (`queue_full`, which stored nothing) is sent again after a
 * backoff while the client's retries are on, until the queues have room, the tries run out or
 * its deadline nears.
 * `sender` carries it as it carries the client's batches: a message of its own on the Produce
 * stream, or the unary call (the `unary` transport, a flow too large for one message).
 */
export async function enqueueFlowCall(
  conn: Connection,
  sender: BatchSender,
  flow: Flow | readonly (FlowJobSpec & { name: string })[],
  options: CallOptions,
): Promise<Record<string, Enqueued>> {
  const jobs = flow instanceof Flow ? flow.jobs : flow;
  let bytes = 0;
  const request = {
    jobs: jobs.map((spec) => {
      const after = [...(spec.after ?? [])];
      const job = flowJobFromSpec(spec, after);
      bytes += approxEncodedBytes(job) + utf8Bytes(spec.name) + 8;
      for (const name of after) bytes += utf8Bytes(name) + 4;
      return { name: spec.name, job, after };
    }),
  };
  const deadlineAtMs = conn.deadline(options.deadlineMs);
  for (let retries = 0; ; retries++) {
    const answer = await sender.sendFlow(request, bytes, deadlineAtMs).catch((error: unknown) => {
      throw overFlowBound(error, jobs.length, bytes);
    });
    if (answer.committed) {
      return Object.fromEntries(
        answer.jobs.map((j) => [j.name, { id: j.jobId, deduplicated: j.deduplicated, debounced: false }]),
      );
    }
    const rejections = answer.rejections.map((r) => ({
      index: r.index,
      reason: rejectionName(r.reason),
      message: r.message,
    }));
    const first = rejections[0];
    if (first === undefined)
      throw new SeppError(status.INTERNAL, 'the server refused the flow without saying why');
    // Refused for full queues alone (`later`), the flow stored nothing: sent again, as an
    // atomic batch is, while retries are on and tries and the deadline are left.
    const delayMs =
      rejectionsRetry(rejections) === 'later' && !conn.closed
        ? laterRetryDelayMs(conn.options.retry, retries, deadlineAtMs)
        : undefined;
    const refusal = new JobRejectedError(statusOfRejection[first.reason], rejections);
    if (delayMs === undefined || options.signal?.aborted) throw refusal;
    await sleep(delayMs, options.signal);
    if (options.signal?.aborted) throw refusal;
  }
}
