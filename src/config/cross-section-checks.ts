/**
 * Rules that span sections: the gRPC message size against the largest
 * payload and result, and the fail-closed rule of SPEC §6 (no credentials on
 * an address other machines can reach).
 */
import type { EngineLimits } from '../engine/settings.ts';
import type { ConfigReader, Table } from './reader.ts';
import { grpcEnvelopeAllowanceBytes } from './schema.ts';
import type { AdminConfig, GrpcConfig, ServerConfig } from './types.ts';
import { formatSizeBytes } from './units.ts';

/**
 * The message size must fit one job with the largest payload any queue
 * accepts, its metadata and the envelope; when not set, it grows to fit.
 */
export function resolveMaxMessageBytes(
  reader: ConfigReader,
  configured: number | undefined,
  fallback: number,
  payloads: { key: string; bytes: number }[],
  limits: EngineLimits,
): number {
  const largest = payloads.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const neededBytes = largest.bytes + limits.maxMetadataBytes + grpcEnvelopeAllowanceBytes;
  if (configured === undefined) return Math.max(fallback, neededBytes);
  if (configured < neededBytes && !reader.failed.has('grpc.max_message_bytes')) {
    reader.problem(
      'grpc.max_message_bytes',
      `${configured} is too small for the largest payload (${largest.key} = ${largest.bytes}) plus ` +
        `limits.max_metadata_bytes (${limits.maxMetadataBytes}) and ${formatSizeBytes(grpcEnvelopeAllowanceBytes)} ` +
        `of framing; set it to at least ${neededBytes} or lower that payload limit`,
    );
  }
  return configured;
}

/** SPEC §6: a non-loopback address with no credentials refuses to start unless explicitly insecure. */
export function checkFailClosed(
  reader: ConfigReader,
  server: ServerConfig,
  grpc: GrpcConfig,
  admin: AdminConfig,
  written: { grpcTable: Table | undefined; adminTable: Table | undefined },
): void {
  const { grpcTable, adminTable } = written;
  const rules = [
    {
      section: 'grpc',
      listen: server.grpcListen,
      listenKey: 'server.grpc_listen',
      // Entries written but invalid count too: their own problems say what to fix.
      credentials: Array.isArray(grpcTable?.api_keys) ? grpcTable.api_keys.length : grpc.apiKeys.length,
      credentialsKey: 'grpc.api_keys',
      what: 'API keys',
      add: 'add a key as a [[grpc.api_keys]] table (`sepp admin new-api-key --name NAME --role ROLE` prints one)',
      insecure: grpc.insecureAllowUnauthenticated,
    },
    {
      section: 'admin',
      listen: server.adminListen,
      listenKey: 'server.admin_listen',
      credentials: Array.isArray(adminTable?.users) ? adminTable.users.length : admin.users.length,
      credentialsKey: 'admin.users',
      what: 'admin users',
      add: 'add a user as an [[admin.users]] table (hash from `sepp admin hash-password`)',
      insecure: admin.insecureAllowUnauthenticated,
    },
  ];
  for (const rule of rules) {
    const insecureKey = `${rule.section}.insecure_allow_unauthenticated`;
    if (rule.credentials > 0 && rule.insecure) {
      reader.problem(
        insecureKey,
        `is true but ${rule.credentialsKey} is set, and with ${rule.what} every request must authenticate; ` +
          `remove ${rule.section}.insecure_allow_unauthenticated or the ${rule.what}`,
      );
    }
    if (!rule.listen.loopback && rule.credentials === 0 && !rule.insecure) {
      reader.problem(
        rule.credentialsKey,
        `none configured, and ${rule.listenKey} (${rule.listen.address}) is reachable from other machines, ` +
          `so anyone could connect without authentication; ${rule.add}, listen on a loopback address ` +
          `such as 127.0.0.1, or set ${insecureKey} = true to serve without authentication`,
      );
    }
  }
}
