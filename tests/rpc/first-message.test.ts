/**
 * A call that never sends its first message ends after
 * grpc.first_message_timeout_ms (issue 29): before, a Work, Produce or
 * Events stream whose client sent nothing after its headers stayed open
 * until its connection closed, holding a stream slot. The server's timers
 * run on real time (grpc-js), so the limit is short here; every wait below
 * is for an event, with a deadline that is only a hang guard.
 */
import assert from 'node:assert/strict';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, status } from '@grpc/grpc-js';
import { scrape } from '../helpers/prometheus.ts';
import { grpcFrame, http2Call } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import {
  collect,
  creditMessage,
  openProduce,
  openWork,
  streamEnd,
  subscribeMessage,
} from '../helpers/streams.ts';

const limitMs = 300;

/** `promise`, or a failure once 30 s pass: only a hang guard (a call the server never ends). */
async function guarded<T>(promise: Promise<T>, what: string): Promise<T> {
  let guard: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    guard = setTimeout(() => reject(new Error(`${what} was still open after 30 s`)), 30_000);
  });
  try {
    return await Promise.race([promise, hang]);
  } finally {
    clearTimeout(guard);
  }
}

/** How the stream ended. */
const ended = <Req, T>(stream: ClientDuplexStream<Req, T>) => guarded(streamEnd(stream), 'the stream');

const refusals = async (t: TestServer) =>
  (await scrape(t.metricsUrl)).samples
    .filter(
      (s) =>
        s.name === 'sepp_grpc_calls_refused_total' &&
        s.labels.sepp_refusal_reason === 'first_message_timeout',
    )
    .reduce((n, s) => n + s.value, 0);

describe('grpc.first_message_timeout_ms', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ toml: `[grpc]\nfirst_message_timeout_ms = "${limitMs}ms"\n` });
  });
  after(() => t.dispose());

  for (const rpc of ['work', 'produce'] as const) {
    test(`a ${rpc === 'work' ? 'Work' : 'Produce'} stream that sends nothing ends with RESOURCE_EXHAUSTED naming the limit`, async () => {
      const before = await refusals(t);
      const end = rpc === 'work' ? await ended(openWork(t.client)) : await ended(openProduce(t.client));
      assert.equal(end.code, status.RESOURCE_EXHAUSTED, end.details);
      assert.match(end.details, /no first message within 300 ms.*grpc\.first_message_timeout_ms/);
      assert.equal(await refusals(t), before + 1);
    });
  }

  test('an Events call whose request never arrives ends the same way (raw HTTP/2: grpc-js always sends it)', async () => {
    const session: ClientHttp2Session = connectHttp2(`http://${t.address}`);
    session.on('error', () => {});
    try {
      // Headers only, and then a message prefix whose bytes never come.
      const headersOnly = http2Call(session, '/sepp.v1.QueueService/Events', {
        body: Buffer.alloc(0),
        endBody: false,
      });
      const prefix = grpcFrame(Buffer.alloc(0));
      prefix.writeUInt32BE(100, 1);
      const prefixOnly = http2Call(session, '/sepp.v1.QueueService/Events', { body: prefix, endBody: false });
      const unary = http2Call(session, '/sepp.v1.QueueService/GetServerInfo', {
        body: Buffer.alloc(0),
        endBody: false,
      });
      assert.deepEqual(
        await guarded(Promise.all([headersOnly, prefixOnly, unary]), 'a call'),
        Array(3).fill(String(status.RESOURCE_EXHAUSTED)),
      );
    } finally {
      session.destroy();
    }
  });

  test('a Work stream that subscribed in time stays open past the limit and gets its job', async () => {
    const stream = openWork(t.client);
    const first = collect(stream, (seen) => seen.some((m) => m.kind?.$case === 'job'));
    stream.write(subscribeMessage(['idle']));
    stream.write(creditMessage(1));
    // Three times the limit: a timer still armed after the subscribe would have ended the stream.
    await new Promise((resolve) => setTimeout(resolve, 3 * limitMs));
    await call(t.client, t.client.enqueue, { job: testJob('idle') });
    const seen = await first;
    assert.ok(seen.some((m) => m.kind?.$case === 'job'));
    stream.end();
    stream.cancel();
  });

  test('GetServerInfo still answers: a unary call that sends its request is not touched', async () => {
    const info = await call(t.client, t.client.getServerInfo, {});
    assert.equal(info.version, '0.0.0-test');
  });
});
