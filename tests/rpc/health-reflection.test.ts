/** Generic tools work without the .proto files: standard health checks and server reflection. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { askReflection, checkHealth, healthClient, reflectionClient } from '../helpers/generic-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.dispose());

test('grpc.health.v1.Health reports SERVING for the server and for sepp.v1.QueueService', async () => {
  const client = healthClient(t.address);
  for (const service of ['', 'sepp.v1.QueueService']) {
    assert.equal(await checkHealth(client, service), 'SERVING');
  }
  client.close();
});

test('server reflection lists sepp.v1.QueueService and describes its file', async () => {
  const client = reflectionClient(t.address);
  const listed = (await askReflection(client, { list_services: '' })) as {
    list_services_response: { service: { name: string }[] };
  };
  const names = listed.list_services_response.service.map((s) => s.name);
  assert.ok(names.includes('sepp.v1.QueueService'), `services: ${names.join(', ')}`);
  const file = (await askReflection(client, { file_containing_symbol: 'sepp.v1.QueueService' })) as {
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

test('server reflection lists grpc.health.v1.Health and describes it, as grpcurl needs to call it', async () => {
  const client = reflectionClient(t.address);
  const listed = (await askReflection(client, { list_services: '' })) as {
    list_services_response: { service: { name: string }[] };
  };
  const names = listed.list_services_response.service.map((s) => s.name);
  assert.ok(names.includes('grpc.health.v1.Health'), `services: ${names.join(', ')}`);
  const file = (await askReflection(client, { file_containing_symbol: 'grpc.health.v1.Health' })) as {
    file_descriptor_response?: { file_descriptor_proto: Buffer[] };
    error_response?: { error_message: string };
  };
  assert.equal(file.error_response, undefined, file.error_response?.error_message);
  const described = file.file_descriptor_response?.file_descriptor_proto ?? [];
  assert.ok(described.some((b) => b.toString('latin1').includes('HealthCheckRequest')));
  client.close();
});
