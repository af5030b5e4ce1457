/**
 * What the store keeps of the operators: the audit log and the admin UI's sessions,
 * capabilities of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { AuditRow, SessionRow } from './rows.ts';

// ---------------------------------------------------------------- audit log

export interface AuditReads {
  /** Entries before `beforeId`, newest first; a null filter matches anything. */
  page(p: {
    actor: string | null;
    action: string | null;
    target: string | null;
    beforeId: number;
    limit: number;
  }): Op<AuditRow[]>;
}

export interface Audit extends AuditReads {
  /** Appends an entry; returns its id. */
  insert(p: { atMs: number; actor: string; action: string; target: string; detailsJson: string }): Op<number>;
  updateDetails(p: { id: number; detailsJson: string }): Op<void>;
}

// ---------------------------------------------------------------- admin sessions

export interface SessionReads {
  /** Sessions still live at `nowMs`, oldest first. */
  live(nowMs: number): Op<SessionRow[]>;
}

export interface Sessions extends SessionReads {
  insert(row: SessionRow): Op<void>;
  delete(idSha256: string): Op<void>;
  /** Forgets sessions that ended by `nowMs`. */
  deleteExpired(nowMs: number): Op<void>;
}
