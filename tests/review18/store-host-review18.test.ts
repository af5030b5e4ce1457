/**
 * Review of this stop's "where the store is: for operators" (task review18): GetServerInfo
 * hides the PostgreSQL host from a producer key (SECURITY.md, docs/protocol.md), but in an
 * outage every answer to that key names it. Real server on PostgreSQL through a TCP proxy of
 * the test's, which it closes to make the outage (the file's cluster is not stopped).
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, Socket } from 'node:net';
import { test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { apiKeyToml } from '../helpers/access-table.ts';
import { answered, within } from '../helpers/bounded.ts';
import { useCluster } from '../helpers/postgres.ts';
import { call, startTestServer, testJob } from '../helpers/server.ts';

const postgres = useCluster('review18host');
const adminKey = 'review18-admin-key-0123456789abcdef';
const producerKey = 'review18-producer-key-0123456789abcdef';

function as(key: string): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${key}`);
  return metadata;
}

test("review18: in a PostgreSQL outage a producer key's answers do not say where the store is", async () => {
  // engine-parts.ts commitFailed (and the reads' StorageFailure) hand every caller the driver's
  // message, "connect ECONNREFUSED <host>:<port>", as do GET /readyz (no key) and a viewer's
  // overview storeHealth.lastError: the store's host:port that GetServerInfo now keeps from any key
  // but an admin key for every queue. The outage answer should not name it to such a caller.
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) s.on('error', () => {}).on('close', () => sockets.delete(s));
    upstream.connect(postgres.cluster.port, '127.0.0.1');
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const where = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const toml =
    postgres.storeToml('review18_host').replace(`127.0.0.1:${postgres.cluster.port}`, where) +
    apiKeyToml('r18-admin', 'admin', adminKey) +
    apiKeyToml('r18-producer', 'producer', producerKey);
  const t = await within(startTestServer({ toml }), 'the server started', 60_000);
  try {
    const info = await answered(call(t.client, t.client.getServerInfo, {}, as(producerKey)), 'GetServerInfo');
    assert.equal(info.store?.host, '', 'GetServerInfo keeps where the store is from a producer key');
    // The outage: nothing listens where the store is any more, and the open connections drop.
    await new Promise<void>((resolve) => {
      proxy.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const failure = await answered(
        call(t.client, t.client.enqueue, { job: testJob('r18-emails') }, as(producerKey)).then(
          () => null,
          (error: ServiceError) => error,
        ),
        'an enqueue in the outage',
      );
      assert.equal(failure?.code, status.UNAVAILABLE, failure?.details);
      answers.push(failure?.details ?? '');
    }
    assert.deepEqual(
      answers.filter((text) => text.includes(where)),
      [],
      `a producer key was told where the store is: ${answers.join(' | ')}`,
    );
  } finally {
    await within(t.dispose(), 'the server stopped', 60_000);
    proxy.close();
  }
});
