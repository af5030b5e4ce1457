/**
 * API keys for the HTTP API: the keys of `[[grpc.api_keys]]` with their roles,
 * sent as `Authorization: Bearer <key>` and checked when a request's headers
 * arrive, before any of its body is read.
 *
 * The rules are gRPC's (src/rpc/auth.ts): the server keeps only SHA-256
 * digests and compares them in constant time against every key; producer =
 * enqueue + read, worker = work + read, admin = everything; no keys configured
 * means no authentication (which the config allows only on loopback or with
 * the explicit insecure switch). They are written here again rather than
 * shared because rpc/ and http/ are siblings that may not import each other
 * and the check is a few lines; tests/helpers/access-table.ts holds the one
 * expected table both transports are tested against.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type ApiKey, type ApiKeyRole, QueueScope } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import type { JobCreator } from '../engine/jobs/index.ts';

/** What an operation needs. `read` is open to every role; `public` to anyone, without a key. */
export type Permission = 'public' | 'read' | 'enqueue' | 'work' | 'admin';

export interface Caller {
  /** The key's name, or `anonymous` when no keys are configured (or for a public operation). */
  name: string;
  role: ApiKeyRole;
  /** The queues the key may use (`queues` in its entry); null: every queue. */
  scope: QueueScope | null;
}

const allowed: Record<ApiKeyRole, ReadonlySet<Permission>> = {
  producer: new Set(['public', 'read', 'enqueue']),
  worker: new Set(['public', 'read', 'work']),
  admin: new Set(['public', 'read', 'enqueue', 'work', 'admin']),
};

/** The roles that hold a permission, in words: "the producer or admin role". */
export function rolesWith(permission: Permission): string {
  const roles = (Object.keys(allowed) as ApiKeyRole[]).filter((role) => allowed[role].has(permission));
  return `the ${roles.join(' or ')} role`;
}

export const anonymous: Caller = { name: 'anonymous', role: 'admin', scope: null };

/** The key a job records as the one that enqueued it (EnqueueRequest.createdBy): none when no keys are configured. */
export function creatorOf(caller: Caller): JobCreator | undefined {
  return caller === anonymous ? undefined : { name: caller.name, admin: caller.role === 'admin' };
}

interface Key {
  name: string;
  role: ApiKeyRole;
  sha256: Buffer;
  scope: QueueScope | null;
}

export class KeyTable {
  private keys: readonly Key[] = [];

  constructor(keys: readonly ApiKey[]) {
    this.replace(keys);
  }

  /** A reload: from the next request on only these keys are valid. */
  replace(keys: readonly ApiKey[]): void {
    this.keys = keys.map((k) => ({
      name: k.name,
      role: k.role,
      sha256: Buffer.from(k.keySha256, 'hex'),
      scope: k.queues === null ? null : new QueueScope(k.queues),
    }));
  }

  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /** The caller of a request with this Authorization header (undefined: none); throws unauthenticated. */
  identify(header: string | undefined): Caller {
    if (!this.enabled) return anonymous;
    const match = header === undefined ? null : /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
    if (match === null) {
      throw new SeppError('unauthenticated', 'send an API key as the header `Authorization: Bearer <key>`');
    }
    const digest = createHash('sha256').update(match[1]!).digest();
    let found: Key | undefined;
    // Compare against every key so the time taken does not depend on which one matched.
    for (const key of this.keys) {
      if (timingSafeEqual(digest, key.sha256) && found === undefined) found = key;
    }
    if (found === undefined) throw new SeppError('unauthenticated', 'the API key is not valid');
    return { name: found.name, role: found.role, scope: found.scope };
  }

  /**
   * Why a caller identified before the keys changed may not go on with what it
   * began (an event stream), or null: its key is gone, or its role or queues changed.
   */
  changedFor(caller: Caller): SeppError | null {
    if (caller === anonymous && !this.enabled) return null;
    const now = this.keys.find((k) => k.name === caller.name);
    if (now === undefined || caller === anonymous) {
      return new SeppError('unauthenticated', `the API key ${caller.name} was removed by a reload`);
    }
    const scope = (s: QueueScope | null) => s?.describe() ?? null;
    if (now.role !== caller.role || scope(now.scope) !== scope(caller.scope)) {
      return new SeppError(
        'unavailable',
        `the role or queues of API key ${caller.name} changed in a reload; subscribe again`,
      );
    }
    return null;
  }

  /** Throws permission_denied unless the caller's role holds `permission`. */
  static authorize(caller: Caller, permission: Permission, operation: string): void {
    if (allowed[caller.role].has(permission)) return;
    throw new SeppError(
      'permission_denied',
      `API key ${caller.name} has role ${caller.role}, which may not call ${operation} (needs ${rolesWith(permission)})`,
    );
  }
}
