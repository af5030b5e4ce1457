/**
 * Server-side sessions, in memory: a restart logs everyone out, which is the
 * safe direction. The cookie carries only a random id; the store keeps its
 * SHA-256, so the map's lookups leak nothing useful by timing and a memory
 * dump holds no usable cookie. Each session has its own CSRF token, which the
 * UI reads from GET /api/v1/session and sends back in a header.
 *
 * A session ends `ttlMs` after login (not after last use: a stolen cookie stays
 * useful for a bounded time), on logout, or when the store is full and it is
 * the oldest.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AdminRole } from './types.ts';

export interface Session {
  /** The user name, or `anonymous` when login is off. */
  readonly user: string;
  readonly role: AdminRole;
  readonly csrfToken: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
}

/** Sessions kept at most; the oldest goes first. */
const maxSessions = 10_000;

export class SessionStore {
  private readonly byHash = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly nowMs: () => number,
  ) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
      throw new Error(`session TTL must be positive, not ${ttlMs}`);
  }

  /** Starts a session; returns the id for the cookie (shown nowhere else). */
  create(user: string, role: AdminRole): { id: string; session: Session } {
    this.sweep();
    while (this.byHash.size >= maxSessions) {
      const oldest = this.byHash.keys().next().value;
      if (oldest === undefined) break;
      this.byHash.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    const now = this.nowMs();
    const session: Session = {
      user,
      role,
      csrfToken: randomBytes(32).toString('base64url'),
      createdAtMs: now,
      expiresAtMs: now + this.ttlMs,
    };
    this.byHash.set(digest(id), session);
    return { id, session };
  }

  /** The live session with this id, if any; an expired one is removed. */
  get(id: string | undefined): Session | undefined {
    if (id === undefined || id.length === 0 || id.length > 128) return undefined;
    const key = digest(id);
    const session = this.byHash.get(key);
    if (session === undefined) return undefined;
    if (session.expiresAtMs <= this.nowMs()) {
      this.byHash.delete(key);
      return undefined;
    }
    return session;
  }

  delete(id: string | undefined): void {
    if (id !== undefined) this.byHash.delete(digest(id));
  }

  /** Ends every session of a user (they were removed from the config, say). */
  deleteUser(user: string): void {
    for (const [key, session] of this.byHash) if (session.user === user) this.byHash.delete(key);
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Drops expired sessions from the front: insertion order is expiry order, as the TTL is fixed. */
  private sweep(): void {
    const now = this.nowMs();
    for (const [key, session] of this.byHash) {
      if (session.expiresAtMs > now) break;
      this.byHash.delete(key);
    }
  }
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}
