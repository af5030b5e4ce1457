/**
 * Turns a parsed TOML document (plus overrides) into a SeppConfig: reads each
 * section, fills in defaults, then checks the rules that span settings —
 * lease and backoff ordering, message size against payload size, unique
 * credentials, and the fail-closed rules of SPEC §6. Each kind of section is
 * read by a module of its own (credentials.ts, tls-section.ts,
 * declared-queues.ts, schedules.ts); this file puts them in order.
 */
import type { QueueSettingKey } from '../engine/settings.ts';
import { readAdminUsers, readApiKeys, readTelemetry } from './credentials.ts';
import {
  checkFailClosed,
  checkHttpBounds,
  messagePayloads,
  resolveBytesInFlight,
  resolveMaxMessageBytes,
  resolveMaxRequestBytes,
} from './cross-section-checks.ts';
import { asWritten, readQueues } from './declared-queues.ts';
import { readPushTargets } from './push-targets.ts';
import { checkQueue } from './queue-checks.ts';
import { asTable, type ConfigReader, tomlKey } from './reader.ts';
import { readSchedules } from './schedules.ts';
import {
  adminSpec,
  engineSpec,
  grpcSpec,
  httpSpec,
  limitsSpec,
  queueSpec,
  rootKeys,
  serverSpec,
} from './schema.ts';
import type { SecretIo } from './secret-source.ts';
import { complete, withDefaults } from './section-defaults.ts';
import { readStore } from './store-section.ts';
import { readTls, type TlsCheckIo } from './tls-section.ts';
import type { AdminConfig, EngineConfig, GrpcConfig, HttpConfig, SeppConfig } from './types.ts';

/** What the build may read: the TLS files and, when given, push signing secrets (files and variables). */
export type BuildIo = TlsCheckIo & { readonly secrets?: SecretIo | undefined };

/** Builds the configuration; problems go to the reader, and the result is only meaningful when there are none. */
export function buildConfig(
  reader: ConfigReader,
  document: unknown,
  configFile: string | null,
  io: BuildIo,
): SeppConfig {
  const root = asTable(document) ?? {};
  for (const key of Object.keys(root)) {
    if (!rootKeys.includes(key)) reader.unknownKey('', '', key, rootKeys);
  }
  // Sections are read in the order the example file has them, so problems
  // are listed roughly in file order; checks across sections come last.
  const server = withDefaults(reader, 'server', serverSpec, root.server);
  const store = readStore(reader, root.store, io.secrets);

  const grpcTable = asTable(root.grpc);
  const grpcGiven = reader.section('grpc', grpcSpec, root.grpc, { nested: ['tls', 'api_keys'] });
  const grpcScalars = complete(reader, grpcSpec, grpcGiven);
  const grpcTls = readTls(reader, 'grpc.tls', grpcTable?.tls, io);
  const plaintextSecrets: string[] = [];
  const apiKeys = readApiKeys(reader, grpcTable?.api_keys, plaintextSecrets);

  const adminTable = asTable(root.admin);
  const adminScalars = withDefaults(reader, 'admin', adminSpec, root.admin, ['tls', 'users']);
  const admin: AdminConfig = {
    tls: readTls(reader, 'admin.tls', adminTable?.tls, io),
    users: readAdminUsers(reader, adminTable?.users),
    ...adminScalars,
  };

  const httpTable = asTable(root.http);
  const httpScalars = withDefaults(reader, 'http', httpSpec, root.http, ['tls']);
  const httpTls = readTls(reader, 'http.tls', httpTable?.tls, io);

  const telemetry = readTelemetry(reader, root.telemetry, plaintextSecrets);
  const engineScalars = withDefaults(reader, 'engine', engineSpec, root.engine);
  const limits = withDefaults(reader, 'limits', limitsSpec, root.limits);
  const queueDefaultsGiven = reader.section('queue_defaults', queueSpec, root.queue_defaults);
  const queueDefaultsFlat = complete(reader, queueSpec, queueDefaultsGiven);
  checkQueue(reader, 'queue_defaults', queueDefaultsFlat, queueDefaultsGiven, limits);
  const declared = readQueues(reader, root.queues, queueDefaultsFlat, limits);
  const { queues } = declared;

  if (
    engineScalars.strictQueues &&
    Object.keys(queues).length === 0 &&
    !reader.failed.has('engine.strict_queues')
  ) {
    reader.problem(
      'engine.strict_queues',
      'is true but no queue is declared, so every enqueue would be refused; declare queues as [queues.NAME] tables or set strict_queues = false',
    );
  }

  const payloads = messagePayloads(queueDefaultsFlat, queues, limits);
  const maxMessageBytes = resolveMaxMessageBytes(
    reader,
    grpcGiven.maxMessageBytes,
    grpcScalars.maxMessageBytes,
    payloads,
    limits,
  );
  const grpc: GrpcConfig = {
    tls: grpcTls,
    apiKeys,
    insecureAllowUnauthenticated: grpcScalars.insecureAllowUnauthenticated,
    maxMessageBytes,
    maxConnections: grpcScalars.maxConnections,
    maxStreamsPerConnection: grpcScalars.maxStreamsPerConnection,
    handshakeTimeoutMs: grpcScalars.handshakeTimeoutMs,
    idleTimeoutMs: grpcScalars.idleTimeoutMs,
    keepaliveMs: grpcScalars.keepaliveMs,
    keepaliveTimeoutMs: grpcScalars.keepaliveTimeoutMs,
    firstMessageTimeoutMs: grpcScalars.firstMessageTimeoutMs,
    maxEventSubscribersPerKey: grpcScalars.maxEventSubscribersPerKey,
    maxBytesInFlightPerConnection: resolveBytesInFlight(
      reader,
      'grpc.max_bytes_in_flight_per_connection',
      grpcGiven.maxBytesInFlightPerConnection,
      grpcScalars.maxBytesInFlightPerConnection,
      maxMessageBytes,
    ),
    maxBytesInFlightPerKey: resolveBytesInFlight(
      reader,
      'grpc.max_bytes_in_flight_per_key',
      grpcGiven.maxBytesInFlightPerKey,
      grpcScalars.maxBytesInFlightPerKey,
      maxMessageBytes,
    ),
  };

  const { maxRequestBytes, ...httpRest } = httpScalars;
  const http: HttpConfig = {
    tls: httpTls,
    ...httpRest,
    maxRequestBytes: resolveMaxRequestBytes(reader, maxRequestBytes, payloads, limits),
  };
  checkHttpBounds(reader, http);
  const push = readPushTargets(reader, root.queues, io.secrets);
  for (const [name, target] of Object.entries(push)) {
    // Credentials in the URL (user:password@, a token in the query) make the file hold a secret.
    const url = new URL(target.url);
    if (url.username !== '' || url.password !== '' || url.search !== '') {
      plaintextSecrets.push(`queues.${tomlKey(name)}.push.url`);
    }
  }

  checkFailClosed(reader, server, grpc, admin, http, { grpcTable, adminTable });

  const engineOptions = {
    strictQueues: engineScalars.strictQueues,
    limits,
    queueDefaults: asWritten(queueDefaultsFlat),
    queues,
    fileKeys: {
      queueDefaults: Object.keys(queueDefaultsGiven) as QueueSettingKey[],
      queues: declared.given,
    },
  };
  const engine: EngineConfig = {
    ...engineOptions,
    schedules: readSchedules(reader, root.schedules, engineOptions, Date.now()),
  };
  return {
    configFile,
    plaintextSecrets,
    sources: Object.fromEntries(reader.sources),
    server,
    store,
    grpc,
    admin,
    http,
    telemetry,
    push,
    engine,
  };
}
