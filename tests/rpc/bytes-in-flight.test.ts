/**
 * Request bytes in flight, per connection and per API key (issue 29, item 5):
 * a message is read only once the bytes its prefix declares fit both budgets,
 * else its call waits; nothing is refused, and the budgets never hold more
 * than their limits. bench/keyed-flood.ts measures what it does to memory.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { ByteBudget, cancel, release, reserve } from '../../src/platform/byte-budget.ts';
import { MessageFrames } from '../../src/rpc/message-frames.ts';
import { problemsOf } from '../config/helpers.ts';
import { apiKeysToml, call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const KiB = 1024;
const frame = (bytes: number) => {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(bytes, 1);
  return Buffer.concat([prefix, Buffer.alloc(bytes, 1)]);
};

test('message frames: a prefix split over chunks, several messages in one chunk, an empty message', () => {
  const frames = new MessageFrames();
  const body = Buffer.concat([frame(10), frame(0), frame(300)]);
  assert.deepEqual(frames.push(body.subarray(0, 3)), []);
  assert.deepEqual(frames.push(body.subarray(3, 25)), [
    { bytes: 10, complete: true },
    { bytes: 0, complete: true },
    { bytes: 300, complete: false },
  ]);
  assert.deepEqual(frames.push(body.subarray(25, 200)), []);
  assert.deepEqual(frames.push(Buffer.concat([body.subarray(200), frame(5).subarray(0, 2)])), []);
  assert.deepEqual(frames.push(frame(5).subarray(2)), [{ bytes: 5, complete: true }]);
});

test('budgets: waiters in order, a large one is not passed by small ones, a cancelled one lets the next in', () => {
  const key = new ByteBudget('key k', 100);
  const connection = new ByteBudget('connection', 60);
  const granted: string[] = [];
  assert.equal(
    reserve([key, connection], 50, () => granted.push('first')),
    undefined,
  );
  const large = reserve([key, connection], 60, () => granted.push('large'));
  assert.ok(large !== undefined, 'does not fit the connection');
  // Fits both, but a waiter came first.
  const small = reserve([key], 10, () => granted.push('small'));
  assert.ok(small !== undefined, 'small waits behind large');
  release([key, connection], 50);
  assert.deepEqual(granted, ['large', 'small']);
  assert.equal(key.used, 70);
  assert.equal(key.peak, 70);
  const stuck = reserve([key, connection], 60, () => granted.push('stuck'));
  const behind = reserve([key], 10, () => granted.push('behind'));
  assert.ok(stuck !== undefined && behind !== undefined);
  cancel(stuck);
  assert.deepEqual(granted, ['large', 'small', 'behind']);
  assert.ok(key.peak <= key.limitBytes && connection.peak <= connection.limitBytes);
});

test('a budget smaller than grpc.max_message_bytes is refused; a default grows to it', () => {
  const problems = problemsOf('[grpc]\nmax_message_bytes = "8MiB"\nmax_bytes_in_flight_per_key = "4MiB"\n');
  const problem = problems.find((p) => p.key === 'grpc.max_bytes_in_flight_per_key');
  assert.match(problem?.message ?? '', /smaller than grpc\.max_message_bytes \(8388608\)/);
});

describe('bytes in flight on a server', () => {
  const key = 'sepp-secret-bytes-in-flight-0123456789';
  let t: TestServer;
  const withKey = () => {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${key}`);
    return metadata;
  };
  const payload = Buffer.alloc(190 * KiB, 0x61);

  before(async () => {
    t = await startTestServer({
      toml: `${apiKeysToml([{ name: 'producer', role: 'producer', key }])}
[queue_defaults]
max_payload_bytes = "200KiB"
[grpc]
max_message_bytes = "320KiB"
max_bytes_in_flight_per_connection = "640KiB"
max_bytes_in_flight_per_key = "1MiB"
`,
    });
  });
  after(() => t.dispose());

  test('GetServerInfo reports both limits', async () => {
    const info = await call(t.client, t.client.getServerInfo, {}, withKey());
    assert.equal(info.limits?.maxBytesInFlightPerConnection, 640 * KiB);
    assert.equal(info.limits?.maxBytesInFlightPerKey, 1024 * KiB);
  });

  test('many large unary calls at once: all answered, the budgets never over their limits, some waited', async () => {
    const clients = [t.connect(), t.connect(), t.connect()];
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        const client = clients[i % clients.length]!;
        return call(client, client.enqueue, { job: testJob('big', { payload }) }, withKey()).then(
          () => status.OK,
          (e: ServiceError) => e.code,
        );
      }),
    );
    assert.deepEqual(new Set(results), new Set([status.OK]));
    const stats = t.server.bytesInFlight();
    const producer = stats.byKey.producer;
    assert.ok(producer !== undefined);
    assert.ok(producer.peakBytes <= 1024 * KiB, `the key held ${producer.peakBytes} bytes`);
    assert.ok(
      producer.peakBytes >= 3 * payload.length,
      `several were in flight at once (${producer.peakBytes})`,
    );
    assert.ok(producer.waited > 0, 'the 30 calls did not all fit: some waited');
    assert.equal(producer.usedBytes, 0, 'every byte given back');
    assert.ok(stats.connections.peakBytes <= 640 * KiB, `a connection held ${stats.connections.peakBytes}`);
    for (const c of clients) c.close();
  });

  test('a Produce stream with many large batches pipelined: all answered within the budgets', async () => {
    const stream = t.client.produce(withKey()) as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answers: ProduceResponse[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('data', (answer: ProduceResponse) => answers.push(answer));
      stream.on('end', () => resolve());
      stream.on('error', reject);
    });
    for (let sequence = 1; sequence <= 20; sequence++) {
      stream.write({ sequence, atomic: false, jobs: [testJob('big-stream', { payload })] });
    }
    stream.end();
    await ended;
    assert.equal(answers.length, 20);
    assert.ok(answers.every((a) => a.code === status.OK && a.results[0]?.outcome?.$case === 'accepted'));
    const producer = t.server.bytesInFlight().byKey.producer;
    assert.ok(producer !== undefined && producer.peakBytes <= 1024 * KiB, `${producer?.peakBytes}`);
    assert.equal(producer?.usedBytes, 0);
  });
});
