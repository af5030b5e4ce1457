/**
 * API-key authentication and role checks for gRPC calls.
 *
 * Keys travel as `authorization: Bearer <key>` metadata. The server keeps only
 * SHA-256 digests and compares digests in constant time, so neither the config
 * (which may hold digests only) nor a timing side channel gives a key away.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Metadata } from '@grpc/grpc-js';
import type { QueueScope } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import type { JobCreator } from '../engine/jobs/index.ts';

export type ApiRole = 'producer' | 'worker' | 'admin';

export interface ApiKey {
  name: string;
  role: ApiRole;
  /** SHA-256 of the key. */
  sha256: Buffer;
  /** The queues it may use (`queues` in its config entry); null: every queue. */
  scope: QueueScope | null;
}

export interface Caller {
  /** Key name, or `anonymous` when authentication is off. */
  name: string;
  role: ApiRole;
  /** The queues it may use; null: every queue (queue-scope-rules.ts checks each call). */
  scope: QueueScope | null;
}

/** The caller when no keys are configured: everything, every queue. */
const anonymous: Caller = { name: 'anonymous', role: 'admin', scope: null };

/** The key a job records as the one that enqueued it (EnqueueRequest.createdBy): none when no keys are configured. */
export function creatorOf(caller: Caller): JobCreator | undefined {
  return caller === anonymous ? undefined : { name: caller.name, admin: caller.role === 'admin' };
}

/** What each RPC needs. `read` is open to every role. */
export type Permission = 'read' | 'enqueue' | 'work' | 'admin';

const allowed: Record<ApiRole, ReadonlySet<Permission>> = {
  producer: new Set(['read', 'enqueue']),
  worker: new Set(['read', 'work']),
  admin: new Set(['read', 'enqueue', 'work', 'admin']),
};

/** "needs the admin role", "needs the producer or admin role": from the table, so it cannot disagree. */
export function rolesAllowed(permission: Permission): string {
  const roles = (Object.keys(allowed) as ApiRole[]).filter((role) => allowed[role].has(permission));
  return `needs the ${roles.join(' or ')} role`;
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export class Authenticator {
  /** Callers identified so far, by their call's metadata: the key is checked once per call (until the keys change). */
  private identified = new WeakMap<Metadata, Caller>();

  constructor(private keys: readonly ApiKey[]) {}

  /** Replaces the keys (a config reload): from the next call on, only these are valid; open calls are identified again. */
  replaceKeys(keys: readonly ApiKey[]): void {
    this.keys = keys;
    this.identified = new WeakMap();
  }

  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /**
   * Identifies the caller by its key; throws unauthenticated. The server does
   * this as soon as a call's headers arrive (admission.ts), before its body.
   */
  authenticate(metadata: Metadata): Caller {
    if (!this.enabled) return anonymous;
    const known = this.identified.get(metadata);
    if (known !== undefined) return known;
    const caller = this.identify(metadata);
    this.identified.set(metadata, caller);
    return caller;
  }

  /** Identifies the caller and checks the permission; throws unauthenticated / permission_denied. */
  authorize(metadata: Metadata, permission: Permission, rpc: string): Caller {
    if (!this.enabled) return anonymous;
    const caller = this.authenticate(metadata);
    if (!allowed[caller.role].has(permission)) {
      throw new SeppError(
        'permission_denied',
        `API key ${caller.name} has role ${caller.role}, which may not call ${rpc} (${rolesAllowed(permission)})`,
      );
    }
    return caller;
  }

  private identify(metadata: Metadata): Caller {
    const values = metadata.get('authorization');
    const header = values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
    const match = header === undefined ? null : /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
    if (match === null) {
      throw new SeppError('unauthenticated', 'send an API key as metadata `authorization: Bearer <key>`');
    }
    const digest = sha256(match[1]!);
    let found: ApiKey | undefined;
    // Compare against every key so the time taken does not depend on which one matched.
    for (const key of this.keys) {
      if (timingSafeEqual(digest, key.sha256) && found === undefined) found = key;
    }
    if (found === undefined) throw new SeppError('unauthenticated', 'the API key is not valid');
    return { name: found.name, role: found.role, scope: found.scope };
  }
}
