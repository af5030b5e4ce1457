/**
 * The gRPC port's connections are bounded (issue 14, items 7 and 8): a cap
 * on connections, a handshake deadline for connections that never open a
 * call, an idle timeout, a cap on calls per connection, and calls without a
 * key refused when their headers arrive, before their body is read. Every
 * limit is in GetServerInfo (the keepalive settings too, over gRPC, in the
 * TypeScript SDK and in `sepp status --json`; reload.test.ts has them after a
 * reload) and every refusal in /metrics. Deadlines here are hang guards only:
 * each test waits for the event, never for a time.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { connect as connectTcp, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Metadata, status } from '@grpc/grpc-js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { keylessCallsPerConnection, keylessCallsPerServer } from '../../src/rpc/admission.ts';
import { cliJson, sepp } from '../helpers/cli.ts';
import { scrape } from '../helpers/prometheus.ts';
import { grpcFrame, http2Call } from '../helpers/raw-grpc.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';

/** Polls `check` until it holds; the deadline is only a hang guard. */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`still not true after 30 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A TCP connection that sends nothing; `closed` resolves when the server closes it. */
function silentConnection(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: '127.0.0.1', port }, () => {
      resolve({ socket, closed: new Promise((done) => socket.once('close', () => done())) });
    });
    // Read (and drop) what the server sends, or its closing the connection would go unnoticed.
    socket.resume();
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

function http2Session(t: TestServer): ClientHttp2Session {
  const session = connectHttp2(`http://${t.address}`);
  session.on('error', () => {});
  return session;
}

const metric = async (t: TestServer, name: string, reason?: string) => {
  const { samples } = await scrape(t.metricsUrl);
  return samples
    .filter((s) => s.name === name && (reason === undefined || s.labels.sepp_refusal_reason === reason))
    .reduce((n, s) => n + s.value, 0);
};

describe('connection limits', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      toml: `
[grpc]
max_connections = 4
max_streams_per_connection = 3
handshake_timeout_ms = "300ms"
idle_timeout_ms = "1s"
keepalive_ms = "45s"
keepalive_timeout_ms = "7s"
`,
    });
  });
  after(() => t.dispose());

  test('GetServerInfo reports the connection limits; the keepalive settings in the SDK and the CLI too', async () => {
    const info = await call(t.client, t.client.getServerInfo, {});
    assert.equal(info.limits?.maxConnections, 4);
    assert.equal(info.limits?.maxStreamsPerConnection, 3);
    assert.equal(info.limits?.handshakeTimeoutMs, 300);
    assert.equal(info.limits?.idleTimeoutMs, 1000);
    // Not the defaults (30 s, 20 s); no ping is due while these tests run.
    const keepalive = { keepaliveMs: 45_000, keepaliveTimeoutMs: 7_000 };
    const keepaliveOf = (limits: { keepaliveMs?: number; keepaliveTimeoutMs?: number } | undefined) => ({
      keepaliveMs: limits?.keepaliveMs,
      keepaliveTimeoutMs: limits?.keepaliveTimeoutMs,
    });
    assert.deepEqual(keepaliveOf(info.limits), keepalive);
    const client = SeppClient.connect(t.address);
    try {
      assert.deepEqual(keepaliveOf((await client.getServerInfo()).limits), keepalive);
    } finally {
      await client.close();
    }
    const status = await sepp(['status', '--json'], { SEPP_SERVER: t.address });
    assert.deepEqual(keepaliveOf(cliJson<{ limits: Record<string, number> }>(status).limits), keepalive);
  });

  test('a connection that never sends a byte is closed after the handshake timeout', async () => {
    const before = await metric(t, 'sepp_grpc_connections_rejected_total', 'handshake_timeout');
    const { closed } = await silentConnection(t.server.grpcPort);
    await closed;
    assert.equal(await metric(t, 'sepp_grpc_connections_rejected_total', 'handshake_timeout'), before + 1);
  });

  test('a connection that speaks HTTP/2 but opens no call is closed too', async () => {
    const session = http2Session(t);
    await new Promise<void>((resolve) => session.once('close', () => resolve()));
    assert.ok(session.destroyed || session.closed);
  });

  test('a connection with no call open is closed after the idle timeout, with a GOAWAY', async () => {
    const session = http2Session(t);
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    assert.equal(await http2Call(session, '/sepp.v1.QueueService/ListQueues'), '0');
    await goaway;
    await new Promise<void>((resolve) =>
      session.closed ? resolve() : session.once('close', () => resolve()),
    );
  });

  test('a connection past max_connections is closed as it arrives; a freed slot takes the next', async () => {
    const before = await metric(t, 'sepp_grpc_connections_rejected_total', 'max_connections');
    // The test client's own connection may be open: fill whatever is left with silent ones.
    const silent: { socket: Socket; closed: Promise<void> }[] = [];
    for (let i = 0; i < 5; i++) silent.push(await silentConnection(t.server.grpcPort));
    await eventually(
      async () => (await metric(t, 'sepp_grpc_connections_rejected_total', 'max_connections')) > before,
      'a connection past the limit is refused',
    );
    for (const s of silent) s.socket.destroy();
    await eventually(async () => (await metric(t, 'sepp_grpc_connections_open')) <= 1, 'the slots are free');
    const info = await call(t.connect(), t.client.getServerInfo, {});
    assert.equal(info.limits?.maxConnections, 4, 'a new connection is served');
  });

  test('a connection may open max_streams_per_connection calls at once (HTTP/2 SETTINGS)', async () => {
    const session = http2Session(t);
    await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
    assert.equal(session.remoteSettings.maxConcurrentStreams, 3);
    session.destroy();
  });
});

describe('calls without a valid key', () => {
  const key = 'conn-limits-admin-key-0123456789';
  registerSecret('api key', key);
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      // A short request deadline for calls without a key, so that stalled ones end soon.
      toml: `[grpc]\nhandshake_timeout_ms = "500ms"\n[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${key}"\n`,
    });
  });
  after(() => t.dispose());

  // The timeout is a hang guard: a server that waited for the body would never answer.
  test('are answered UNAUTHENTICATED when their headers arrive: a body that never ends is not waited for', {
    timeout: 60_000,
  }, async () => {
    const before = await metric(t, 'sepp_grpc_calls_refused_total', 'unauthenticated');
    const session = http2Session(t);
    try {
      // A 4 MiB message whose first bytes only are sent, and whose stream is never ended:
      // a server that read the body before checking the key would wait for the rest forever.
      const prefix = grpcFrame(Buffer.alloc(0));
      prefix.writeUInt32BE(4 * 1024 * 1024, 1);
      const started = Buffer.concat([prefix, Buffer.alloc(1024)]);
      for (const rpc of ['Enqueue', 'EnqueueBatch', 'Produce', 'Work', 'Backup', 'GetServerInfo']) {
        const code = await http2Call(session, `/sepp.v1.QueueService/${rpc}`, {
          body: started,
          endBody: false,
        });
        assert.equal(code, String(status.UNAUTHENTICATED), rpc);
      }
      const wrongKey = await http2Call(session, '/sepp.v1.QueueService/Enqueue', {
        headers: { authorization: 'Bearer not-the-key-at-all-0000' },
        body: started,
        endBody: false,
      });
      assert.equal(wrongKey, String(status.UNAUTHENTICATED));
    } finally {
      session.destroy();
    }
    assert.equal(await metric(t, 'sepp_grpc_calls_refused_total', 'unauthenticated'), before + 7);
    // A refused call is still a call in rpc.server.duration, with its status.
    const { samples } = await scrape(t.metricsUrl);
    assert.ok(
      samples.some(
        (s) =>
          s.name === 'rpc_server_duration_count' &&
          s.labels.rpc_method === 'Backup' &&
          s.labels.rpc_grpc_status_code === String(status.UNAUTHENTICATED),
      ),
    );
  });

  test('with the key, the same call is served', async () => {
    const md = new Metadata();
    md.set('authorization', `Bearer ${key}`);
    const info = await call(t.client, t.client.getServerInfo, {}, md);
    assert.equal(info.version, '0.0.0-test');
  });

  const health = '/grpc.health.v1.Health/Check';
  /** A health check whose request never arrives: it holds its slot until the request deadline. */
  const stalledHealthCheck = (session: ClientHttp2Session) =>
    http2Call(session, health, { body: Buffer.from([0, 0, 0, 0, 9]), endBody: false });

  test(`calls without a key (health, reflection): ${keylessCallsPerConnection} open per connection, and their request in time`, async () => {
    const before = await metric(t, 'sepp_grpc_calls_refused_total', 'keyless_limit');
    const session = http2Session(t);
    try {
      // Streams of one connection reach the server in order: the stalled ones are admitted first.
      const stalled = Array.from({ length: keylessCallsPerConnection }, () => stalledHealthCheck(session));
      assert.equal(await http2Call(session, health), String(status.RESOURCE_EXHAUSTED));
      assert.equal(await metric(t, 'sepp_grpc_calls_refused_total', 'keyless_limit'), before + 1);
      // With a valid key, a health check is not limited.
      const keyed = await http2Call(session, health, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(keyed, '0');
      // The stalled ones are refused once grpc.handshake_timeout_ms passes without their request.
      assert.deepEqual(
        await Promise.all(stalled),
        stalled.map(() => String(status.RESOURCE_EXHAUSTED)),
      );
      assert.equal(await http2Call(session, health), '0', 'the slots are free again');
    } finally {
      session.destroy();
    }
  });

  test(`calls without a key: ${keylessCallsPerServer} open on the whole server`, async () => {
    const sessions = Array.from({ length: keylessCallsPerServer + 1 }, () => http2Session(t));
    try {
      const stalled = sessions.slice(0, keylessCallsPerServer).map(stalledHealthCheck);
      // Each stalled call holds its slot from its headers on; one more connection finds none.
      await eventually(async () => {
        const code = await http2Call(sessions.at(-1)!, health);
        return code === String(status.RESOURCE_EXHAUSTED);
      }, 'the server-wide limit refuses a call');
      await Promise.all(stalled);
      assert.equal(await http2Call(sessions.at(-1)!, health), '0', 'the slots are free again');
    } finally {
      for (const session of sessions) session.destroy();
    }
  });
});
