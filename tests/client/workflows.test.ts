/**
 * Workflows through gRPC and the TypeScript SDK (issue 33): `dependsOn` on an
 * enqueue, the waiting state in GetJob, the release by an ack, the refusals with
 * their status codes, and a flow built with `Flow` — on the Produce stream, and
 * on the unary EnqueueFlow with the `unary` transport, answered alike.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type {
  EnqueueFlowRequest,
  EnqueueFlowResponse,
} from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { Flow, JobRejectedError, SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';

describe('workflows over gRPC', () => {
  const served = serverAndClient();

  async function runOne(queue: string): Promise<string> {
    const [leased] = await served.client.reserve({ queues: [queue] });
    assert.ok(leased, `a job of ${queue} should be ready`);
    await served.client.ack(leased);
    return leased.id;
  }

  test('dependsOn: the job waits until its dependency is acked', async () => {
    const a = await served.client.enqueue('wf-a', 'extract');
    const b = await served.client.enqueue('wf-b', 'load', undefined, {
      dependsOn: [a.id],
      onDependencyFailure: 'run',
    });
    assert.equal((await served.client.getJob(b.id)).state, 'waiting');
    assert.deepEqual(await served.client.reserve({ queues: ['wf-b'] }), []);
    await runOne('wf-a');
    assert.equal((await served.client.getJob(b.id)).state, 'ready');
    assert.equal(await runOne('wf-b'), b.id);
  });

  test("dependencyResults: the leased job gets its dependencies' results, decoded, by name", async () => {
    const ids = await served.client.enqueueFlow(
      new Flow()
        .add('count', { queue: 'wf-count', type: 'count' })
        .add('report', { queue: 'wf-report', type: 'report', after: ['count'] }),
    );
    const [counting] = await served.client.reserve({ queues: ['wf-count'] });
    assert.ok(counting);
    assert.deepEqual(counting.dependencyResults, []);
    await served.client.ack(counting, { result: { rows: 42 } });
    const [reporting] = await served.client.reserve({ queues: ['wf-report'] });
    assert.equal(reporting?.id, ids.report!.id);
    assert.deepEqual(
      reporting?.dependencyResults.map((d) => [d.jobId, d.name, d.state, d.result, d.resultOmitted]),
      [[ids.count!.id, 'count', 'completed', { rows: 42 }, false]],
    );
    await served.client.ack(reporting!);
  });

  test('refusals: an unknown dependency is NOT_FOUND, too many are INVALID_ARGUMENT', async () => {
    await assert.rejects(
      served.client.enqueue('wf-c', 't', undefined, { dependsOn: ['0190b2a0-nope'] }),
      (error) => {
        assert.ok(error instanceof JobRejectedError);
        assert.equal(error.reason, 'unknown_dependency');
        assert.equal(error.grpcCode, status.NOT_FOUND);
        return true;
      },
    );
    const many = Array.from({ length: 101 }, (_, i) => `id-${i}`);
    await assert.rejects(served.client.enqueue('wf-c', 't', undefined, { dependsOn: many }), (error) => {
      assert.ok(error instanceof JobRejectedError);
      assert.equal(error.grpcCode, status.INVALID_ARGUMENT);
      assert.match(error.message, /limits\.max_dependencies_per_job/);
      return true;
    });
    const { limits } = await served.client.getServerInfo();
    assert.equal(limits.maxDependenciesPerJob, 100);
    assert.equal(limits.maxDependentsPerJob, 10_000);
  });

  test('onDependencyFailure without dependencies: INVALID_ARGUMENT before anything is sent', async () => {
    const lone = (error: unknown) => {
      assert.ok(!(error instanceof JobRejectedError), 'refused by the SDK, not the server');
      assert.equal((error as SeppError).code, 'invalid_argument');
      assert.match(String(error), /onDependencyFailure is given but the job has no dependencies/);
      return true;
    };
    await assert.rejects(
      served.client.enqueue('wf-lone', 't', undefined, { onDependencyFailure: 'run' }),
      lone,
    );
    await assert.rejects(
      served.client.enqueueFlow(
        new Flow().add('a', { queue: 'wf-lone', type: 't', onDependencyFailure: 'wait' }),
      ),
      lone,
    );
    assert.deepEqual(await served.client.reserve({ queues: ['wf-lone'] }), [], 'nothing was sent');
    // In a flow, `after` is what it is about.
    const ids = await served.client.enqueueFlow(
      new Flow()
        .add('a', { queue: 'wf-lone', type: 't' })
        .add('b', { queue: 'wf-lone', type: 't', after: ['a'], onDependencyFailure: 'run' }),
    );
    assert.equal((await served.client.getJob(ids.b!.id)).state, 'waiting');
  });

  test('a flow: ids by name, released in order; a cycle is refused with INVALID_ARGUMENT', async () => {
    const flow = new Flow()
      .add('split', { queue: 'wf-split', type: 'split' })
      .add('left', { queue: 'wf-part', type: 'part', after: ['split'] })
      .add('right', { queue: 'wf-part', type: 'part', after: ['split'] })
      .add('join', { queue: 'wf-join', type: 'join', after: ['left', 'right'] });
    const ids = await served.client.enqueueFlow(flow);
    assert.deepEqual(Object.keys(ids).sort(), ['join', 'left', 'right', 'split']);
    assert.equal((await served.client.getJob(ids.join!.id)).state, 'waiting');
    await runOne('wf-split');
    await runOne('wf-part');
    assert.equal((await served.client.getJob(ids.join!.id)).state, 'waiting');
    await runOne('wf-part');
    assert.equal(await runOne('wf-join'), ids.join!.id);

    await assert.rejects(
      served.client.enqueueFlow([
        { name: 'a', queue: 'wf-x', type: 't', after: ['b'] },
        { name: 'b', queue: 'wf-x', type: 't', after: ['a'] },
      ]),
      (error) => {
        assert.equal((error as { grpcCode?: number }).grpcCode, status.INVALID_ARGUMENT);
        assert.match(String(error), /is in a cycle/);
        return true;
      },
    );
    await assert.rejects(
      served.client.enqueueFlow([{ name: 'a', queue: 'wf-x', type: 't', priority: 42 }]),
      (error) => error instanceof JobRejectedError && error.rejections[0]?.index === 0,
    );
  });

  test('enqueueFlow travels on the Produce stream; the unary transport takes EnqueueFlow; both answer alike', async () => {
    const unary = SeppClient.connect(served.server.address, { transport: 'unary' });
    try {
      const outcomes = [];
      for (const client of [served.client, unary]) {
        const before = client.stats().produceMessages;
        const ids = await client.enqueueFlow(
          new Flow()
            .add('first', { queue: 'wf-way', type: 't', idempotencyKey: 'wf-way-first' })
            .add('then', { queue: 'wf-way', type: 't', after: ['first'] }),
        );
        const refusal = await client
          .enqueueFlow([{ name: 'a', queue: 'wf-way', type: 't', after: ['a'] }])
          .then(
            () => assert.fail('a job after itself was taken'),
            (error: SeppError) => [error.constructor.name, error.grpcCode, error.code, error.message],
          );
        outcomes.push({
          messages: client.stats().produceMessages - before,
          names: Object.keys(ids),
          first: ids.first,
          waiting: (await client.getJob(ids.then!.id)).state,
          refusal,
        });
      }
      const [stream, viaUnary] = outcomes;
      assert.equal(stream?.messages, 2, 'both flows went on the stream');
      assert.equal(viaUnary?.messages, 0);
      assert.deepEqual(stream?.names, ['first', 'then']);
      assert.equal(stream?.waiting, 'waiting');
      assert.equal(stream?.first?.deduplicated, false);
      // The second flow's `first` is the first one's job again (its idempotency key).
      assert.deepEqual(viaUnary?.first, { ...stream?.first, deduplicated: true });
      assert.deepEqual(
        { ...viaUnary, first: undefined, messages: 0 },
        { ...stream, first: undefined, messages: 0 },
      );
    } finally {
      await unary.close();
    }
  });

  test('flows enqueued in one turn travel in one Produce message, each answered on its own', async () => {
    const before = served.client.stats().produceMessages;
    const flow = (name: string) =>
      new Flow()
        .add(name, { queue: 'wf-turn', type: 't' })
        .add(`${name}-then`, { queue: 'wf-turn', type: 't', after: [name] });
    const outcomes = await Promise.allSettled([
      served.client.enqueueFlow(flow('one')),
      served.client.enqueueFlow([{ name: 'a', queue: 'wf-turn', type: 't', after: ['a'] }]),
      served.client.enqueueFlow(flow('two')),
    ]);
    assert.equal(served.client.stats().produceMessages - before, 1);
    const [one, cycle, two] = outcomes;
    assert.equal(cycle?.status, 'rejected');
    assert.equal(
      cycle.status === 'rejected' && (cycle.reason as SeppError).grpcCode,
      status.INVALID_ARGUMENT,
    );
    for (const [outcome, name] of [
      [one, 'one'],
      [two, 'two'],
    ] as const) {
      assert.equal(outcome?.status, 'fulfilled');
      const ids = outcome.status === 'fulfilled' ? outcome.value : {};
      assert.deepEqual(Object.keys(ids), [name, `${name}-then`]);
      assert.equal((await served.client.getJob(ids[`${name}-then`]!.id)).state, 'waiting');
    }
  });
});

for (const knowsFlow of [false, true]) {
  test(`against a server older than ${knowsFlow ? 'several flows in a Produce message, flows go one per message' : 'flows on Produce, enqueueFlow takes EnqueueFlow'} after the first refusal`, async () => {
    // What such a server answers: it skips the unknown field and refuses a message of no jobs.
    const seen: string[] = [];
    const server = new grpc.Server();
    server.addService(QueueServiceService, {
      produce: (stream: grpc.ServerDuplexStream<ProduceRequest, ProduceResponse>) => {
        stream.on('data', (message: ProduceRequest) => {
          seen.push(
            `produce ${message.flows !== undefined ? 'flows' : message.flow === undefined ? 'jobs' : 'flow'}`,
          );
          if (knowsFlow && message.flow !== undefined) {
            const jobs = message.flow.jobs.map((j, i) => ({
              name: j.name,
              jobId: `id-${i}`,
              deduplicated: false,
            }));
            stream.write({
              sequence: message.sequence,
              code: 0,
              message: '',
              results: [],
              flow: { committed: true, jobs, rejections: [] },
              retry: '',
            });
            return;
          }
          stream.write({
            sequence: message.sequence,
            code: status.INVALID_ARGUMENT,
            message: 'jobs: the batch is empty',
            results: [],
            retry: '',
          });
        });
        stream.on('end', () => stream.end());
      },
      enqueueFlow: (
        call: grpc.ServerUnaryCall<EnqueueFlowRequest, EnqueueFlowResponse>,
        callback: grpc.sendUnaryData<EnqueueFlowResponse>,
      ) => {
        seen.push('EnqueueFlow');
        const jobs = call.request.jobs.map((j, i) => ({
          name: j.name,
          jobId: `id-${i}`,
          deduplicated: false,
        }));
        callback(null, { committed: true, jobs, rejections: [] });
      },
    });
    const address = await listenOnLoopback(server);
    const client = SeppClient.connect(address);
    try {
      const flow = new Flow().add('a', { queue: 'q', type: 't' });
      const stored = { a: { id: 'id-0', deduplicated: false, debounced: false } };
      // Two in one turn (one message of `flows`), then two more.
      assert.deepEqual(await Promise.all([client.enqueueFlow(flow), client.enqueueFlow(flow)]), [
        stored,
        stored,
      ]);
      assert.deepEqual(await Promise.all([client.enqueueFlow(flow), client.enqueueFlow(flow)]), [
        stored,
        stored,
      ]);
      const flows = ['produce flows', 'produce flow', 'produce flow'];
      assert.deepEqual(
        seen,
        knowsFlow
          ? [...flows, 'produce flow', 'produce flow']
          : [...flows, 'EnqueueFlow', 'EnqueueFlow', 'EnqueueFlow', 'EnqueueFlow'],
      );
    } finally {
      await client.close();
      server.forceShutdown();
    }
  });
}
