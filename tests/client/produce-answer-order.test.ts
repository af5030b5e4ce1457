/**
 * The TypeScript SDK matches Produce answers to its messages by their order on the stream
 * (proto/sepp/v1/produce.proto: answers come in the order the requests arrived, and an answer
 * to a message whose bytes did not decode carries sequence 0). A stand-in server that
 * implements Produce only answers when and how each test says: a sequence-0 answer fails the
 * caller of the message in its place at once, a message whose deadline passed keeps its place,
 * and answers out of step end the stream. The Python SDK's tests of the same are in
 * clients/python/tests/test_produce_order.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';

/** A Produce stream the stand-in holds: the messages it received, answered only when told. */
interface HeldStream {
  call: grpc.ServerDuplexStream<ProduceRequest, ProduceResponse>;
  received: ProduceRequest[];
}

const streams: HeldStream[] = [];
let onMessage: (() => void) | undefined;
let server: grpc.Server;
let address: string;

before(async () => {
  server = new grpc.Server();
  server.addService(QueueServiceService, {
    produce: (call: grpc.ServerDuplexStream<ProduceRequest, ProduceResponse>) => {
      const held: HeldStream = { call, received: [] };
      streams.push(held);
      call.on('data', (message: ProduceRequest) => {
        held.received.push(message);
        onMessage?.();
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  address = await listenOnLoopback(server);
});

after(() => server.forceShutdown());

/** Resolves once the stand-in's stream number `index` (from 0) has received `count` messages. */
function received(index: number, count: number): Promise<HeldStream> {
  return new Promise((resolve) => {
    const check = () => {
      const held = streams[index];
      if (held === undefined || held.received.length < count) return;
      onMessage = undefined;
      resolve(held);
    };
    onMessage = check;
    check();
  });
}

function accepted(sequence: number, jobId: string): ProduceResponse {
  const outcome = { $case: 'accepted' as const, value: { jobId, deduplicated: false, debounced: false } };
  return { sequence, code: status.OK, message: '', results: [{ outcome }], retry: '' };
}

const undecodable: ProduceResponse = {
  sequence: 0,
  code: status.INVALID_ARGUMENT,
  message: 'the message did not decode',
  results: [],
  retry: '',
};

/** Runs `body` with a client of the stand-in, closed afterwards. */
async function withClient(body: (client: SeppClient) => Promise<void>): Promise<void> {
  const client = SeppClient.connect(address);
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

/**
 * Three enqueues, each in a message of its own (each sent once the previous one arrived): the
 * stream holding them, their outcomes (a job id, or the error), and their messages' sequences.
 */
async function threeMessages(
  client: SeppClient,
  deadlinesMs: number[],
): Promise<{ held: HeldStream; outcomes: Promise<string>[]; sequences: number[] }> {
  const outcomes: Promise<string>[] = [];
  const index = streams.length;
  let held: HeldStream | undefined;
  for (const [i, deadlineMs] of deadlinesMs.entries()) {
    const enqueued = client.enqueue('q', `t${i + 1}`, undefined, { deadlineMs });
    outcomes.push(enqueued.then((e) => e.id, outcomeOf));
    held = await received(index, i + 1);
  }
  assert.ok(held !== undefined);
  assert.deepEqual(
    held.received.map((m) => m.jobs.map((j) => j.type)),
    [['t1'], ['t2'], ['t3']],
  );
  return { held, outcomes, sequences: held.received.map((m) => m.sequence) };
}

function outcomeOf(error: unknown): string {
  assert.ok(error instanceof SeppError, `a SeppError, not ${String(error)}`);
  return `${status[error.grpcCode]}: ${error.message}`;
}

test('a sequence-0 answer fails the caller of the message in its place, at once', () =>
  withClient(async (client) => {
    const { held, outcomes, sequences } = await threeMessages(client, [60_000, 60_000, 60_000]);
    const [first, , third] = sequences as [number, number, number];
    const answeredAtMs = Date.now();
    held.call.write(accepted(first, 'id-1'));
    held.call.write(undecodable);
    held.call.write(accepted(third, 'id-3'));
    assert.deepEqual(await Promise.all(outcomes), [
      'id-1',
      'INVALID_ARGUMENT: the message did not decode',
      'id-3',
    ]);
    // Without the order it would have waited for its deadline, a minute away.
    assert.ok(Date.now() - answeredAtMs < 10_000);
  }));

test('a message whose deadline passed keeps its place in the order', () =>
  withClient(async (client) => {
    const { held, outcomes, sequences } = await threeMessages(client, [1, 60_000, 60_000]);
    assert.equal(await outcomes[0], 'DEADLINE_EXCEEDED: no answer from sepp before the deadline');
    const [, second, third] = sequences as [number, number, number];
    // The first message's answer comes late: it answers the first message, nobody else.
    held.call.write(undecodable);
    held.call.write(accepted(second, 'id-2'));
    held.call.write(accepted(third, 'id-3'));
    assert.deepEqual(await Promise.all(outcomes.slice(1)), ['id-2', 'id-3']);
  }));

test('an answer out of step ends the stream: its messages fail with INTERNAL, the next opens another', () =>
  withClient(async (client) => {
    const { held, outcomes, sequences } = await threeMessages(client, [60_000, 60_000, 60_000]);
    const [first, second] = sequences as [number, number, number];
    held.call.write(accepted(first, 'id-1'));
    // The second message's place, answered with the third message's sequence.
    held.call.write(accepted(second + 1, 'id-3'));
    const refused = `INTERNAL: the server answered Produce message ${second + 1} where message ${second} was next; the stream was ended`;
    assert.deepEqual(await Promise.all(outcomes), ['id-1', refused, refused]);
    const index = streams.length;
    const next = client.enqueue('q', 't4');
    const reopened = await received(index, 1);
    reopened.call.write(accepted(reopened.received[0]!.sequence, 'id-4'));
    assert.equal((await next).id, 'id-4');
  }));
