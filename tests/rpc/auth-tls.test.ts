/** API keys with roles, hashed keys, and TLS, over real sockets. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

const producerKey = 'producer-key-0123456789abcdef';
const workerKey = 'worker-key-0123456789abcdef';
const adminKey = 'admin-key-0123456789abcdef';
const hashedKey = 'hashed-key-0123456789abcdef';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const keysToml = `
[[grpc.api_keys]]
name = "billing"
role = "producer"
key = "${producerKey}"
[[grpc.api_keys]]
name = "mailer"
role = "worker"
key = "${workerKey}"
[[grpc.api_keys]]
name = "ops"
role = "admin"
key_sha256 = "${sha256(adminKey)}"
[[grpc.api_keys]]
name = "hashed-producer"
role = "producer"
key_sha256 = "${sha256(hashedKey)}"
`;

const bearer = (key: string) => {
  const m = new Metadata();
  m.set('authorization', `Bearer ${key}`);
  return m;
};
const job = testJob('auth');
const code = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (e: ServiceError) => e.code,
  );

describe('authentication and roles', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ toml: keysToml });
  });
  after(() => t.dispose());

  test('no key and a wrong key are UNAUTHENTICATED', async () => {
    const c = t.client;
    assert.equal(await code(call(c, c.enqueue, { job })), status.UNAUTHENTICATED);
    assert.equal(
      await code(call(c, c.enqueue, { job }, bearer('wrong-key-0123456789abcdef'))),
      status.UNAUTHENTICATED,
    );
    const streamError = await new Promise<ServiceError>((resolve) => {
      const s = c.work(new Metadata());
      s.on('error', resolve);
    });
    assert.equal(streamError.code, status.UNAUTHENTICATED);
  });

  test('each role may call what it needs and nothing more', async () => {
    const c = t.client;
    const reserve = {
      queues: ['auth'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 0,
      workerId: '',
      maxResponseBytes: 0,
    };
    // producer: enqueue and read
    assert.equal(await code(call(c, c.enqueue, { job }, bearer(producerKey))), status.OK);
    assert.equal(
      await code(call(c, c.listQueues, { pageSize: 0, pageToken: '' }, bearer(producerKey))),
      status.OK,
    );
    assert.equal(await code(call(c, c.reserve, reserve, bearer(producerKey))), status.PERMISSION_DENIED);
    assert.equal(
      await code(call(c, c.pauseQueue, { queue: 'auth', allowMissing: false }, bearer(producerKey))),
      status.PERMISSION_DENIED,
    );
    // worker: reserve/ack and read, not enqueue or admin
    assert.equal(await code(call(c, c.reserve, reserve, bearer(workerKey))), status.OK);
    assert.equal(await code(call(c, c.enqueue, { job }, bearer(workerKey))), status.PERMISSION_DENIED);
    assert.equal(
      await code(
        call(
          c,
          c.deleteDeadLetters,
          {
            requestKey: '',
            queue: 'auth',
            jobIds: [],
            all: true,
            reason: 0,
            errorText: '',
            background: false,
          },
          bearer(workerKey),
        ),
      ),
      status.PERMISSION_DENIED,
    );
    // admin (configured as a hash): everything
    assert.equal(
      await code(call(c, c.pauseQueue, { queue: 'auth', allowMissing: false }, bearer(adminKey))),
      status.OK,
    );
    assert.equal(await code(call(c, c.enqueue, { job }, bearer(adminKey))), status.OK);
    // a hashed producer key works like a plain one
    assert.equal(await code(call(c, c.enqueue, { job }, bearer(hashedKey))), status.OK);
    const denied = await call(c, c.reserve, reserve, bearer(producerKey)).catch((e: ServiceError) => e);
    assert.ok(denied instanceof Error);
    assert.match((denied as ServiceError).details, /billing has role producer/);
    assert.doesNotMatch((denied as ServiceError).details, new RegExp(producerKey));
  });
});

describe('TLS', () => {
  let dir: string;
  let t: TestServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-tls-'));
    const cert = selfSignedCertificate(dir);
    t = await startTestServer({
      toml: cert.toml('grpc'),
      tls: { certPem: cert.certPem, caPem: cert.certPem },
    });
  });
  after(async () => {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a client trusting the certificate enqueues over TLS', async () => {
    const { jobId } = await call(t.client, t.client.enqueue, { job });
    assert.match(jobId, /^[0-9a-f-]{36}$/);
  });
});
