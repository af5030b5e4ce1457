/**
 * A Work stream whose client never reads (task workbudget21, found by attack8 on 2026-12-07). A
 * worker key opened one Work stream on an HTTP/2 connection with a zero window and granted credit
 * 1,000: the server leased all 300 ready 1 MiB jobs and held them, 256 → 1,105 MiB. A stream's
 * jobs not yet sent now count in the budgets of answers not yet sent per connection and per key
 * (grpc.max_bytes_in_flight_*, src/rpc/unsent-answers.ts): it leases only what fits and then
 * waits, its credit outstanding. Small scale, asserted on leased jobs and counted bytes; real
 * server on port 0, raw HTTP/2. The budgets' rules without a socket: tests/rpc/unsent-answers.test.ts.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect } from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { ReserveRequest, WorkRequest } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { createLogger } from '../../src/telemetry/logger.ts';
import { apiKeyToml } from '../helpers/access-table.ts';
import { grpcFrame } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { waitFor } from '../helpers/steady-load.ts';

const KiB = 1024;
const producerKey = 'workbudget-producer-key-0123456789abcdef';
const workerKey = 'workbudget-worker-key-0123456789abcdef';
const otherKey = 'workbudget-other-key-0123456789abcdef';
const perConnection = 640 * KiB;
const perKey = 1024 * KiB;
const jobs = 20;
/** A job's payload: about 100 KiB in a budget (answer-size.ts adds its fields and 128 bytes). */
const payloadBytes = 100 * KiB;
let t: TestServer;
const lines: string[] = [];

describe('Work streams nobody reads', () => {
  before(async () => {
    t = await startTestServer({
      logger: createLogger({ level: 'warn', format: 'json', write: (line) => lines.push(line) }),
      toml: `${apiKeyToml('producer', 'producer', producerKey)}${apiKeyToml('w', 'worker', workerKey, ['big'])}${apiKeyToml('other', 'worker', otherKey)}
[queue_defaults]
max_payload_bytes = "200KiB"
[grpc]
max_message_bytes = "320KiB"
max_bytes_in_flight_per_connection = "640KiB"
max_bytes_in_flight_per_key = "1MiB"
`,
    });
    const payload = Buffer.alloc(payloadBytes, 0x61);
    for (let i = 0; i < jobs; i += 2) {
      await call(
        t.client,
        t.client.enqueueBatch,
        { jobs: [testJob('big', { payload }), testJob('big', { payload })] },
        withKey(producerKey),
      );
    }
  });
  after(() => t?.dispose());

  function withKey(secret: string): Metadata {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${secret}`);
    return metadata;
  }

  /** A connection that reads nothing (a zero window) with one Work stream granting `credit`. */
  function unreadWork(credit: number): ClientHttp2Session {
    const session = connect(`http://${t.address}`, { settings: { initialWindowSize: 0 } });
    session.on('error', () => {});
    const request = session.request({
      ':method': 'POST',
      ':path': '/sepp.v1.QueueService/Work',
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${workerKey}`,
    });
    request.on('error', () => {});
    request.pause();
    const subscribe = { queues: ['big'], leaseDurationMs: 600_000, workerId: 'unread', batchResponses: true };
    request.write(
      grpcFrame(
        WorkRequest.encode({ requestId: 0, kind: { $case: 'subscribe', value: subscribe } }).finish(),
      ),
    );
    request.write(
      grpcFrame(
        WorkRequest.encode({ requestId: 0, kind: { $case: 'credit', value: { jobs: credit } } }).finish(),
      ),
    );
    return session;
  }

  const answers = () => t.server.bytesInFlight().answers;
  const heldByWorker = () => answers().byKey.w?.usedBytes ?? 0;
  const counts = async () => {
    const queue = (await t.server.engine.listQueues()).find((q) => q.name === 'big');
    assert.ok(queue !== undefined);
    return queue.counts;
  };

  test('a stream that never reads leases only what its budgets hold; others work; its end gives all back', {
    timeout: 60_000,
  }, async () => {
    const waitedBefore = answers().waited;
    const first = unreadWork(jobs);
    await waitFor(() => answers().waited > waitedBefore, 'the first stream waits for room', 20_000);
    const one = await counts();
    assert.ok(one.leased >= 1, 'it got jobs');
    // Each job takes a little more than 100 KiB: 6 fit the connection's 640 KiB, not 20.
    assert.ok(
      one.leased <= Math.floor(perConnection / payloadBytes),
      `${one.leased} jobs leased on one connection`,
    );
    assert.ok(heldByWorker() <= perConnection, `${heldByWorker()} bytes held`);

    // A second connection of the same key: the key's 1 MiB bounds both.
    const waitedOnce = answers().waited;
    const second = unreadWork(jobs);
    await waitFor(() => answers().waited > waitedOnce, 'the second stream waits for room', 20_000);
    const two = await counts();
    assert.ok(two.leased > one.leased, 'the second connection got jobs of the key’s room left');
    assert.ok(two.leased <= Math.floor(perKey / payloadBytes), `${two.leased} jobs leased by the key`);
    assert.ok(heldByWorker() <= perKey, `${heldByWorker()} bytes held by the key`);

    // Another key's worker is not held up by them.
    const other = await call(
      t.client,
      t.client.reserve,
      ReserveRequest.fromPartial({ queues: ['big'], maxJobs: 2, leaseDurationMs: 600_000 }),
      withKey(otherKey),
    );
    assert.equal(other.jobs.length, 2);

    // Gone: every job they were not sent is ready again at once (leases undone, not run out), and
    // the key's budget is empty.
    first.destroy();
    second.destroy();
    await waitFor(() => heldByWorker() === 0, 'the key holds nothing', 20_000);
    let now = await counts();
    for (let i = 0; i < 200 && now.leased !== 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      now = await counts();
    }
    assert.equal(now.leased, 2, 'only the other key’s two jobs stay leased');
    assert.equal(now.ready, jobs - 2);
    // The log names the key (never its secret): its jobs were given back.
    const told = lines.filter((line) => line.includes('"rpc.answers_refused"'));
    assert.deepEqual(
      told.map((line) => JSON.parse(line)).map((l) => [l.level, l.key, l.refused, l.given_back > 0]),
      [['warn', 'w', 0, true]],
    );
    assert.ok(!told.some((line) => line.includes(workerKey)), 'no secret in the line');
  });
});
