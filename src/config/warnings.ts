/**
 * Settings that are allowed but risky. The server logs each at startup as a
 * warning (SPEC §8); none of them stops it.
 */
import { parsePostgresUrl, postgresTlsOf } from '../store/postgres-url.ts';
import { isLoopbackHost } from './listen-address.ts';
import { tomlKey } from './reader.ts';
import { serverSpec } from './schema.ts';
import type { SeppConfig } from './types.ts';

export interface ConfigWarning {
  /** The setting to look at. */
  readonly key: string;
  readonly message: string;
}

export function configWarnings(config: SeppConfig): ConfigWarning[] {
  const { server, grpc, admin, http, telemetry } = config;
  const warnings: ConfigWarning[] = [];
  const warn = (key: string, message: string) => warnings.push({ key, message });

  if (config.store.kind === 'postgres') {
    // What only the SQLite store reads is ignored by the PostgreSQL store: said, not silent
    // (docs/postgres.md, "What the PostgreSQL store does not do").
    const ignored = (key: string, why: string) =>
      warn(key, `means nothing with store.kind = "postgres" and is ignored: ${why} (docs/postgres.md)`);
    if (server.durability === 'relaxed') {
      ignored(
        'server.durability',
        'commits follow PostgreSQL\'s synchronous_commit; a queue\'s own durability = "relaxed" lets its commits skip the flush',
      );
    }
    if (server.walCheckpoints === 'external') {
      ignored('server.wal_checkpoints', 'PostgreSQL keeps its own WAL, and Litestream does not apply');
    }
    if (server.diskReserveBytes !== serverSpec.diskReserveBytes.default) {
      ignored(
        'server.disk_reserve_bytes',
        "the disk reserve is the SQLite store's; watch the database's disk",
      );
    }
    const clear = hostsInClearText(config.store.url);
    if (clear.length > 0) {
      warn(
        'store.url',
        `has no sslmode=verify-full: the jobs cross the network to ${clear.join(', ')} in clear text (and the password, if pg_hba.conf asks for it by "password" rather than "scram-sha-256"); add sslmode=verify-full, with sslrootcert=FILE for a private CA (docs/postgres.md)`,
      );
    }
  } else {
    if (server.durability === 'relaxed') {
      warn(
        'server.durability',
        'relaxed: commits are not fsync\'d, so a power cut or kernel crash can lose acknowledged operations (a process crash cannot); use "full" unless that is acceptable',
      );
    }

    if (server.walCheckpoints === 'external') {
      warn(
        'server.wal_checkpoints',
        'external: sepp never checkpoints the WAL, so it grows with every commit unless Litestream (or another tool) checkpoints it; watch sepp_db_file_size{sepp_db_file="wal"} (docs/replication.md)',
      );
    }
  }

  const surfaces = [
    {
      name: 'gRPC',
      listen: server.grpcListen,
      listenKey: 'server.grpc_listen',
      credentials: grpc.apiKeys.length,
      credentialsKey: 'grpc.api_keys',
      secrets: 'API keys',
      tls: grpc.tls,
      tlsKey: 'grpc.tls',
    },
    {
      name: 'the admin UI',
      listen: server.adminListen,
      listenKey: 'server.admin_listen',
      credentials: admin.users.length,
      credentialsKey: 'admin.users',
      secrets: 'passwords and session cookies',
      tls: admin.tls,
      tlsKey: 'admin.tls',
    },
    ...(server.httpListen === null
      ? []
      : [
          {
            name: 'the HTTP API',
            listen: server.httpListen,
            listenKey: 'server.http_listen',
            credentials: grpc.apiKeys.length,
            credentialsKey: 'grpc.api_keys',
            secrets: 'API keys',
            tls: http.tls,
            tlsKey: 'http.tls',
          },
        ]),
  ];
  for (const s of surfaces) {
    if (s.credentials === 0 && s.listen.loopback) {
      warn(
        s.credentialsKey,
        `none configured, so every process on this machine can use ${s.name} at ${s.listen.address} without authentication`,
      );
    } else if (s.credentials === 0) {
      warn(
        s.credentialsKey,
        `none configured and insecure_allow_unauthenticated is set: anyone who can reach ${s.listen.address} can use ${s.name}`,
      );
    } else if (!s.listen.loopback && s.tls === null) {
      warn(
        s.tlsKey,
        `not set: ${s.name} at ${s.listen.address} is reachable from other machines and ${s.secrets} cross the network in clear text; configure [${s.tlsKey}]`,
      );
    }
  }

  for (const [queue, target] of Object.entries(config.push)) {
    const url = new URL(target.url);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname.replace(/^\[(.*)\]$/, '$1'))) {
      warn(
        `queues.${tomlKey(queue)}.push.url`,
        `is http://: the jobs of ${queue} cross the network in clear text (the signature proves who sent them, it does not hide them); use https://`,
      );
    }
  }

  if (telemetry.otlpEndpoint !== null && telemetry.tracesSampleRatio === 0) {
    warn('telemetry.traces_sample_ratio', 'is 0: no traces are exported although otlp_endpoint is set');
  }
  return warnings;
}

/** The hosts of a PostgreSQL URL that sepp would reach without TLS over the network (not loopback, not a Unix socket). */
function hostsInClearText(url: string | null): string[] {
  const target = url === null ? undefined : parsePostgresUrl(url);
  if (target === undefined || target instanceof Error) return [];
  return target.hosts
    .map((h) => new URL(h.url))
    .filter(
      (u) =>
        postgresTlsOf(u.searchParams) === 'none' &&
        !(u.searchParams.get('host') ?? '').startsWith('/') &&
        !isLoopbackHost(u.hostname.replace(/^\[(.*)\]$/, '$1')),
    )
    .map((u) => u.host);
}
