/**
 * Slows password guessing. Each login attempt is counted as a failure before
 * its password is checked — so a burst of concurrent guesses cannot all pass
 * the lockout check before the first of them is counted — and a right
 * password takes its count back. After a few free failures each further one
 * locks the key out for an exponentially growing time, capped; while locked
 * out, a login is refused before the password is even checked, so guessing
 * costs the attacker time and costs the server no scrypt work. Counts are
 * forgotten after a quiet period.
 *
 * login-guard.ts decides the keys (address and user name, address, user
 * name) and what a success clears. In memory and bounded: when full, the
 * entry touched longest ago goes first.
 */
import { type CheckGatePolicy, defaultCheckGatePolicy } from './check-gate.ts';

export interface ThrottlePolicy {
  /** Failures allowed before the first lockout. */
  freeFailures: number;
  /** The first lockout; each further failure doubles it. */
  baseLockoutMs: number;
  maxLockoutMs: number;
  /** A key with no failure for this long starts again from zero. */
  forgetAfterMs: number;
}

/** One address guessing one user's password. */
export const perClientUserPolicy: ThrottlePolicy = {
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

/**
 * One user name guessed from many addresses (or from behind one proxy). An
 * address the user has logged in from before is exempt (login-guard.ts), so
 * this lock cannot shut the real user out of their usual place.
 */
export const perUserPolicy: ThrottlePolicy = {
  freeFailures: 10,
  baseLockoutMs: 1000,
  maxLockoutMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
};

/** Every limit on logins: the three throttles (login-guard.ts says how they combine) and the checks. */
export interface LoginPolicy {
  perClientUser: ThrottlePolicy;
  perClient: ThrottlePolicy;
  perUser: ThrottlePolicy;
  checks: CheckGatePolicy;
}

export const defaultLoginPolicy: LoginPolicy = {
  perClientUser: perClientUserPolicy,
  perClient: perClientPolicy,
  perUser: perUserPolicy,
  checks: defaultCheckGatePolicy,
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

  /** Failures on record for `key` (0 when none, or forgotten). */
  failures(key: string): number {
    return this.current(key)?.failures ?? 0;
  }

  /** Counts an attempt as failed; call it before the password is checked. */
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

  /**
   * Takes back one counted attempt (its password was right). A lockout stays
   * unless no failures beyond the free ones are left.
   */
  forgive(key: string): void {
    const entry = this.current(key);
    if (entry === undefined) return;
    entry.failures = Math.max(0, entry.failures - 1);
    if (entry.failures <= this.policy.freeFailures) entry.lockedUntilMs = 0;
  }

  /** Clears the key's count. */
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
