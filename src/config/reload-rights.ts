/**
 * Which API keys and admin users a reload would give more than they have: a key whose
 * `queues` is gone or lists a pattern it did not (a key scoped to `["a-*"]` that becomes
 * a key for every queue), a key whose role changes to one that may do something the old
 * could not (producer to worker or admin, worker to producer or admin), a user whose role
 * goes up (viewer < operator < admin). Compared by name: a key or user added, or renamed,
 * is a new one (the file's author wrote it), not this.
 *
 * Why it counts as lowering security (reload-safety.ts): a file cut at a line boundary
 * parses, and a `queues = [...]` written last in a key's table is the line a cut drops,
 * turning a tenant's key into one for every tenant's queues; a signal carries no intent
 * to tell that from an edit.
 */
import { QueueScope } from './queue-scope.ts';
import type { AdminRole, ApiKey, ApiKeyRole, SeppConfig } from './types.ts';

export interface RightsGained {
  /** `grpc.api_keys` or `admin.users`. */
  readonly setting: string;
  /** The key's or user's name. */
  readonly name: string;
  /** What it gains: `its queues go from ["a-*"] to every queue`, `its role goes from producer to admin`. */
  readonly what: string;
}

const userRank: Readonly<Record<AdminRole, number>> = { viewer: 1, operator: 2, admin: 3 };

/** A key's new role may do what its old one could not (an admin key may do everything). */
const keyRoleGains = (from: ApiKeyRole, to: ApiKeyRole): boolean => from !== to && from !== 'admin';

const shownScope = (queues: readonly string[] | null): string =>
  queues === null ? 'every queue' : JSON.stringify(queues);

/**
 * A scope that may match a queue the old one did not: none at all, or a pattern the old does
 * not cover. The old covers a pattern when it allows the pattern's own text (its `*` taken as
 * a character): each `*` of it then falls inside a `*` of the old, so whatever it stands for
 * is allowed too (`tenant-a.*` covers `tenant-a.jobs` and `tenant-a.j*`, not `tenant-*`).
 */
function scopeWidens(from: readonly string[] | null, to: readonly string[] | null): boolean {
  if (from === null) return false;
  if (to === null) return true;
  const old = new QueueScope(from);
  return to.some((pattern) => !old.allows(pattern));
}

export function rightsGained(running: SeppConfig, next: SeppConfig): RightsGained[] {
  const gained: RightsGained[] = [];
  const keys = new Map<string, ApiKey>(running.grpc.apiKeys.map((key) => [key.name, key]));
  for (const key of next.grpc.apiKeys) {
    const old = keys.get(key.name);
    if (old === undefined) continue;
    const changes: string[] = [];
    if (keyRoleGains(old.role, key.role)) changes.push(`its role goes from ${old.role} to ${key.role}`);
    if (scopeWidens(old.queues, key.queues))
      changes.push(`its queues go from ${shownScope(old.queues)} to ${shownScope(key.queues)}`);
    if (changes.length > 0)
      gained.push({ setting: 'grpc.api_keys', name: key.name, what: changes.join(' and ') });
  }
  const users = new Map(running.admin.users.map((user) => [user.name, user.role]));
  for (const user of next.admin.users) {
    const old = users.get(user.name);
    if (old === undefined || userRank[user.role] <= userRank[old]) continue;
    gained.push({
      setting: 'admin.users',
      name: user.name,
      what: `its role goes from ${old} to ${user.role}`,
    });
  }
  return gained;
}
