/**
 * Workflows through gRPC and the TypeScript SDK (issue 33): `dependsOn` on an
 * enqueue, the waiting state in GetJob, the release by an ack, the refusals with
 * their status codes, and a flow built with `Flow`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { Flow, JobRejectedError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

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
    assert.equal((await served.client.getServerInfo()).limits.maxDependenciesPerJob, 100);
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
});
