/**
 * Slows password guessing. Failed logins are counted per client address and
 * user name, and per client address alone (one client trying many names).
 * After a few free failures each further failure locks that key out for an
 * exponentially growing time, capped; while locked out, a login is refused
 * before the password is even checked, so guessing costs the attacker time and
 * costs the server no scrypt work. A success clears the key's count. Counts are
 * forgotten after a quiet period.
 *
 * In memory and bounded: when full, the entry touched longest ago goes first.
 */

export interface ThrottlePolicy {
  /** Failures allowed before the first lockout. */
  freeFailures: number;
  /** The first lockout; each further failure doubles it. */
  baseLockoutMs: number;
  maxLockoutMs: number;
  /** A key with no failure for this long starts again from zero. */
  forgetAfterMs: number;
}

export const perUserPolicy: ThrottlePolicy = {
  freeFailures: 5,
  baseLockoutMs: 1000,
  maxLockoutMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
};

/** One address trying many user names gets more room, but not unlimited. */
export const perClientPolicy: ThrottlePolicy = {
  freeFailures: 20,
  baseLockoutMs: 1000,
  maxLockoutMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
};

interface Entry {
  failures: number;
  lastFailureMs: number;
  lockedUntilMs: number;
}

const maxEntries = 10_000;

export class LoginThrottle {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly nowMs: () => number,
    private readonly policy: ThrottlePolicy,
  ) {}

  /** Milliseconds until `key` may try again; 0 when it may now. */
  retryAfterMs(key: string): number {
    const entry = this.current(key);
    return entry === undefined ? 0 : Math.max(0, entry.lockedUntilMs - this.nowMs());
  }

  failed(key: string): void {
    const now = this.nowMs();
    const entry = this.current(key) ?? { failures: 0, lastFailureMs: now, lockedUntilMs: 0 };
    entry.failures++;
    entry.lastFailureMs = now;
    const over = entry.failures - this.policy.freeFailures;
    if (over > 0) {
      entry.lockedUntilMs =
        now + Math.min(this.policy.maxLockoutMs, this.policy.baseLockoutMs * 2 ** Math.min(over - 1, 30));
    }
    // Re-insert so that map order is least recently touched first.
    this.entries.delete(key);
    if (this.entries.size >= maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, entry);
  }

  succeeded(key: string): void {
    this.entries.delete(key);
  }

  private current(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry !== undefined && this.nowMs() - entry.lastFailureMs >= this.policy.forgetAfterMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
