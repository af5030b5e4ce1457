/** A client's view of the audit log (`client.audit`, admin key): who changed what, newest first. */
import { listAuditCall } from './admin-calls.ts';
import type { Connection } from './connection.ts';
import type { AuditEntry, AuditQuery } from './types.ts';

/** The audit log calls of a client (`client.audit`). */
export class AuditLog {
  /** @internal */
  constructor(private readonly conn: Connection) {}

  /** One page of the audit log, newest first (admin key). */
  list(query: AuditQuery = {}): Promise<{ entries: AuditEntry[]; nextPageToken: string | null }> {
    return listAuditCall(this.conn, query);
  }

  /**
   * Every matching entry, newest first, fetched page by page as the loop goes
   * (admin key): `for await (const entry of client.audit.entries({ target: 'queue:emails' }))`.
   */
  async *entries(query: Omit<AuditQuery, 'pageToken'> = {}): AsyncGenerator<AuditEntry, void, undefined> {
    let pageToken: string | null = null;
    do {
      const page = await this.list(pageToken === null ? query : { ...query, pageToken });
      yield* page.entries;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }
}
