/** Generic tools work without the .proto files: standard health checks and server reflection. */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.dispose());

test('grpc.health.v1.Health reports SERVING for the server and for sepp.v1.QueueService', async () => {
  const Health = grpc.makeGenericClientConstructor(healthService, 'Health');
  const client = new Health(t.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(req: { service: string }, cb: (e: grpc.ServiceError | null, r: { status: string }) => void): void;
  };
  for (const service of ['', 'sepp.v1.QueueService']) {
    const reply = await new Promise<{ status: string }>((resolve, reject) =>
      client.check({ service }, (e, r) => (e ? reject(e) : resolve(r))),
    );
    assert.equal(reply.status, 'SERVING');
  }
  client.close();
});

test('server reflection lists sepp.v1.QueueService and describes its file', async () => {
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
  const client = new reflection.reflection.v1.ServerReflection(
    t.address,
    grpc.credentials.createInsecure(),
  ) as grpc.Client & {
    ServerReflectionInfo(): grpc.ClientDuplexStream<Record<string, unknown>, Record<string, unknown>>;
  };
  const ask = (request: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const stream = client.ServerReflectionInfo();
      stream.on('data', (reply: Record<string, unknown>) => {
        resolve(reply);
        stream.end();
      });
      stream.on('error', reject);
      stream.write(request);
    });
  const listed = (await ask({ list_services: '' })) as {
    list_services_response: { service: { name: string }[] };
  };
  const names = listed.list_services_response.service.map((s) => s.name);
  assert.ok(names.includes('sepp.v1.QueueService'), `services: ${names.join(', ')}`);
  const file = (await ask({ file_containing_symbol: 'sepp.v1.QueueService' })) as {
    file_descriptor_response: { file_descriptor_proto: Buffer[] };
  };
  assert.ok(file.file_descriptor_response.file_descriptor_proto.length > 0);
  assert.ok(
    file.file_descriptor_response.file_descriptor_proto.some((b) =>
      b.toString('latin1').includes('QueueService'),
    ),
  );
  client.close();
});
