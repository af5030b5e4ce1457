/**
 * Rules that span sections: the gRPC message size against the largest
 * payload and result, and the fail-closed rule of SPEC §6 (no credentials on
 * an address other machines can reach).
 */
import type { EngineLimits } from '../engine/settings.ts';
import type { ConfigProblem } from './config-error.ts';
import type { ListenAddress } from './listen-address.ts';
import { ConfigReader, type Table, tomlKey } from './reader.ts';
import { grpcEnvelopeAllowanceBytes } from './schema.ts';
import type { AdminConfig, GrpcConfig, HttpConfig, SeppConfig, ServerConfig } from './types.ts';
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

/** What travels whole in one gRPC message: a job with each queue's largest payload, an ack's result. */
export function messagePayloads(
  queueDefaults: { readonly maxPayloadBytes: number },
  queues: Readonly<Record<string, { readonly maxPayloadBytes: number }>>,
  limits: EngineLimits,
): { key: string; bytes: number }[] {
  return [
    { key: 'queue_defaults.max_payload_bytes', bytes: queueDefaults.maxPayloadBytes },
    ...Object.entries(queues).map(([name, q]) => ({
      key: `queues.${tomlKey(name)}.max_payload_bytes`,
      bytes: q.maxPayloadBytes,
    })),
    // An ack's result travels in one message too (and in the Events stream's).
    { key: 'limits.max_result_bytes', bytes: limits.maxResultBytes },
  ];
}

/**
 * A reload's payload limits against the message sizes the server runs with, which
 * change only with a restart (as run-time overrides are checked): the problems a
 * start would report for `config`, whose grpc.max_message_bytes and
 * http.max_request_bytes are the running ones. The HTTP API's size counts only
 * while it listens: when it does not, nothing reads it.
 */
export function runningMessageSizeProblems(config: SeppConfig): ConfigProblem[] {
  const { maxMessageBytes } = config.grpc;
  const { maxRequestBytes } = config.http;
  const { engine } = config;
  const payloads = messagePayloads(engine.queueDefaults, engine.queues, engine.limits);
  const grpcReader = new ConfigReader(new Map(), '/', '/');
  resolveMaxMessageBytes(grpcReader, maxMessageBytes, maxMessageBytes, payloads, engine.limits);
  const httpReader = new ConfigReader(new Map(), '/', '/');
  if (config.server.httpListen !== null) {
    resolveMaxRequestBytes(httpReader, maxRequestBytes, payloads, engine.limits);
  }
  const running = (reader: ConfigReader, setting: string) =>
    reader.problems.map(({ key, message }) => ({
      key,
      message: `${message} (the server runs with ${setting} until it restarts)`,
    }));
  return [
    ...running(grpcReader, `grpc.max_message_bytes = ${maxMessageBytes}`),
    ...running(httpReader, `http.max_request_bytes = ${maxRequestBytes}`),
  ];
}

/**
 * A budget of request bytes in flight must hold one message of the largest
 * size the server accepts, or such a message could never be read; when not
 * set, it grows to fit.
 */
export function resolveBytesInFlight(
  reader: ConfigReader,
  key: string,
  configured: number | undefined,
  fallback: number,
  maxMessageBytes: number,
): number {
  if (configured === undefined) return Math.max(fallback, maxMessageBytes);
  if (configured < maxMessageBytes && !reader.failed.has(key)) {
    reader.problem(
      key,
      `${configured} is smaller than grpc.max_message_bytes (${maxMessageBytes}), so a message of that size ` +
        `could never be read; set it to at least ${maxMessageBytes}`,
    );
  }
  return configured;
}

/** What an HTTP request may need beyond a base64 payload: JSON names, escaped metadata, framing. */
export const httpEnvelopeAllowanceBytes = 64 * 1024;
/** The HTTP API's default largest request, when the payloads do not need more. */
export const defaultMaxRequestBytes = 6 * 1024 * 1024;

/**
 * The HTTP API's request size must fit one job with the largest payload sent
 * as base64 (4 bytes for every 3), its metadata escaped as JSON (up to 6
 * bytes per byte for control characters; 2 is honest for text) and the JSON
 * around it; when not set, it grows to fit.
 */
export function resolveMaxRequestBytes(
  reader: ConfigReader,
  configured: number | null,
  payloads: { key: string; bytes: number }[],
  limits: EngineLimits,
): number {
  const largest = payloads.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const neededBytes =
    Math.ceil(largest.bytes / 3) * 4 + 2 * limits.maxMetadataBytes + httpEnvelopeAllowanceBytes;
  if (configured === null) return Math.max(defaultMaxRequestBytes, neededBytes);
  if (configured < neededBytes && !reader.failed.has('http.max_request_bytes')) {
    reader.problem(
      'http.max_request_bytes',
      `${configured} is too small for the largest payload (${largest.key} = ${largest.bytes}) sent as base64 ` +
        `(${Math.ceil(largest.bytes / 3) * 4}) plus twice limits.max_metadata_bytes (${limits.maxMetadataBytes}) and ` +
        `${formatSizeBytes(httpEnvelopeAllowanceBytes)} of JSON; set it to at least ${neededBytes} or lower that payload limit`,
    );
  }
  return configured;
}

/** The HTTP API's bounds must admit a request of the largest size, and the per-key share fit the whole. */
export function checkHttpBounds(reader: ConfigReader, http: HttpConfig): void {
  const failed = (key: string) => reader.failed.has(`http.${key}`);
  if (failed('max_in_flight_bytes_per_key') || failed('max_request_bytes') || failed('max_in_flight_bytes'))
    return;
  if (http.maxInFlightBytesPerKey < http.maxRequestBytes) {
    reader.problem(
      'http.max_in_flight_bytes_per_key',
      `${http.maxInFlightBytesPerKey} is below http.max_request_bytes (${http.maxRequestBytes}), so a request of the ` +
        'largest size could never be admitted; raise it or lower max_request_bytes',
    );
  } else if (http.maxInFlightBytes < http.maxInFlightBytesPerKey) {
    reader.problem(
      'http.max_in_flight_bytes',
      `${http.maxInFlightBytes} is below http.max_in_flight_bytes_per_key (${http.maxInFlightBytesPerKey}); raise it or lower the per-key share`,
    );
  }
  if (http.headersTimeoutMs > http.requestTimeoutMs) {
    reader.problem(
      'http.headers_timeout_ms',
      `${http.headersTimeoutMs} is longer than http.request_timeout_ms (${http.requestTimeoutMs}), which already bounds the headers; lower it`,
    );
  }
}

/** One port's side of the fail-closed rule: where it listens and what authenticates callers there. */
export interface CredentialRule {
  readonly section: 'grpc' | 'admin' | 'http';
  readonly listen: ListenAddress;
  readonly listenKey: string;
  /** Credentials configured (entries written but invalid count too: their own problems say what to fix). */
  readonly credentials: number;
  readonly credentialsKey: string;
  readonly what: string;
  readonly add: string;
  readonly insecure: boolean;
}

/**
 * The fail-closed rule's sides, for `server`'s addresses and the credentials of
 * `grpc` and `admin`; and of the HTTP API when it listens (it takes gRPC's keys).
 */
export function credentialRules(
  server: Pick<ServerConfig, 'grpcListen' | 'adminListen' | 'httpListen'>,
  grpc: Pick<GrpcConfig, 'apiKeys' | 'insecureAllowUnauthenticated'>,
  admin: Pick<AdminConfig, 'users' | 'insecureAllowUnauthenticated'>,
  http: Pick<HttpConfig, 'insecureAllowUnauthenticated'>,
  written: { grpcTable: Table | undefined; adminTable: Table | undefined } = {
    grpcTable: undefined,
    adminTable: undefined,
  },
): CredentialRule[] {
  const { grpcTable, adminTable } = written;
  const apiKeys = Array.isArray(grpcTable?.api_keys) ? grpcTable.api_keys.length : grpc.apiKeys.length;
  return [
    {
      section: 'grpc',
      listen: server.grpcListen,
      listenKey: 'server.grpc_listen',
      credentials: apiKeys,
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
    // The HTTP API takes the same API keys as gRPC; its own switch allows it to run without them.
    ...(server.httpListen === null
      ? []
      : [
          {
            section: 'http' as const,
            listen: server.httpListen,
            listenKey: 'server.http_listen',
            credentials: apiKeys,
            credentialsKey: 'grpc.api_keys',
            what: 'API keys',
            add: 'add a key as a [[grpc.api_keys]] table (the HTTP API uses the same keys as gRPC)',
            insecure: http.insecureAllowUnauthenticated,
          },
        ]),
  ];
}

/**
 * SPEC §6: no credentials on an address other machines can reach, unless
 * explicitly insecure. `listening` words it for a running server (a reload),
 * whose address is the one it bound, not the one a new file names.
 */
export function unauthenticatedNetworkProblem(
  rule: CredentialRule,
  listening = false,
): ConfigProblem | undefined {
  if (rule.listen.loopback || rule.credentials > 0 || rule.insecure) return undefined;
  const insecureKey = `${rule.section}.insecure_allow_unauthenticated`;
  const where = listening
    ? `the server listens on ${rule.listen.address} (${rule.listenKey}; a new address takes a restart), which is reachable from other machines`
    : `${rule.listenKey} (${rule.listen.address}) is reachable from other machines`;
  return {
    key: rule.credentialsKey,
    message:
      `none configured, and ${where}, so anyone could connect without authentication; ${rule.add}, ` +
      `listen on a loopback address such as 127.0.0.1, or set ${insecureKey} = true to serve without authentication`,
  };
}

/** SPEC §6: a non-loopback address with no credentials refuses to start unless explicitly insecure. */
export function checkFailClosed(
  reader: ConfigReader,
  server: ServerConfig,
  grpc: GrpcConfig,
  admin: AdminConfig,
  http: HttpConfig,
  written: { grpcTable: Table | undefined; adminTable: Table | undefined },
): void {
  for (const rule of credentialRules(server, grpc, admin, http, written)) {
    const insecureKey = `${rule.section}.insecure_allow_unauthenticated`;
    if (rule.credentials > 0 && rule.insecure) {
      reader.problem(
        insecureKey,
        `is true but ${rule.credentialsKey} is set, and with ${rule.what} every request must authenticate; ` +
          `remove ${rule.section}.insecure_allow_unauthenticated or the ${rule.what}`,
      );
    }
    const problem = unauthenticatedNetworkProblem(rule);
    if (problem !== undefined) reader.problem(problem.key, problem.message);
  }
}
