/**
 * Server-side sessions: kept in memory, where every request looks them up, and
 * (with a store: the engine's admin_sessions table) on disk, so a restart or a
 * reload logs nobody out. The cookie carries only a random id; memory and disk
 * keep its SHA-256, so the map's lookups leak nothing useful by timing and
 * neither a memory dump nor a copy of the database holds a usable cookie. Each
 * session has its own CSRF token, which the UI reads from GET /api/v1/session
 * and sends back in a header: an HMAC of the cookie's id (so the server can
 * hand it out again after a restart without keeping it), of which memory and
 * disk keep only the SHA-256, as of the id. A change is on disk before the
 * answer that hands out or ends the cookie (the caller awaits `saved`/the
 * returned promise).
 *
 * A session belongs to the password its user logged in with: it keeps a tag of
 * that password's hash, and ends as soon as the config gives the user another
 * password (a reload, or a restart) or removes the user.
 *
 * A session ends `ttlMs` after login (not after last use: a stolen cookie stays
 * useful for a bounded time), on logout, or when its user logs in once more
 * than the per-user cap allows and it is that user's oldest. The cap is per
 * user so that nobody can end anyone else's sessions by logging in often; the
 * number of users is bounded by the config, so memory is too. Without login
 * (`anonymous`), every cookie-less visit starts a session, so that one name
 * gets a larger cap: a script polling without a cookie should not log the
 * browser out at once. Anonymous sessions are not stored: without login a new
 * one is handed out for the asking.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type AdminRole, adminRoles } from './types.ts';

export interface Session {
  /** The user name, or `anonymous` when login is off. */
  readonly user: string;
  /** The role at login; the config's current role is what counts (the access check reads it). */
  readonly role: AdminRole;
  /** base64url SHA-256 of the session's CSRF token (csrfTokenOf(id)). */
  readonly csrfSha256: string;
  /** passwordTagOf(the password hash the user logged in with); '' for `anonymous`. */
  readonly passwordTag: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
}

/** A user as sessions need to know them: the name and the current password hash. */
export interface SessionUser {
  readonly name: string;
  readonly passwordHash: string;
}

/** Where sessions are kept across restarts (stored-sessions.ts keeps them in the store). */
export interface SessionPersistence {
  /** Sessions not expired, oldest first. */
  live(): Promise<readonly StoredSession[]>;
  /** Stores a session and ends `ended` (by id hash) in one transaction. */
  save(session: StoredSession, ended: readonly string[]): Promise<void>;
  end(ended: readonly string[]): Promise<void>;
}

/** A session as stored: the SHA-256 of its id, never the id. */
export interface StoredSession {
  /** base64url SHA-256 of the cookie's id. */
  readonly idSha256: string;
  readonly user: string;
  readonly role: string;
  readonly csrfSha256: string;
  readonly passwordTag: string;
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
    private ttlMs: number,
    private readonly nowMs: () => number,
    private maxPerUser: number = defaultMaxSessionsPerUser,
    private readonly store?: SessionPersistence,
  ) {
    this.configure(ttlMs, maxPerUser);
  }

  /** Takes the sessions kept across the last restart (call once, before serving). */
  async load(): Promise<void> {
    for (const stored of (await this.store?.live()) ?? []) {
      if (!isRole(stored.role) || stored.user === anonymous) continue;
      const { idSha256, user, role, csrfSha256, passwordTag, createdAtMs, expiresAtMs } = stored;
      this.add(idSha256, { user, role, csrfSha256, passwordTag, createdAtMs, expiresAtMs });
    }
  }

  /** New limits (a reload): the TTL applies to sessions started from now on, the cap at the next login. */
  configure(ttlMs: number, maxPerUser: number): void {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
      throw new Error(`session TTL must be positive, not ${ttlMs}`);
    if (!Number.isSafeInteger(maxPerUser) || maxPerUser <= 0)
      throw new Error(`sessions per user must be positive, not ${maxPerUser}`);
    this.ttlMs = ttlMs;
    this.maxPerUser = maxPerUser;
  }

  /**
   * Starts a session, ending the user's oldest if they are at the cap; returns
   * the id for the cookie (shown nowhere else), its CSRF token, and `saved`,
   * which settles once the session is on disk. `passwordHash` is the one the
   * user logged in with (none for `anonymous`).
   */
  create(
    user: string,
    role: AdminRole,
    passwordHash = '',
  ): { id: string; session: Session; csrfToken: string; saved: Promise<void> } {
    const ended = this.sweep();
    const cap = user === anonymous ? Math.max(this.maxPerUser, maxAnonymousSessions) : this.maxPerUser;
    const mine = this.byUser.get(user) ?? new Set<string>();
    for (const oldest of mine) {
      if (mine.size < cap) break;
      this.remove(oldest);
      ended.push(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    const csrfToken = csrfTokenOf(id);
    const now = this.nowMs();
    const session: Session = {
      user,
      role,
      csrfSha256: digest(csrfToken),
      passwordTag: passwordHash === '' ? '' : passwordTagOf(passwordHash),
      createdAtMs: now,
      expiresAtMs: now + this.ttlMs,
    };
    const key = digest(id);
    this.add(key, session);
    const saved =
      this.store === undefined || user === anonymous
        ? Promise.resolve()
        : this.store.save({ idSha256: key, ...session }, ended);
    return { id, session, csrfToken, saved };
  }

  private add(key: string, session: Session): void {
    this.byHash.set(key, session);
    const mine = this.byUser.get(session.user) ?? new Set<string>();
    mine.add(key);
    this.byUser.set(session.user, mine);
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

  /** Ends a session (logout); settles once that is on disk. */
  delete(id: string | undefined): Promise<void> {
    if (id === undefined) return Promise.resolve();
    const key = digest(id);
    const session = this.byHash.get(key);
    if (session === undefined) return Promise.resolve();
    this.remove(key);
    return session.user === anonymous ? Promise.resolve() : this.persistEnd([key]);
  }

  /** Ends every session of a user (they were removed from the config, say). */
  deleteUser(user: string): Promise<void> {
    const keys = [...(this.byUser.get(user) ?? [])];
    for (const key of keys) this.remove(key);
    return this.persistEnd(keys);
  }

  /**
   * Ends the sessions of every user not in `users` (a reload removed them) and
   * those opened with a password the user no longer has; returns whose.
   */
  retainUsers(users: readonly SessionUser[]): { ended: string[]; saved: Promise<void> } {
    const tags = new Map(users.map((u) => [u.name, passwordTagOf(u.passwordHash)]));
    const ended = new Set<string>();
    const keys: string[] = [];
    for (const [key, session] of this.byHash) {
      if (session.user === anonymous || tags.get(session.user) === session.passwordTag) continue;
      keys.push(key);
      ended.add(session.user);
    }
    for (const key of keys) this.remove(key);
    return { ended: [...ended], saved: this.persistEnd(keys) };
  }

  private persistEnd(keys: readonly string[]): Promise<void> {
    return this.store === undefined || keys.length === 0 ? Promise.resolve() : this.store.end(keys);
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

  /**
   * Drops expired sessions, returning their id hashes. Every session is looked
   * at: a reload may have changed the TTL, so insertion order need not be
   * expiry order. Memory is bounded (users × cap, plus the anonymous cap), so
   * this stays cheap; it runs once per login.
   */
  private sweep(): string[] {
    const now = this.nowMs();
    const expired: string[] = [];
    for (const [key, session] of this.byHash) {
      if (session.expiresAtMs > now) continue;
      this.remove(key);
      expired.push(key);
    }
    return expired;
  }
}

const anonymous = 'anonymous';

function isRole(role: string): role is AdminRole {
  return (adminRoles as readonly string[]).includes(role);
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/**
 * A session's CSRF token, from its cookie's id: GET /api/v1/session hands it
 * out again after a restart although only its SHA-256 is kept. Knowing it
 * gives nothing the cookie does not: the cookie is what GET /api/v1/session needs.
 */
export function csrfTokenOf(id: string): string {
  return createHmac('sha256', id).update('sepp admin csrf token').digest('base64url');
}

/** Whether `given` is the token of this session, compared in constant time. */
export function isCsrfTokenOf(session: Session, given: string | undefined): boolean {
  if (given === undefined || given.length > 128) return false;
  const a = Buffer.from(digest(given));
  const b = Buffer.from(session.csrfSha256);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A short fingerprint of a password hash (PHC string, salted): it tells whether
 * a session's user still has the password they logged in with, and a copy of
 * the database learns nothing from it that the config file would not show.
 */
export function passwordTagOf(passwordHash: string): string {
  return createHash('sha256').update(passwordHash).digest('base64url').slice(0, 22);
}
