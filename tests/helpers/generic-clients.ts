/**
 * Clients for the standard services a sepp server also serves, built the way
 * generic tools build them: grpc.health.v1.Health from grpc-health-check's
 * definition, and grpc.reflection.v1.ServerReflection from the .proto that
 * @grpc/reflection ships.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';

export interface HealthClient extends grpc.Client {
  check(
    request: { service: string },
    metadata: grpc.Metadata,
    callback: (error: grpc.ServiceError | null, reply: { status: string }) => void,
  ): void;
}

export function healthClient(address: string): HealthClient {
  const Health = grpc.makeGenericClientConstructor(healthService, 'Health');
  return new Health(address, grpc.credentials.createInsecure()) as unknown as HealthClient;
}

/** One health check; resolves with the status (`SERVING`, …). */
export function checkHealth(
  client: HealthClient,
  service: string,
  metadata = new grpc.Metadata(),
): Promise<string> {
  return new Promise((resolve, reject) =>
    client.check({ service }, metadata, (error, reply) => (error ? reject(error) : resolve(reply.status))),
  );
}

type ReflectionMessage = Record<string, unknown>;

export interface ReflectionClient extends grpc.Client {
  ServerReflectionInfo(
    metadata?: grpc.Metadata,
  ): grpc.ClientDuplexStream<ReflectionMessage, ReflectionMessage>;
}

/** A ServerReflection client of `version` (v1 by default; v1alpha is what older tools ask). */
export function reflectionClient(address: string, version: 'v1' | 'v1alpha' = 'v1'): ReflectionClient {
  const require = createRequire(join(process.cwd(), 'package.json'));
  const protoPath = join(
    dirname(require.resolve('@grpc/reflection/package.json')),
    `build/proto/grpc/reflection/${version}/reflection.proto`,
  );
  const definition = grpc.loadPackageDefinition(
    protoLoader.loadSync(protoPath, { keepCase: true, oneofs: true }),
  );
  const reflection = definition.grpc as unknown as {
    reflection: Record<
      string,
      { ServerReflection: new (address: string, creds: grpc.ChannelCredentials) => grpc.Client }
    >;
  };
  const ServerReflection = reflection.reflection[version]!.ServerReflection;
  return new ServerReflection(address, grpc.credentials.createInsecure()) as ReflectionClient;
}

/** Sends `requests` in order on one stream and resolves with the answers, in order. */
export function askReflectionMany(
  client: ReflectionClient,
  requests: readonly ReflectionMessage[],
  metadata = new grpc.Metadata(),
): Promise<ReflectionMessage[]> {
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo(metadata);
    const answers: ReflectionMessage[] = [];
    stream.on('data', (reply: ReflectionMessage) => {
      answers.push(reply);
      if (answers.length === requests.length) {
        stream.end();
        resolve(answers);
      }
    });
    stream.on('error', reject);
    for (const request of requests) stream.write(request);
  });
}

/** Sends one reflection request on a new stream and resolves with the first answer. */
export function askReflection(
  client: ReflectionClient,
  request: ReflectionMessage,
  metadata = new grpc.Metadata(),
): Promise<ReflectionMessage> {
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo(metadata);
    stream.on('data', (reply: ReflectionMessage) => {
      resolve(reply);
      stream.end();
    });
    stream.on('error', reject);
    stream.write(request);
  });
}
