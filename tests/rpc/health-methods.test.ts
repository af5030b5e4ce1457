/**
 * grpc.health.v1.Health's three methods, called through grpc-health-check's own service
 * definition: the server answers them with codecs built on the first call (src/rpc/health.ts),
 * and they must read as that package's server answered them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { descriptorSetBase64 } from '../../src/rpc/gen/descriptor-set.ts';
import { Health } from '../../src/rpc/health.ts';
import { checkHealth, healthClient } from '../helpers/generic-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';

interface HealthMethods {
  watch(request: { service: string }): grpc.ClientReadableStream<{ status: string }>;
  list(
    request: object,
    callback: (
      error: grpc.ServiceError | null,
      reply: { statuses: Record<string, { status: string }> },
    ) => void,
  ): void;
}

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(() => t.dispose());

test('Check of a service the server does not know is NOT_FOUND, named in the message', async () => {
  const client = healthClient(t.address);
  await assert.rejects(checkHealth(client, 'no.such.Service'), {
    code: grpc.status.NOT_FOUND,
    details: 'Health status unknown for service no.such.Service',
  });
  client.close();
});

test('Watch sends the current status first: SERVING, or SERVICE_UNKNOWN for an unknown service', async () => {
  const client = healthClient(t.address);
  const methods = client as unknown as HealthMethods;
  for (const [service, expected] of [
    ['sepp.v1.QueueService', 'SERVING'],
    ['no.such.Service', 'SERVICE_UNKNOWN'],
  ] as const) {
    const stream = methods.watch({ service });
    const first = await new Promise<{ status: string }>((resolve, reject) => {
      stream.once('data', resolve);
      stream.once('error', reject);
    });
    assert.deepEqual(first, { status: expected });
    stream.on('error', () => {});
    stream.cancel();
  }
  client.close();
});

test('List gives every service the server reports, with its status', async () => {
  const client = healthClient(t.address);
  const reply = await new Promise<{ statuses: Record<string, { status: string }> }>((resolve, reject) =>
    (client as unknown as HealthMethods).list({}, (error, answer) =>
      error ? reject(error) : resolve(answer),
    ),
  );
  assert.deepEqual(reply.statuses, {
    '': { status: 'SERVING' },
    'sepp.v1.QueueService': { status: 'SERVING' },
  });
  client.close();
});

test('a Watch ended by its client leaves nothing behind, whatever service name it named', async () => {
  // Names come from clients: an entry kept per name once watched would grow without bound.
  const descriptorSet = Buffer.from(descriptorSetBase64, 'base64');
  const health = new Health({ '': 'SERVING' });
  const server = new grpc.Server();
  health.addToServer(server, descriptorSet);
  const address = await listenOnLoopback(server);
  const client = healthClient(address);
  const methods = client as unknown as HealthMethods;
  const streams = Array.from({ length: 20 }, (_, i) => methods.watch({ service: `made.up.Service${i}` }));
  await Promise.all(streams.map((stream) => new Promise((resolve) => stream.once('data', resolve))));
  assert.equal(health.watchedServices(), 20);
  for (const stream of streams) {
    stream.on('error', () => {});
    stream.cancel();
  }
  // The cancels reach the server as RST_STREAMs, each a 'cancelled' there: wait for them, bounded.
  const deadline = Date.now() + 30_000;
  while (health.watchedServices() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(health.watchedServices(), 0, 'every cancelled Watch took its entry with it');
  client.close();
  server.forceShutdown();
});
