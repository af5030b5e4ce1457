/**
 * The shape of sepp's configuration once loaded: typed, with units in the
 * names, paths absolute, secrets reduced to what the server needs, and the
 * whole object frozen. Every layer above reads settings from here and nowhere
 * else. The TOML spelling of each field is its snake_case name
 * (`shutdownTimeoutMs` ⇄ `shutdown_timeout_ms`); docs/configuration.md lists
 * them all.
 */
import type { ScheduleSpec } from '../engine/schedules/types.ts';
import type { EngineOptions, QueueSettings } from '../engine/settings.ts';
import type { ListenAddress } from './listen-address.ts';

export type Durability = 'full' | 'relaxed';
/** Who checkpoints the WAL: `auto` sepp itself; `external` a replicator such as Litestream. */
export type WalCheckpoints = 'auto' | 'external';
/** `file`, or the environment variable (`SEPP_DATA_DIR`) or flag (`--data-dir`) that set a value. */
export type ConfigSource = string;
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
/** `producer`: enqueue and read; `worker`: reserve, ack, nack, extend and read; `admin`: everything. */
export type ApiKeyRole = 'producer' | 'worker' | 'admin';
/** Ordered: `viewer` < `operator` < `admin`. */
export type AdminRole = 'viewer' | 'operator' | 'admin';

export const durabilities: readonly Durability[] = ['full', 'relaxed'];
/** Where the jobs are kept: the embedded SQLite database (the default) or a PostgreSQL database. */
export type StoreKind = 'sqlite' | 'postgres';
export const storeKinds: readonly StoreKind[] = ['sqlite', 'postgres'];
export const walCheckpointModes: readonly WalCheckpoints[] = ['auto', 'external'];
export const logLevels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
export const logFormats: readonly LogFormat[] = ['text', 'json'];
export const apiKeyRoles: readonly ApiKeyRole[] = ['producer', 'worker', 'admin'];
export const adminRoles: readonly AdminRole[] = ['viewer', 'operator', 'admin'];

export type { ListenAddress };

export interface TlsFiles {
  /** PEM certificate chain, absolute path. */
  readonly certFile: string;
  /** PEM private key, absolute path. */
  readonly keyFile: string;
}

export interface ServerConfig {
  /** Directory holding the SQLite database, absolute path. */
  readonly dataDir: string;
  readonly grpcListen: ListenAddress;
  readonly adminListen: ListenAddress;
  /** Where the HTTP/JSON API for applications listens (src/http/); null: it is off. */
  readonly httpListen: ListenAddress | null;
  /** `full`: fsync every commit; `relaxed`: survives a process crash, not a power cut. */
  readonly durability: Durability;
  /** `auto`: sepp checkpoints the WAL; `external`: never (Litestream does, docs/replication.md). */
  readonly walCheckpoints: WalCheckpoints;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** How long a graceful shutdown may take before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /** Room kept free in the data directory (`sepp.reserve`) so that workers can drain a full disk; 0 keeps none. */
  readonly diskReserveBytes: number;
}

export interface ApiKey {
  /** Shown in logs and audit entries; never the key itself. */
  readonly name: string;
  readonly role: ApiKeyRole;
  /**
   * The queue name patterns (`billing-*`) the key may use, whatever its role;
   * null: every queue. config/queue-scope.ts says what a pattern matches.
   */
  readonly queues: readonly string[] | null;
  /**
   * SHA-256 of the key, lower-case hex. A key written in plain text in the
   * config is hashed at load time, so the loaded config never holds it: the
   * server hashes each presented bearer token and compares digests in
   * constant time.
   */
  readonly keySha256: string;
}

export interface GrpcConfig {
  readonly tls: TlsFiles | null;
  /** Empty means no authentication (allowed on loopback only, unless insecure). */
  readonly apiKeys: readonly ApiKey[];
  /** Serve without API keys on a non-loopback address. */
  readonly insecureAllowUnauthenticated: boolean;
  /** Largest gRPC message accepted or sent; always room for the largest payload. */
  readonly maxMessageBytes: number;
  /** Connections open at once; one more is closed as it arrives. */
  readonly maxConnections: number;
  /** Calls open at once on one connection (HTTP/2 concurrent streams). */
  readonly maxStreamsPerConnection: number;
  /** A new connection must finish its TLS handshake and open its first call within this. */
  readonly handshakeTimeoutMs: number;
  /** A connection with no call open for this long is closed; clients reconnect when they need to. */
  readonly idleTimeoutMs: number;
  /**
   * The server pings every connection this long after its last ping was
   * answered, whether or not a call is open, so that a client gone without
   * closing its connection (its machine lost, a NAT that dropped the flow)
   * does not keep its Work streams counted as waiting for jobs.
   */
  readonly keepaliveMs: number;
  /** A ping unanswered for this long closes the connection, ending its calls. */
  readonly keepaliveTimeoutMs: number;
  /**
   * A call must send its first message (a Work stream its subscribe, a
   * Produce stream its first batch, Events and unary calls their request)
   * within this after its headers, or it ends with RESOURCE_EXHAUSTED: a
   * stream that never says what it wants cannot hold a slot until its
   * connection closes. Time the server itself holds the message back
   * (grpc.max_bytes_in_flight_*) does not count.
   */
  readonly firstMessageTimeoutMs: number;
  /**
   * Events streams one API key may hold at once (a share of
   * limits.max_event_subscribers), so one key cannot take every slot.
   * Without keys there is no one to tell apart, and it does not apply.
   */
  readonly maxEventSubscribersPerKey: number;
  /**
   * Request bytes one connection may have in flight (read and not yet
   * done with); a message is read on only once its bytes fit. Also, apart,
   * the unary answers not yet sent (rpc/unsent-answers.ts). At least
   * maxMessageBytes.
   */
  readonly maxBytesInFlightPerConnection: number;
  /** The same for all connections of one API key (of all callers, on a server without keys). */
  readonly maxBytesInFlightPerKey: number;
}

/**
 * The HTTP/JSON API for applications (docs/http.md). It uses the API keys of
 * `[[grpc.api_keys]]` and their roles; these are its own socket's limits.
 */
export interface HttpConfig {
  readonly tls: TlsFiles | null;
  /** Serve without API keys on a non-loopback address (only when no API keys are configured). */
  readonly insecureAllowUnauthenticated: boolean;
  /** Largest request body; a larger one is refused (413) before it is read. */
  readonly maxRequestBytes: number;
  /** Request bytes the server holds at once (bodies being read and handled), over all callers. */
  readonly maxInFlightBytes: number;
  /** Of those, what the callers of one API key (or all keyless callers together) may hold. */
  readonly maxInFlightBytesPerKey: number;
  /** Connections open at once; one more is closed as it arrives. */
  readonly maxConnections: number;
  /** A client must send a request's headers within this. */
  readonly headersTimeoutMs: number;
  /** A client must send a whole request, body included, within this. */
  readonly requestTimeoutMs: number;
  /** A keep-alive connection with no request for this long is closed. */
  readonly idleTimeoutMs: number;
  /** A connection whose client takes nothing of an answer for this long is closed (reloadable). */
  readonly writeTimeoutMs: number;
}

/**
 * A secret the config reads from a file or an environment variable (a push
 * target's signing secret, the PostgreSQL password) when it is loaded. It is
 * never part of any rendering of the config: JSON and `util.inspect` show
 * `<redacted>`.
 */
export interface ConfigSecret {
  /** The secret's bytes; empty only when the loader could not read secrets (`sepp config check`). */
  reveal(): Buffer;
  /** SHA-256 of the secret (hex), so a reload can tell a changed secret without keeping a second copy in view. */
  readonly sha256: string;
  toJSON(): string;
}

/** A push target's signing secret (HMAC-SHA256). */
export type PushSecret = ConfigSecret;

/**
 * `[store]`: where the jobs are kept. `sqlite` (the default) uses `server.data_dir`;
 * `postgres` connects to `url` (docs/postgres.md), and the settings below apply to it only.
 */
export interface StoreConfig {
  readonly kind: StoreKind;
  /** postgres:// or postgresql:// URL without a password; null for sqlite. */
  readonly url: string | null;
  /** Where the database password was read from: a file (absolute path)… */
  readonly passwordFile: string | null;
  /** …or an environment variable; both null: the URL's server needs no password. */
  readonly passwordEnv: string | null;
  /** The password itself, shown redacted everywhere; null when none is given. */
  readonly password: ConfigSecret | null;
  /** Connections each sepp server opens to PostgreSQL (one of them the writer), besides its listener. */
  readonly poolSize: number;
  /** Reads that may wait for a read connection at once; one more is refused (RESOURCE_EXHAUSTED, 429). */
  readonly maxWaitingReads: number;
  /** Read calls one API key may have in flight while reads wait; one more is refused (RESOURCE_EXHAUSTED, 429). */
  readonly maxWaitingReadsPerKey: number;
  /** A statement running longer than this is cancelled (PostgreSQL's statement_timeout), and so is a transaction idle longer, but at least 10 s (idle_in_transaction_session_timeout). */
  readonly statementTimeoutMs: number;
  /** The PostgreSQL schema holding sepp's tables, created and migrated at start. */
  readonly schema: string;
}

/** `[queues.NAME.push]`: deliver the queue's jobs to an HTTP endpoint (src/push/, docs/http.md). */
export interface PushTarget {
  /** http:// or https:// URL the jobs are POSTed to. */
  readonly url: string;
  /** Where the signing secret was read from: a file (absolute path)… */
  readonly secretFile: string | null;
  /** …or an environment variable. */
  readonly secretEnv: string | null;
  readonly secret: PushSecret;
  /** A delivery that has not answered within this is a failed attempt. */
  readonly timeoutMs: number;
  /** Deliveries open at once for this queue, at most; the queue's max_leased and rate limits may allow fewer. */
  readonly maxInFlight: number;
  /** Allow targets on loopback, private, link-local and other non-public addresses (refused by default: SSRF). */
  readonly allowPrivateTargets: boolean;
}

export interface AdminUser {
  readonly name: string;
  readonly role: AdminRole;
  /** scrypt hash in PHC form, from `sepp admin hash-password` (see password-hash.ts). */
  readonly passwordHash: string;
}

export interface AdminConfig {
  readonly tls: TlsFiles | null;
  /** Empty means no login (allowed on loopback only, unless insecure). */
  readonly users: readonly AdminUser[];
  /** A session expires this long after login. */
  readonly sessionTtlMs: number;
  /** Serve the admin UI without users on a non-loopback address. */
  readonly insecureAllowUnauthenticated: boolean;
  /**
   * Proxies whose `X-Forwarded-For` is believed, as `address/prefix` ranges.
   * Empty: the client is the socket's peer, whatever the header says.
   */
  readonly trustedProxies: readonly string[];
  /** Sessions one user may hold at once; a login beyond it ends that user's oldest. */
  readonly maxSessionsPerUser: number;
}

export interface TelemetryConfig {
  /** OTLP/HTTP collector base URL (e.g. http://localhost:4318); null = no push. */
  readonly otlpEndpoint: string | null;
  /** `service.name` resource attribute of everything exported. */
  readonly serviceName: string;
  /** Share of traces sampled, 0..1 (used only when otlpEndpoint is set). */
  readonly tracesSampleRatio: number;
  /** How often metrics are pushed over OTLP. */
  readonly metricsExportIntervalMs: number;
  /**
   * SHA-256 (lower-case hex) of the bearer token /metrics requires; null
   * serves /metrics without one. A token written in plain text is hashed at
   * load time, like an API key.
   */
  readonly metricsTokenSha256: string | null;
}

/** EngineOptions with every declared queue's settings fully resolved. */
export interface EngineConfig extends EngineOptions {
  readonly queues: Readonly<Record<string, QueueSettings>>;
  /** `[[schedules]]`, checked; the engine reconciles them when it opens and on a reload. */
  readonly schedules: readonly ScheduleSpec[];
}

export interface SeppConfig {
  /** The file the settings came from (absolute), or null when none was used. */
  readonly configFile: string | null;
  /**
   * The settings of the config file that hold a secret in plain text
   * (`grpc.api_keys[0].key`, `telemetry.metrics_token`): the file must not be
   * readable by others (file-permissions.ts warns).
   */
  readonly plaintextSecrets: readonly string[];
  /**
   * Where each setting that is not at its default came from, by TOML key
   * (`server.data_dir`, `grpc.api_keys[0].name`, `queues.emails.max_attempts`):
   * `file`, or the environment variable or flag that set it. A key that is
   * absent has its default.
   */
  readonly sources: Readonly<Record<string, ConfigSource>>;
  readonly server: ServerConfig;
  readonly store: StoreConfig;
  readonly grpc: GrpcConfig;
  readonly admin: AdminConfig;
  readonly http: HttpConfig;
  readonly telemetry: TelemetryConfig;
  /** Queues whose jobs are pushed to an HTTP endpoint, by queue name (`[queues.NAME.push]`). */
  readonly push: Readonly<Record<string, PushTarget>>;
  /** Ready to hand to the engine. */
  readonly engine: Readonly<EngineConfig>;
}

/**
 * The command-line flags that carry settings, as the CLI parsed them. Values
 * are the raw strings: validation happens here, once, with the same messages
 * as for the file.
 */
export interface ConfigFlags {
  readonly config?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly grpcListen?: string | undefined;
  readonly adminListen?: string | undefined;
  readonly httpListen?: string | undefined;
  readonly durability?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly logFormat?: string | undefined;
}
