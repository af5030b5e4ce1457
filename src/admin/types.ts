/**
 * What the admin app needs from the rest of sepp. The composition root
 * (src/app.ts) builds an AdminDeps and calls createAdminApp; nothing in
 * src/admin reads configuration, opens sockets or reads the clock on its own.
 */
import type { Hono } from 'hono';
import type { ConfigEntry } from '../config/index.ts';
import type { Clock } from '../engine/clock.ts';
import type { Engine } from '../engine/engine.ts';
import type { AdminRole, PushStatusView, ServerFacts, StoreHealth } from './api-types.ts';
import type { Readiness } from './health-routes.ts';
import type { LoginPolicy } from './login-throttle.ts';
import type { RateHistory } from './rate-history.ts';

export type { AdminRole };
export const adminRoles: readonly AdminRole[] = ['viewer', 'operator', 'admin'];

export interface AdminUser {
  readonly name: string;
  /** scrypt hash in PHC form ($scrypt$ln=…,r=…,p=…$salt$hash), from `sepp admin hash-password`. */
  readonly passwordHash: string;
  readonly role: AdminRole;
}

/** The engine calls the admin app makes; the real Engine satisfies it. */
export type AdminEngine = Pick<
  Engine,
  | 'limits'
  | 'queuePage'
  | 'getQueue'
  | 'describeQueues'
  | 'queueCounts'
  | 'history'
  | 'getJob'
  | 'listJobs'
  | 'browseJobs'
  | 'searchJobs'
  | 'listWorkers'
  | 'releaseLease'
  | 'listDeadLetterSummaries'
  | 'topErrors'
  | 'findJobByIdempotencyKey'
  | 'enqueue'
  | 'cancel'
  | 'cancelJobs'
  | 'countCancellable'
  | 'countBulk'
  | 'countJobs'
  | 'startBulk'
  | 'getBulkOperation'
  | 'listBulkOperations'
  | 'cancelBulkOperation'
  | 'updateJob'
  | 'updateJobs'
  | 'requeueJob'
  | 'deadLetterJob'
  | 'changeSelectedJobs'
  | 'getFlow'
  | 'cancelFlow'
  | 'getBatch'
  | 'listBatches'
  | 'cancelBatch'
  | 'pauseQueue'
  | 'resumeQueue'
  | 'deleteQueue'
  | 'purgeQueue'
  | 'requeueDeadLetters'
  | 'deleteDeadLetters'
  | 'deadLettersWaitedOn'
  | 'recordAudit'
  | 'listAudit'
  | 'waitingReserves'
  | 'listSchedules'
  | 'getSchedule'
  | 'scheduleRuns'
  | 'pauseSchedule'
  | 'resumeSchedule'
  | 'triggerSchedule'
  | 'store'
  | 'changeQueueSettings'
  | 'queueSettingOverrides'
  | 'enterRead'
>;

/** The server facts the dashboard shows (less the clock's); read on every overview request, so keep it cheap (a stat or two). */
export type ServerInfo = Omit<ServerFacts, 'uptimeMs' | 'serverTimeMs' | 'identity' | 'features'> & {
  identity: NonNullable<ServerFacts['identity']>;
};

/** A file of the built UI, as an asset source hands it out. */
export interface Asset {
  readonly body: Uint8Array;
  /** Overrides the type guessed from the file name. */
  readonly contentType?: string;
}

/**
 * Where the built UI (ui/dist) comes from: the disk when running from source
 * (diskAssetSource), the executable's embedded assets in the single executable.
 * `path` is relative, already checked to hold only safe segments (no `..`,
 * no leading `/`, no backslash); a source must still never read outside its root.
 */
export interface AssetSource {
  get(path: string): Asset | undefined;
}

export interface AdminLogger {
  /** One line per notable event; `fields` never holds secrets (passwords, cookies, tokens). */
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void;
}

export interface AdminDeps {
  engine: AdminEngine;
  /** Sessions, login throttling and uptime are measured on it. */
  clock: Pick<Clock, 'nowMs'>;
  /** Users who may log in. Empty with `open` set: no login. */
  users: readonly AdminUser[];
  /**
   * No login at all: every request acts as `anonymous` with the admin role. The
   * app sets it only when the admin address is loopback and no users are
   * configured. Mutations still need the CSRF token of an anonymous session, and
   * requests must name a loopback host (a defence against DNS rebinding).
   */
  open: boolean;
  /**
   * With `open`, also answer requests naming a non-loopback host: only for the config's
   * explicit insecure opt-in (admin.insecure_allow_unauthenticated). Default false.
   */
  openToAnyHost?: boolean;
  /** A session ends this long after login. */
  sessionTtlMs: number;
  /** Served over TLS: cookies are Secure (and `__Host-` prefixed), HSTS is sent. */
  tls: boolean;
  serverInfo(): ServerInfo;
  /** Fed from the engine's JobEvents by the app (`onEvent: (e) => rates.record(e)`). */
  rates: RateHistory;
  /** The effective configuration, secrets already redacted, as shown on the configuration page. */
  effectiveConfig(): unknown;
  /** The configuration setting by setting (values in plain units, secrets redacted, sources named). */
  configView?(): { configFile: string | null; entries: readonly ConfigEntry[] };
  /** The built UI; null serves the API only. */
  assets: AssetSource | null;
  log?: AdminLogger;
  /**
   * Proxies (`address/prefix`) whose X-Forwarded-For names the client, for login throttling and
   * the audit log (client-address.ts). Default none: the client is the socket's peer.
   */
  trustedProxies?: readonly string[];
  /** Sessions one user may hold; a login beyond it ends the user's oldest. Default 10. */
  maxSessionsPerUser?: number;
  /** Largest request body accepted, in bytes (checked before parsing). Default 2 MiB. */
  maxBodyBytes?: number;
  /** Checks a password against a stored hash. Default: scrypt (password.ts); tests count the calls. */
  verifyPassword?: (password: string, stored: string) => Promise<boolean>;
  /** Login throttling and password-check limits. Default: defaultLoginPolicy (login-throttle.ts). */
  loginPolicy?: LoginPolicy;
  /** Whether sepp can serve now, for `GET /readyz` (health-routes.ts). Default: always ready. */
  readiness?: () => Readiness | Promise<Readiness>;
  /** The store's health as the maintenance loop saw it last (the dashboard). Default: available unless a read fails. */
  storeHealth?: () => StoreHealth;
  /** A push queue's delivery status (the queue page); absent or null: the queue does not push. */
  pushStatus?: (queue: string) => PushStatusView | null;
  /** Adds routes outside /api/v1 before the UI's catch-all (for example `/metrics`). */
  extend?: (app: Hono) => void;
}
