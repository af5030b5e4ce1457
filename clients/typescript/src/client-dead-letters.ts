/** A client's dead-letter calls (`client.dlq`): page through, requeue, delete. */
import { changeDeadLettersCall, listDeadLettersCall, topErrorsCall } from './admin-calls.ts';
import type { Connection } from './connection.ts';
import type { Job } from './jobs.ts';
import type {
  BulkResult,
  CallOptions,
  DeadLetterQuery,
  DeadLetterSelection,
  DeadReason,
  RequestKeyOption,
  TopErrors,
} from './types.ts';

/** What narrows a change of `'all'` dead letters, and whether to wait for it. */
export interface DeadLetterChangeOptions extends CallOptions, RequestKeyOption {
  /** Only dead letters of this reason. */
  reason?: DeadReason;
  /** Only dead letters whose last error contains this text, in any case. */
  errorText?: string;
  /**
   * With `'all'`: answer as soon as the bulk operation has begun, with a
   * `BulkResult` (follow `operation.id` with `client.jobs.bulkOperation`)
   * instead of a count. Chosen ids change at once (`operation` null).
   */
  background?: boolean;
}

/** Options that wait for the change: the call resolves with a count. */
type Waiting = DeadLetterChangeOptions & { background?: false };
/** Options that do not wait: the call resolves with a `BulkResult`. */
type Background = DeadLetterChangeOptions & { background: true };

/** The dead-letter calls of a client (`client.dlq`). */
export class DeadLetters {
  /** @internal */
  constructor(private readonly conn: Connection) {}

  /** One page of a queue's dead letters, oldest first (payloads and error histories left out). */
  list(queue: string, query: DeadLetterQuery = {}): Promise<{ jobs: Job[]; nextPageToken: string | null }> {
    return listDeadLettersCall(this.conn, queue, query);
  }

  /** Every dead letter of a queue, page by page: `for await (const job of client.dlq.all('emails'))`. */
  async *all(queue: string, query: Omit<DeadLetterQuery, 'pageToken'> = {}): AsyncGenerator<Job> {
    let pageToken: string | null = null;
    do {
      const page: { jobs: Job[]; nextPageToken: string | null } = await this.list(queue, {
        ...query,
        ...(pageToken === null ? {} : { pageToken }),
      });
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }

  /**
   * A queue's dead letters grouped by their last error — the class the worker sent and
   * the first line of the message — the most jobs first (`limit` groups, default 20,
   * at most 100). Act on a group with `client.jobs.requeueMatching` / `deleteMatching` and
   * `{ queue, states: ['dead'], errorGroup: group }`.
   */
  topErrors(queue: string, options: CallOptions & { limit?: number } = {}): Promise<TopErrors> {
    return topErrorsCall(this.conn, queue, options);
  }

  /**
   * Makes dead letters ready again with a fresh attempt budget; resolves with
   * how many. With `'all'`, `reason` and `errorText` (any case) narrow it, and
   * the server runs it as one bulk operation; with `background` too, it
   * resolves as soon as that has begun, with a `BulkResult` (`changed` 0,
   * `matched`, and the `operation` to follow).
   */
  requeue(queue: string, selection: DeadLetterSelection, options?: Waiting): Promise<number>;
  requeue(queue: string, selection: DeadLetterSelection, options: Background): Promise<BulkResult>;
  requeue(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions,
  ): Promise<number | BulkResult>;
  requeue(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number | BulkResult> {
    return this.change('requeue', queue, selection, options);
  }

  /**
   * Deletes dead letters for good (which frees their idempotency keys, and cancels the jobs still
   * waiting on them under `onDependencyFailure: 'wait'`); resolves with how many. Options as `requeue`.
   */
  delete(queue: string, selection: DeadLetterSelection, options?: Waiting): Promise<number>;
  delete(queue: string, selection: DeadLetterSelection, options: Background): Promise<BulkResult>;
  delete(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions,
  ): Promise<number | BulkResult>;
  delete(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number | BulkResult> {
    return this.change('delete', queue, selection, options);
  }

  private async change(
    action: 'requeue' | 'delete',
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions,
  ): Promise<number | BulkResult> {
    const result = await changeDeadLettersCall(this.conn, action, queue, selection, options);
    return options.background === true ? result : result.changed;
  }
}
