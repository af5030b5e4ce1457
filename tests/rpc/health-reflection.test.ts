/** Generic tools work without the .proto files: standard health checks and server reflection. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { create, createFileRegistry, fromBinary } from '@bufbuild/protobuf';
import {
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from '@bufbuild/protobuf/wkt';
import { descriptorSetBase64 } from '../../src/rpc/gen/descriptor-set.ts';
import {
  askReflection,
  askReflectionMany,
  checkHealth,
  healthClient,
  reflectionClient,
} from '../helpers/generic-clients.ts';
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

type FileAnswer = {
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
};

/** The files protoc wrote into the embedded set, by name, as bytes. */
const protocFiles = new Map(
  fromBinary(FileDescriptorSetSchema, Buffer.from(descriptorSetBase64, 'base64')).file.map((file) => [
    file.name,
    file,
  ]),
);

function namesOf(answer: FileAnswer): string[] {
  assert.equal(answer.error_response, undefined, answer.error_response?.error_message);
  return (answer.file_descriptor_response?.file_descriptor_proto ?? []).map(
    (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
  );
}

/** `name` and every file it imports, directly or not. */
/**
 * The files with every dependency before the files that import it, as a client builds its pool.
 * (`createFileRegistry(file, resolve)` of @bufbuild/protobuf orders a diamond of imports wrongly:
 * queue_service.proto imports admin.proto both directly and through bulk.proto.)
 */
function dependenciesFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((file) => [file.name, file]));
  const ordered: FileDescriptorProto[] = [];
  const placed = new Set<string>();
  const place = (file: FileDescriptorProto) => {
    if (placed.has(file.name)) return;
    placed.add(file.name);
    for (const name of file.dependency) {
      const dependency = byName.get(name);
      assert.ok(dependency, `${file.name} imports ${name}, which the answer lacks`);
      place(dependency);
    }
    ordered.push(file);
  };
  for (const file of files) place(file);
  return ordered;
}

function closure(name: string, into = new Set<string>()): Set<string> {
  if (into.has(name)) return into;
  into.add(name);
  for (const dependency of protocFiles.get(name)?.dependency ?? []) closure(dependency, into);
  return into;
}

for (const version of ['v1', 'v1alpha'] as const) {
  test(`reflection ${version}: a symbol's own file as protoc wrote it, then its dependencies, fully qualified`, async () => {
    const client = reflectionClient(t.address, version);
    const answer = (await askReflection(client, {
      file_containing_symbol: 'sepp.v1.QueueService',
    })) as FileAnswer;
    const names = namesOf(answer);
    // Its own file, not one file merged from the package (grpc/grpc-node#3034).
    assert.equal(names[0], 'sepp/v1/queue_service.proto');
    assert.deepEqual(new Set(names), closure('sepp/v1/queue_service.proto'));
    const files = answer.file_descriptor_response!.file_descriptor_proto.map((bytes) =>
      fromBinary(FileDescriptorProtoSchema, bytes),
    );
    assert.deepEqual(files[0]!.dependency, protocFiles.get('sepp/v1/queue_service.proto')!.dependency);
    const enqueue = files[0]!.service[0]!.method.find((m) => m.name === 'Enqueue')!;
    assert.equal(enqueue.inputType, '.sepp.v1.EnqueueRequest');
    // The answers are a complete pool: every type they name resolves (what buf curl and grpcurl build).
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: dependenciesFirst(files) }));
    assert.equal(
      registry.getService('sepp.v1.QueueService')?.methods.length,
      files[0]!.service[0]!.method.length,
    );
    assert.ok(registry.getMessage('sepp.v1.EnqueueJob'));
    client.close();
  });
}

test('reflection finds messages, nested types, enums, methods and files by name; unknown names are NOT_FOUND', async () => {
  const client = reflectionClient(t.address);
  const [message, method, enumType, byName, unknown, unknownFile, extensions] = (await askReflectionMany(
    client,
    [
      { file_containing_symbol: 'sepp.v1.EnqueueJob' },
      { file_containing_symbol: 'sepp.v1.QueueService.Enqueue' },
      { file_containing_symbol: '.sepp.v1.JobState' },
      { file_by_filename: 'grpc/health/v1/health.proto' },
      { file_containing_symbol: 'sepp.v1.NoSuchThing' },
      { file_by_filename: 'sepp/v1/nothing.proto' },
      { all_extension_numbers_of_type: 'sepp.v1.EnqueueJob' },
    ],
  )) as (FileAnswer & {
    all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  })[];
  const owner = (symbol: string) =>
    [...protocFiles.values()].find((file) =>
      [...file.messageType, ...file.enumType, ...file.service].some(
        (d) => `${file.package}.${d.name}` === symbol,
      ),
    )!.name;
  assert.equal(namesOf(message!)[0], owner('sepp.v1.EnqueueJob'));
  assert.equal(namesOf(method!)[0], 'sepp/v1/queue_service.proto');
  assert.equal(namesOf(enumType!)[0], owner('sepp.v1.JobState'));
  assert.equal(namesOf(byName!)[0], 'grpc/health/v1/health.proto');
  assert.equal(unknown!.error_response?.error_code, 5);
  assert.match(unknown!.error_response?.error_message ?? '', /sepp\.v1\.NoSuchThing/);
  assert.equal(unknownFile!.error_response?.error_code, 5);
  // sepp's messages declare no extensions (an empty list is left out on the wire).
  assert.equal(extensions!.all_extension_numbers_response?.base_type_name, 'sepp.v1.EnqueueJob');
  assert.deepEqual(extensions!.all_extension_numbers_response?.extension_number ?? [], []);
  client.close();
});

test('on one stream a dependency is sent once; the file asked for is sent every time', async () => {
  const client = reflectionClient(t.address);
  const [first, second] = (await askReflectionMany(client, [
    { file_containing_symbol: 'sepp.v1.QueueService' },
    { file_containing_symbol: 'sepp.v1.QueueService' },
  ])) as FileAnswer[];
  assert.ok(namesOf(first!).length > 1);
  assert.deepEqual(namesOf(second!), ['sepp/v1/queue_service.proto']);
  client.close();
});
