/**
 * Event kinds in the TypeScript SDK: a kind newer than the SDK (a newer server: the SDK asks for
 * every kind with `all_kinds`) is passed over, not a broken stream, and the subscription's
 * position moves past it. A stand-in server sends the kinds, as a real one sends only its own.
 * `sepp events` (the CLI, on the SDK) shows lease_undone's line and passes over the newer kind.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  type EventsRequest,
  type EventsResponse,
  JobEvent,
  JobEventKind,
} from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { sepp } from '../helpers/cli.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';

/** A kind no SDK knows: one a later server might add. */
const newerKind = 999 as JobEventKind;
const sent = [JobEventKind.LEASED, newerKind, JobEventKind.LEASE_UNDONE];
const requests: EventsRequest[] = [];

let server: grpc.Server;
let address: string;

before(async () => {
  server = new grpc.Server();
  server.addService(QueueServiceService, {
    // Caught up, then one event of each kind of `sent`; the stream stays open until cancelled.
    events: (call: grpc.ServerWritableStream<EventsRequest, EventsResponse>) => {
      requests.push(call.request);
      call.write({ streamId: 's', events: [], caughtUp: true, sequence: 0 });
      call.write({
        streamId: 's',
        events: sent.map((kind, i) =>
          JobEvent.fromPartial({
            sequence: i + 1,
            kind,
            jobId: `j${i + 1}`,
            queue: 'q',
            type: 't',
            attempt: 1,
            state: JobState.READY,
          }),
        ),
        caughtUp: false,
        sequence: 0,
      });
      call.on('cancelled', () => call.end());
    },
  });
  address = await listenOnLoopback(server);
});

after(() => server.forceShutdown());

test('a kind newer than the SDK is passed over; lease_undone is read with its state', async () => {
  const client = SeppClient.connect(address);
  try {
    const subscription = client.events();
    const seen: string[] = [];
    for await (const event of subscription) {
      seen.push(`${event.kind}:${event.jobId}:${event.state}`);
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ['leased:j1:ready', 'lease_undone:j3:ready']);
    assert.deepEqual(subscription.position, { streamId: 's', sequence: 3 });
    assert.equal(requests[0]?.allKinds, true);
  } finally {
    await client.close();
  }
});

test('sepp events: the line of a lease_undone, the newer kind passed over', async () => {
  const run = await sepp(['events', '--count', '2'], { SEPP_SERVER: address });
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trim().split('\n');
  assert.equal(lines.length, 2, run.stdout);
  assert.match(lines[0]!, / leased +q\/t {2}j1 {2}attempt 1$/);
  assert.match(
    lines[1]!,
    / lease_undone +q\/t {2}j3 {2}attempt 1 undone \(never reached a worker, or given back\), ready$/,
  );
});
