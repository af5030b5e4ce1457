/** A client's dead-letter calls (`client.dlq`): page through, requeue, delete. */
import { changeDeadLettersCall, listDeadLettersCall } from './admin-calls.ts';
import type { Connection } from './connection.ts';
import type { Job } from './jobs.ts';
import type { CallOptions, DeadLetterQuery, DeadLetterSelection } from './types.ts';

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

  /** Makes dead letters ready again with a fresh attempt budget; resolves with how many. */
  requeue(queue: string, selection: DeadLetterSelection, options: CallOptions = {}): Promise<number> {
    return changeDeadLettersCall(this.conn, 'requeue', queue, selection, options);
  }

  /** Deletes dead letters for good (which frees their idempotency keys); resolves with how many. */
  delete(queue: string, selection: DeadLetterSelection, options: CallOptions = {}): Promise<number> {
    return changeDeadLettersCall(this.conn, 'delete', queue, selection, options);
  }
}
