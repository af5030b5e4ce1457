/**
 * One login attempt, from the lockout check to the password check. In order,
 * all before anything is awaited (so concurrent attempts see each other):
 *
 *   1. Locked out? By address and user name, by address, and by user name
 *      (the last one not for an address this user has logged in from
 *      before). Then refused with a wait, nothing checked.
 *   2. A place among the password checks (check-gate.ts): known addresses
 *      first, then addresses with no failure on record, then the rest?
 *      Otherwise refused as busy, nothing checked and nothing counted.
 *   3. Counted as a failure on all three keys (login-throttle.ts).
 *   4. The password is checked. A right one takes its counts back (and clears
 *      the address-and-user count) and remembers the address as known.
 *
 * An unknown user name costs a check too, against a hash with the scrypt
 * settings of a configured user chosen by a keyed hash of the typed name: a
 * name costs the same every time, and unknown names cost what the users'
 * names cost, in the same proportions, so timing does not tell which names
 * exist even when users' hashes use different settings.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { CheckGate } from './check-gate.ts';
import { defaultLoginPolicy, type LoginPolicy, LoginThrottle } from './login-throttle.ts';
import { defaultScryptParams, formatPasswordHash, parsePasswordHash, type ScryptParams } from './password.ts';
import type { AdminUser } from './types.ts';

export { defaultLoginPolicy, type LoginPolicy };

export type LoginResult =
  | { kind: 'ok'; account: AdminUser }
  /** A wrong password or an unknown user name (the caller must not tell which). */
  | { kind: 'wrong'; account: AdminUser | undefined }
  /** Too many failures; nothing was checked. */
  | { kind: 'locked'; retryAfterMs: number }
  /** Too many checks waiting; nothing was checked or counted. */
  | { kind: 'busy'; retryAfterMs: number };

export interface LoginGuardDeps {
  nowMs(): number;
  /** The users as configured now. */
  users(): readonly AdminUser[];
  /** Checks a password against a stored hash. */
  verify(password: string, stored: string): Promise<boolean>;
}

/** How long a client refused as busy is told to wait. */
const busyRetryMs = 1000;
/** Addresses (and address-user pairs) with a past login, remembered at most. */
const maxKnown = 10_000;

/** A set that forgets the entry touched longest ago when full. */
class RecentSet {
  private readonly items = new Set<string>();

  constructor(private readonly max: number) {}

  add(item: string): void {
    this.items.delete(item);
    if (this.items.size >= this.max) {
      const oldest = this.items.values().next().value;
      if (oldest !== undefined) this.items.delete(oldest);
    }
    this.items.add(item);
  }

  has(item: string): boolean {
    return this.items.has(item);
  }
}

export class LoginGuard {
  private readonly perClientUser: LoginThrottle;
  private readonly perClient: LoginThrottle;
  private readonly perUser: LoginThrottle;
  private readonly gate: CheckGate;
  private readonly knownClients = new RecentSet(maxKnown);
  private readonly knownPairs = new RecentSet(maxKnown);
  /** Per process: keys the choice of dummy settings and the name tags in logs. */
  private readonly secret = randomBytes(32);
  private readonly dummyHashes = new Map<string, string>();

  constructor(
    private readonly deps: LoginGuardDeps,
    policy: LoginPolicy = defaultLoginPolicy,
  ) {
    this.perClientUser = new LoginThrottle(deps.nowMs, policy.perClientUser);
    this.perClient = new LoginThrottle(deps.nowMs, policy.perClient);
    this.perUser = new LoginThrottle(deps.nowMs, policy.perUser);
    this.gate = new CheckGate(policy.checks);
  }

  async attempt(client: string, typedUser: string, password: string): Promise<LoginResult> {
    const user = typedUser.toLowerCase();
    const pairKey = `${client}\n${user}`;
    const known = this.knownPairs.has(pairKey);
    const retryAfterMs = Math.max(
      this.perClientUser.retryAfterMs(pairKey),
      this.perClient.retryAfterMs(client),
      known ? 0 : this.perUser.retryAfterMs(user),
    );
    if (retryAfterMs > 0) return { kind: 'locked', retryAfterMs };

    const account = this.deps.users().find((u) => u.name === typedUser);
    const stored = account?.passwordHash ?? this.dummyHashFor(typedUser);
    const lane = this.knownClients.has(client)
      ? 'known'
      : this.perClient.failures(client) === 0
        ? 'fresh'
        : 'other';
    const check = this.gate.submit(client, lane, () => this.deps.verify(password, stored));
    if (check === undefined) return { kind: 'busy', retryAfterMs: busyRetryMs };
    this.perClientUser.failed(pairKey);
    this.perClient.failed(client);
    this.perUser.failed(user);

    const ok = await check;
    if (!ok || account === undefined) return { kind: 'wrong', account };
    this.perClientUser.succeeded(pairKey);
    this.perClient.forgive(client);
    this.perUser.forgive(user);
    this.knownPairs.add(pairKey);
    this.knownClients.add(client);
    return { kind: 'ok', account };
  }

  /** Password checks running and waiting now. */
  checks(): { running: number; waiting: number } {
    return this.gate.load();
  }

  /**
   * A short keyed digest of a typed user name, for logs and the audit log in
   * place of the name (which is sometimes a password typed into the wrong
   * field): repeated attempts with one name share it; it reveals nothing of
   * the name, and changes with every start of the server.
   */
  nameTag(typedUser: string): string {
    return createHmac('sha256', this.secret).update(`tag\n${typedUser}`).digest('hex').slice(0, 12);
  }

  /** A hash no password matches, with the scrypt settings of the user this name maps to. */
  private dummyHashFor(typedUser: string): string {
    const users = this.deps.users();
    let params: ScryptParams = defaultScryptParams;
    let hashBytes = 64;
    if (users.length > 0) {
      const pick = createHmac('sha256', this.secret).update(`user\n${typedUser}`).digest().readUInt32BE(0);
      const parsed = parsePasswordHash(users[pick % users.length]?.passwordHash ?? '');
      if (parsed !== null) {
        params = parsed;
        hashBytes = parsed.hash.length;
      }
    }
    const key = `${params.logN},${params.r},${params.p},${hashBytes}`;
    let dummy = this.dummyHashes.get(key);
    if (dummy === undefined) {
      const { logN, r, p } = params;
      dummy = formatPasswordHash({ logN, r, p, salt: randomBytes(16), hash: randomBytes(hashBytes) });
      this.dummyHashes.set(key, dummy);
    }
    return dummy;
  }
}
