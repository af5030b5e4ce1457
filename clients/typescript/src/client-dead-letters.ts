/** A client's dead-letter calls (`client.dlq`): page through, requeue, delete. */
import { changeDeadLettersCall, listDeadLettersCall, topErrorsCall } from './admin-calls.ts';
import type { Connection } from './connection.ts';
import type { Job } from './jobs.ts';
import type { CallOptions, DeadLetterQuery, DeadLetterSelection, DeadReason, TopErrors } from './types.ts';

/** What narrows a change of `'all'` dead letters. */
export interface DeadLetterChangeOptions extends CallOptions {
  /** Only dead letters of this reason. */
  reason?: DeadReason;
  /** Only dead letters whose last error contains this text, in any case. */
  errorText?: string;
}

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
   * the server runs it as one bulk operation.
   */
  requeue(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.conn, 'requeue', queue, selection, options);
  }

  /** Deletes dead letters for good (which frees their idempotency keys); resolves with how many. Options as `requeue`. */
  delete(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.conn, 'delete', queue, selection, options);
  }
}
