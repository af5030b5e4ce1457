/**
 * Job dependencies (issue 33), an optional capability: a store that has it releases a
 * waiting job in the ack of its dependency; a store without it refuses depends_on and
 * a flow's `after` with FAILED_PRECONDITION naming the store, and stores nothing.
 */
import assert from 'node:assert/strict';
import { SeppError } from '../../../../src/engine/errors.ts';
import { just } from '../../../../src/store/op.ts';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const dependencyCases: StoreCase[] = [
  {
    name: 'dependencies: released in the ack of the last one, or refused by a store without them',
    async run(h) {
      const { engine } = await h.engine();
      const { jobId: parent } = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('a') });
      const supported = await h.store.read((view) => just(view.dependencies !== undefined));
      if (!supported) {
        await assert.rejects(
          engine.enqueue({ queue: 'q', type: 't', payload: bytes('b'), dependsOn: [parent] }),
          (error) =>
            error instanceof SeppError &&
            error.code === 'failed_precondition' &&
            error.rejection?.reason === 'dependencies_unsupported' &&
            error.message.includes(`the ${h.store.kind} store keeps no job dependencies`),
        );
        await assert.rejects(
          engine.enqueueFlow([
            { name: 'a', queue: 'q', type: 't', payload: bytes('') },
            { name: 'b', queue: 'q', type: 't', payload: bytes(''), after: ['a'] },
          ]),
          (error) =>
            error instanceof SeppError &&
            error.code === 'failed_precondition' &&
            error.message.includes(`the ${h.store.kind} store keeps no job dependencies`),
        );
        // A flow whose jobs wait on nothing is an all-or-nothing enqueue, on any store.
        const flow = await engine.enqueueFlow([{ name: 'alone', queue: 'q', type: 't', payload: bytes('') }]);
        assert.equal(flow.committed, true);
        return;
      }
      const { jobId: child } = await engine.enqueue({
        queue: 'q2',
        type: 't',
        payload: bytes('b'),
        dependsOn: [parent],
      });
      assert.equal((await engine.getJob(child)).state, 'waiting');
      const [leased] = await engine.reserve({ queues: ['q'] });
      await engine.ack({ jobId: parent, attempt: leased!.attempt });
      assert.equal((await engine.getJob(child)).state, 'ready');
    },
  },
];
