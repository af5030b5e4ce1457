/**
 * Calls cancelled on one connection (tests/helpers/stream-resets.ts): each
 * cancel of a call still open sends the server an HTTP/2 RST_STREAM, and
 * Node's HTTP/2 server allows a connection 1,000 of them in a burst, then 33 a
 * second. Within that, a connection serves however many calls it cancels —
 * long-polls, Work, Produce and Events streams, cancelled as they open or
 * after their first answer; past it, the server closes the connection and the
 * client's next call goes over a new one (docs/configuration.md, "Cancelled
 * calls per connection").
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Client,
  type ClientReadableStream,
  connectivityState,
  credentials,
  Metadata,
} from '@grpc/grpc-js';
import { SeppClient } from '@sepp-queue/client';
import { cancelCall } from '../../clients/typescript/src/cancel-call.ts';
import { EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { rawBidi } from '../helpers/raw-grpc.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { ResetPacer, resetBurst } from '../helpers/stream-resets.ts';

let t: TestServer;
before(async () => {
  // Relaxed: no fsync for each Produce call's job; what this checks is the connection, not durability.
  t = await startTestServer({ toml: '[server]\ndurability = "relaxed"\n' });
});
after(async () => {
  await t.dispose();
});

/** A connection of its own, and how often it stopped being ready. */
async function connection(): Promise<{ client: QueueServiceClient; drops: () => number }> {
  const client = new QueueServiceClient(t.address, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  });
  await call(client, client.getServerInfo, {});
  return { client, drops: watchDrops(client) };
}

/** Counts how often `client`'s connection stops being ready (it is ready now). */
function watchDrops(client: Client): () => number {
  const channel = client.getChannel();
  let drops = 0;
  const watch = (state: connectivityState) => {
    if (state === connectivityState.SHUTDOWN) return;
    channel.watchConnectivityState(state, Number.POSITIVE_INFINITY, () => {
      const now = channel.getConnectivityState(false);
      if (state === connectivityState.READY && now !== connectivityState.READY) drops++;
      watch(now);
    });
  };
  watch(channel.getConnectivityState(false));
  return () => drops;
}

const kinds = ['Reserve', 'Work', 'Produce', 'Events'] as const;
type Kind = (typeof kinds)[number];

/** Starts a call of `kind` and cancels it at once or after its first answer; resolves when it ended. */
function cancelled(client: QueueServiceClient, kind: Kind, atOnce: boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => resolve();
    if (kind === 'Reserve') {
      const request = {
        queues: ['empty'],
        maxJobs: 1,
        leaseDurationMs: 1000,
        waitTimeoutMs: 60_000,
        workerId: 'w',
        maxResponseBytes: 0,
      };
      const unary = client.reserve(request, done);
      // A long poll: the server holds it until the cancel reaches it.
      if (atOnce) cancelCall(unary);
      else setTimeout(() => cancelCall(unary), 5);
      return;
    }
    let stream: ClientReadableStream<unknown>;
    if (kind === 'Events') {
      stream = client.makeServerStreamRequest(
        '/sepp.v1.QueueService/Events',
        (b: Buffer) => b,
        (b: Buffer) => EventsResponse.decode(b),
        Buffer.alloc(0),
        new Metadata(),
      );
      if (!atOnce) setTimeout(() => cancelCall(stream), 5);
    } else if (kind === 'Work') {
      const work = rawBidi(client, '/sepp.v1.QueueService/Work', (b) => WorkResponse.decode(b));
      const subscribe: WorkRequest = {
        requestId: 0,
        kind: {
          $case: 'subscribe',
          value: { queues: ['empty'], leaseDurationMs: 1000, workerId: 'w', batchResponses: false },
        },
      };
      work.write(Buffer.from(WorkRequest.encode(subscribe).finish()));
      if (!atOnce) setTimeout(() => cancelCall(work), 5);
      stream = work;
    } else {
      const produce = rawBidi(client, '/sepp.v1.QueueService/Produce', (b) => ProduceResponse.decode(b));
      const request = ProduceRequest.encode({ sequence: 1, jobs: [testJob('resets')], atomic: false });
      produce.write(Buffer.from(request.finish()));
      if (!atOnce) produce.once('data', () => cancelCall(produce));
      stream = produce;
    }
    stream.on('error', done);
    stream.on('status', done);
    if (atOnce) cancelCall(stream);
  });
}

/** Calls open at once while cancelling: enough to cancel faster than 33 a second on a loaded machine. */
const concurrency = 16;

/** Runs `next(i)` for i = 0, 1, … in `concurrency` lanes while `more(i)`. */
async function inLanes(more: (i: number) => boolean, next: (i: number) => Promise<void>): Promise<number> {
  let i = 0;
  const lane = async () => {
    while (more(i)) await next(i++);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return i;
}

test(`${resetBurst + 200} calls cancelled on one connection within the reset bound: it stays open and serves the next call`, async () => {
  const { client, drops } = await connection();
  const pacer = new ResetPacer();
  try {
    await inLanes(
      (i) => i < resetBurst + 200,
      async (i) => {
        await pacer.take();
        await cancelled(client, kinds[i % kinds.length]!, i % 8 < 4);
      },
    );
    const info = await call(client, client.getServerInfo, {}, new Metadata(), {
      deadline: Date.now() + 10_000,
    });
    assert.ok(info.version.length > 0);
    assert.equal(drops(), 0, `the connection closed after ${pacer.taken} cancels`);
    console.log(
      `${pacer.taken} cancelled, ${(pacer.waitedMs / 1000).toFixed(1)} s waited for the bound; the connection stayed`,
    );
  } finally {
    client.close();
  }
});

test('calls cancelled past the bound: the server closes the connection, and the next call goes over a new one', async () => {
  const { client, drops } = await connection();
  try {
    // As fast as they go: far more than 33 a second. The burst is spent first.
    const cancels = await inLanes(
      (i) => drops() === 0 && i < resetBurst * 10,
      (i) => cancelled(client, kinds[i % kinds.length]!, i % 8 < 4),
    );
    assert.equal(drops(), 1, `${cancels} cancels and the connection is still open`);
    assert.ok(cancels > resetBurst, `the connection closed after ${cancels} cancels, within the burst`);
    const info = await call(client, client.getServerInfo, {}, new Metadata(), {
      deadline: Date.now() + 10_000,
    });
    assert.ok(info.version.length > 0);
    console.log(`the connection closed after ${cancels} cancels; the next call succeeded`);
  } finally {
    client.close();
  }
});

test('the SDK past the bound: waits and a long-poll open when the server closes the connection go on over a new one', async () => {
  const client = SeppClient.connect(t.address, { retry: { unavailable: true } });
  try {
    const { id } = await client.enqueue('later', 't', Buffer.from('x'));
    const drops = watchDrops(client.connection.rpc);
    // Each waits on an Events stream (and reads the job once caught up); the long-poll waits for a job.
    const waits = Array.from({ length: 8 }, () => client.waitFor(id));
    const poll = client.reserve({ queues: ['empty-sdk'], waitMs: 60_000 });
    // The burst spent on the same connection, as fast as it goes.
    const cancels = await inLanes(
      (i) => drops() === 0 && i < resetBurst * 10,
      (i) => cancelled(client.connection.rpc as QueueServiceClient, kinds[i % kinds.length]!, i % 8 < 4),
    );
    assert.equal(drops(), 1, `${cancels} cancels and the connection is still open`);
    const [job] = await client.reserve({ queues: ['later'] });
    assert.ok(job !== undefined, 'the job leased over the new connection');
    await client.ack(job);
    for (const outcome of await Promise.all(waits)) assert.equal(outcome.state, 'completed');
    await client.enqueue('empty-sdk', 't', Buffer.from('y'));
    assert.equal((await poll).length, 1, 'the long-poll, sent again, got the job');
    console.log(`the connection closed after ${cancels} cancels; 8 waits and a long-poll went on`);
  } finally {
    await client.close();
  }
});
