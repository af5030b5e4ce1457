/**
 * What a reload would let callers do that they may not now. Rights, not capacity: who may
 * call, on which queues, with which job types, under which address; a limit raised
 * (`max_payload_bytes`, `max_batch_jobs`, a rate) lets a caller use more of the server but
 * do nothing it could not, and is the file's author's capacity choice, not this.
 *
 * Which API keys and admin users a reload would give more than they have: a key whose
 * `queues` is gone or lists a pattern it did not (a key scoped to `["a-*"]` that becomes
 * a key for every queue), a key whose role changes to one that may do something the old
 * could not (producer to worker or admin, worker to producer or admin), a user whose role
 * goes up (viewer < operator < admin). Compared by name: a key or user added, or renamed,
 * is a new one (the file's author wrote it), not this.
 *
 * What every producer would gain: `engine.strict_queues` turned off (any queue name, not only
 * the declared ones), a queue's `allowed_types` removed or given a type it did not list (the
 * queue's own, or — for a queue the file no longer declares — `[queue_defaults]`'s),
 * `[queue_defaults]`'s `allowed_types` widened while undeclared queues take jobs, and — while
 * they do (`strict_queues` off) — a queue the file adds whose `allowed_types` admit a type
 * `[queue_defaults]`' did not: producers could use it before, undeclared, with those. Under
 * `strict_queues` a queue the file adds is a new one, as a key added is.
 *
 * What a client of the admin UI would gain: `admin.trusted_proxies` given a range it did not
 * list, whose peers may then name any client address (login throttling, client-address.ts).
 *
 * Why it counts as lowering security (reload-safety.ts): a file cut at a line boundary
 * parses, and a `queues = [...]` written last in a key's table (or an `allowed_types`, or
 * `strict_queues = true`, written last) is the line a cut drops, turning a tenant's key
 * into one for every tenant's queues; a signal carries no intent to tell that from an edit.
 */
import { QueueScope } from './queue-scope.ts';
import type { AdminRole, ApiKey, ApiKeyRole, SeppConfig } from './types.ts';

export interface RightsGained {
  /** `grpc.api_keys`, `admin.users`, `engine.strict_queues`, `queues.NAME.allowed_types`… */
  readonly setting: string;
  /** As the reload's answer, log line and audit entry list it: `grpc.api_keys (tenant: its role goes …)`. */
  readonly shown: string;
  /** Who gains what, for the refusal: `API key tenant would get more than it has: …`. */
  readonly message: string;
}

const userRank: Readonly<Record<AdminRole, number>> = { viewer: 1, operator: 2, admin: 3 };

/** A key's new role may do what its old one could not (an admin key may do everything). */
const keyRoleGains = (from: ApiKeyRole, to: ApiKeyRole): boolean => from !== to && from !== 'admin';

const shownTypes = (types: readonly string[]): string =>
  types.length === 0 ? 'any type' : JSON.stringify(types);

/** Types that admit one the old did not: none listed (any type), or one the old does not list. */
const typesWiden = (from: readonly string[], to: readonly string[]): boolean =>
  from.length > 0 && (to.length === 0 || to.some((type) => !from.includes(type)));

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
  return [
    ...credentialsGained(running, next),
    ...producersGained(running, next),
    ...proxiesGained(running, next),
  ];
}

/** A key's or user's own entry: `setting` is `grpc.api_keys` or `admin.users`. */
function credentialGained(setting: string, name: string, what: string): RightsGained {
  const who = setting === 'admin.users' ? 'admin user' : 'API key';
  return {
    setting,
    shown: `${setting} (${name}: ${what})`,
    message: `${who} ${name} would get more than it has: ${what}`,
  };
}

function credentialsGained(running: SeppConfig, next: SeppConfig): RightsGained[] {
  const gained: RightsGained[] = [];
  const keys = new Map<string, ApiKey>(running.grpc.apiKeys.map((key) => [key.name, key]));
  for (const key of next.grpc.apiKeys) {
    const old = keys.get(key.name);
    if (old === undefined) continue;
    const changes: string[] = [];
    if (keyRoleGains(old.role, key.role)) changes.push(`its role goes from ${old.role} to ${key.role}`);
    if (scopeWidens(old.queues, key.queues))
      changes.push(`its queues go from ${shownScope(old.queues)} to ${shownScope(key.queues)}`);
    if (changes.length > 0) gained.push(credentialGained('grpc.api_keys', key.name, changes.join(' and ')));
  }
  const users = new Map(running.admin.users.map((user) => [user.name, user.role]));
  for (const user of next.admin.users) {
    const old = users.get(user.name);
    if (old === undefined || userRank[user.role] <= userRank[old]) continue;
    gained.push(credentialGained('admin.users', user.name, `its role goes from ${old} to ${user.role}`));
  }
  return gained;
}

/** What any producer may enqueue: to which queues (`strict_queues`), of which types (`allowed_types`). */
function producersGained(running: SeppConfig, next: SeppConfig): RightsGained[] {
  const gained: RightsGained[] = [];
  const was = running.engine;
  const is = next.engine;
  if (was.strictQueues && !is.strictQueues) {
    gained.push({
      setting: 'engine.strict_queues',
      shown: 'engine.strict_queues (from true to false)',
      message:
        'engine.strict_queues would go from true to false: a producer could enqueue to a queue of any name, ' +
        'not only the declared ones',
    });
  }
  const types = (
    setting: string,
    queue: string,
    from: readonly string[],
    to: readonly string[],
    was = '',
  ) => {
    if (!typesWiden(from, to)) return;
    const what = `${shownTypes(from)} to ${shownTypes(to)}`;
    gained.push({
      setting,
      shown: `${setting} (from ${what})`,
      message: `${setting} would go from ${what}${was}: a producer could enqueue to ${queue} a job type it may not now`,
    });
  };
  for (const [queue, settings] of Object.entries(was.queues)) {
    const declared = is.queues[queue];
    // Under strict_queues a queue the file drops takes no jobs: nothing widens.
    if (declared === undefined && is.strictQueues) continue;
    const to = declared?.allowedTypes ?? is.queueDefaults.allowedTypes;
    types(`queues.${queue}.allowed_types`, `queue ${queue}`, settings.allowedTypes, to);
  }
  // A queue the file adds took jobs undeclared, with [queue_defaults]' types, while strict_queues was off.
  if (!was.strictQueues) {
    for (const [queue, declared] of Object.entries(is.queues)) {
      if (was.queues[queue] !== undefined) continue;
      const undeclared = " (undeclared, it takes [queue_defaults]' types, strict_queues being off)";
      types(
        `queues.${queue}.allowed_types`,
        `queue ${queue}`,
        was.queueDefaults.allowedTypes,
        declared.allowedTypes,
        undeclared,
      );
    }
  }
  // Undeclared queues take jobs, and take [queue_defaults]' types (strict_queues turned off is above).
  if (!was.strictQueues && !is.strictQueues) {
    types(
      'queue_defaults.allowed_types',
      'a queue the file does not declare',
      was.queueDefaults.allowedTypes,
      is.queueDefaults.allowedTypes,
    );
  }
  return gained;
}

/** Peers that may name the client (X-Forwarded-For): a range added lets a client behind it pick its address. */
function proxiesGained(running: SeppConfig, next: SeppConfig): RightsGained[] {
  const old = new Set(running.admin.trustedProxies);
  const added = next.admin.trustedProxies.filter((range) => !old.has(range));
  if (added.length === 0) return [];
  const what = `${JSON.stringify(running.admin.trustedProxies)} to ${JSON.stringify(next.admin.trustedProxies)}`;
  return [
    {
      setting: 'admin.trusted_proxies',
      shown: `admin.trusted_proxies (from ${what})`,
      message:
        `admin.trusted_proxies would go from ${what}: a client connecting from ${added.join(', ')} could name ` +
        'any address as its own (X-Forwarded-For), and login throttling and the audit log would take its word',
    },
  ];
}
