/**
 * Server-side sessions, in memory: a restart logs everyone out, which is the
 * safe direction. The cookie carries only a random id; the store keeps its
 * SHA-256, so the map's lookups leak nothing useful by timing and a memory
 * dump holds no usable cookie. Each session has its own CSRF token, which the
 * UI reads from GET /api/v1/session and sends back in a header.
 *
 * A session ends `ttlMs` after login (not after last use: a stolen cookie stays
 * useful for a bounded time), on logout, or when its user logs in once more
 * than the per-user cap allows and it is that user's oldest. The cap is per
 * user so that nobody can end anyone else's sessions by logging in often; the
 * number of users is bounded by the config, so memory is too. Without login
 * (`anonymous`), every cookie-less visit starts a session, so that one name
 * gets a larger cap: a script polling without a cookie should not log the
 * browser out at once.
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

export const defaultMaxSessionsPerUser = 10;
/** The cap for `anonymous`, the one name of every session when login is off. */
export const maxAnonymousSessions = 1000;

export class SessionStore {
  private readonly byHash = new Map<string, Session>();
  /** Each user's session hashes, oldest first. */
  private readonly byUser = new Map<string, Set<string>>();

  constructor(
    private readonly ttlMs: number,
    private readonly nowMs: () => number,
    private readonly maxPerUser: number = defaultMaxSessionsPerUser,
  ) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
      throw new Error(`session TTL must be positive, not ${ttlMs}`);
    if (!Number.isSafeInteger(maxPerUser) || maxPerUser <= 0)
      throw new Error(`sessions per user must be positive, not ${maxPerUser}`);
  }

  /** Starts a session, ending the user's oldest if they are at the cap; returns the id for the cookie (shown nowhere else). */
  create(user: string, role: AdminRole): { id: string; session: Session } {
    this.sweep();
    const cap = user === 'anonymous' ? Math.max(this.maxPerUser, maxAnonymousSessions) : this.maxPerUser;
    const mine = this.byUser.get(user) ?? new Set<string>();
    for (const oldest of mine) {
      if (mine.size < cap) break;
      this.remove(oldest);
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
    const key = digest(id);
    this.byHash.set(key, session);
    mine.add(key);
    this.byUser.set(user, mine);
    return { id, session };
  }

  /** The live session with this id, if any; an expired one is removed. */
  get(id: string | undefined): Session | undefined {
    if (id === undefined || id.length === 0 || id.length > 128) return undefined;
    const key = digest(id);
    const session = this.byHash.get(key);
    if (session === undefined) return undefined;
    if (session.expiresAtMs <= this.nowMs()) {
      this.remove(key);
      return undefined;
    }
    return session;
  }

  delete(id: string | undefined): void {
    if (id !== undefined) this.remove(digest(id));
  }

  /** Ends every session of a user (they were removed from the config, say). */
  deleteUser(user: string): void {
    for (const key of this.byUser.get(user) ?? []) this.remove(key);
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Live sessions of one user. */
  countOf(user: string): number {
    return this.byUser.get(user)?.size ?? 0;
  }

  private remove(key: string): void {
    const session = this.byHash.get(key);
    if (session === undefined) return;
    this.byHash.delete(key);
    const mine = this.byUser.get(session.user);
    mine?.delete(key);
    if (mine?.size === 0) this.byUser.delete(session.user);
  }

  /** Drops expired sessions from the front: insertion order is expiry order, as the TTL is fixed. */
  private sweep(): void {
    const now = this.nowMs();
    for (const [key, session] of this.byHash) {
      if (session.expiresAtMs > now) break;
      this.remove(key);
    }
  }
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}
