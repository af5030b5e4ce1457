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

export function reflectionClient(address: string): ReflectionClient {
  const require = createRequire(join(process.cwd(), 'package.json'));
  const protoPath = join(
    dirname(require.resolve('@grpc/reflection/package.json')),
    'build/proto/grpc/reflection/v1/reflection.proto',
  );
  const definition = grpc.loadPackageDefinition(
    protoLoader.loadSync(protoPath, { keepCase: true, oneofs: true }),
  );
  const reflection = definition.grpc as unknown as {
    reflection: {
      v1: { ServerReflection: new (address: string, creds: grpc.ChannelCredentials) => grpc.Client };
    };
  };
  return new reflection.reflection.v1.ServerReflection(
    address,
    grpc.credentials.createInsecure(),
  ) as ReflectionClient;
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
