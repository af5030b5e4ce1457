/**
 * The audit entry of an admin RPC: the API key's name as actor (`key:NAME`,
 * or `anonymous` when the server has no keys), the action and target as the
 * admin UI names them, and the door it came through (`via`: `cli` for the
 * sepp command, which says so in its user agent, else `grpc`). The engine
 * writes it in the same transaction as the change.
 */
import type { Metadata } from '@grpc/grpc-js';
import type { AuditInput } from '../engine/admin-types.ts';
import type { Caller } from './auth.ts';
import type { RpcContext } from './rpc-context.ts';

/** The user agent prefix of the `sepp` command line (src/cli). */
export const cliUserAgent = 'sepp-cli';

export function rpcAudit(
  ctx: RpcContext,
  caller: Caller,
  metadata: Metadata,
  action: string,
  target: string,
  details: Readonly<Record<string, unknown>> = {},
): AuditInput {
  return {
    actor: ctx.auth.enabled ? `key:${caller.name}` : 'anonymous',
    action,
    target,
    details: { ...details, via: doorOf(metadata) },
  };
}

function doorOf(metadata: Metadata): 'cli' | 'grpc' {
  const [agent] = metadata.get('user-agent');
  return typeof agent === 'string' && agent.startsWith(`${cliUserAgent}/`) ? 'cli' : 'grpc';
}
