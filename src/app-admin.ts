/**
 * The composition root's admin side: the admin UI and JSON API, with /metrics,
 * served on the admin address (app.ts starts it after gRPC listens).
 */
import {
  type AdminApp,
  type AdminServer,
  type AssetSource,
  createAdminApp,
  mountMetrics,
  type PushStatusView,
  type RateHistory,
  type Readiness,
  type ServerIdentityFacts,
  type ServerInfo,
  type StoreHealth,
  serveAdmin,
} from './admin/index.ts';
import { describeConfig, redactConfig, type SeppConfig } from './config/index.ts';
import type { Clock } from './engine/clock.ts';
import type { Engine } from './engine/engine.ts';
import { type Logger, prometheusContentType, type Telemetry } from './telemetry/index.ts';

/** A TLS certificate and key, read and checked at start. */
export interface TlsPem {
  certPem: Buffer;
  keyPem: Buffer;
}

/** What the admin server is built from. */
export interface AdminParts {
  engine: Engine;
  clock: Clock;
  rates: RateHistory;
  telemetry: Telemetry;
  logger: Logger;
  startedAtMs: number;
  /** Which process this is (host name, instance id, the addresses bound); no secret. */
  identity: () => ServerIdentityFacts;
  build: { version: string; commit: string };
  uiAssets?: AssetSource | null;
  tls: TlsPem | undefined;
  readiness: () => Promise<Readiness>;
  /** The store's health as the maintenance loop saw it last (app-store-outage.ts). */
  storeHealth: () => StoreHealth;
  /** A push queue's delivery status (src/push), for the queue page; null for a queue that does not push. */
  pushStatus: (queue: string) => PushStatusView | null;
}

/** The admin UI and JSON API, with /metrics, on the admin address. */
export async function startAdmin(
  current: () => SeppConfig,
  parts: AdminParts,
): Promise<{ admin: AdminServer; adminApp: AdminApp }> {
  const config = current();
  const { engine, telemetry, logger } = parts;
  const serverInfo = (): ServerInfo => {
    const sizes = engine.store.files?.sizes() ?? { database: 0, wal: 0 };
    return {
      version: parts.build.version,
      commit: parts.build.commit,
      startedAtMs: parts.startedAtMs,
      durability: config.server.durability,
      dbBytes: sizes.database,
      walBytes: sizes.wal,
      store: engine.storeDescription(),
      identity: parts.identity(),
    };
  };
  const adminApp = await createAdminApp({
    engine,
    clock: parts.clock,
    users: config.admin.users,
    // Login is off only with no users, and only on loopback unless the config insists (fail closed).
    open: config.admin.users.length === 0,
    openToAnyHost: config.admin.insecureAllowUnauthenticated,
    sessionTtlMs: config.admin.sessionTtlMs,
    tls: config.admin.tls !== null,
    serverInfo,
    rates: parts.rates,
    effectiveConfig: () => redactConfig(current()),
    configView: () => ({ configFile: current().configFile, entries: describeConfig(current()) }),
    assets: parts.uiAssets ?? null,
    readiness: parts.readiness,
    storeHealth: parts.storeHealth,
    pushStatus: parts.pushStatus,
    log: {
      log: (level, message, fields = {}) =>
        logger[level](
          message,
          Object.fromEntries(
            Object.entries(fields).map(([k, v]) => [
              k,
              v === null || typeof v !== 'object' ? (v as string) : JSON.stringify(v),
            ]),
          ),
        ),
    },
    trustedProxies: config.admin.trustedProxies,
    maxSessionsPerUser: config.admin.maxSessionsPerUser,
    // Prometheus scrapes without a session (with the bearer token, when one is set).
    extend: (hono) =>
      mountMetrics(hono, {
        tokenSha256: () => current().telemetry.metricsTokenSha256,
        contentType: prometheusContentType,
        render: () => telemetry.metricsText(),
      }),
  });
  const { tls } = parts;
  const admin = await serveAdmin(adminApp.app, {
    host: config.server.adminListen.host,
    port: config.server.adminListen.port,
    onWriteTimeout: ({ peer, pendingBytes, timeoutMs }) =>
      parts.logger.warn('admin.write_timeout', {
        peer,
        pending_bytes: pendingBytes,
        detail: `the client took nothing of its answer for ${timeoutMs} ms: connection closed`,
      }),
    ...(tls === undefined ? {} : { tls: { cert: tls.certPem, key: tls.keyPem } }),
  });
  return { admin, adminApp };
}
