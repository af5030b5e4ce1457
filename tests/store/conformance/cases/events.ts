/** Job events follow commit order; a subscriber resumes from a cursor and misses nothing. */
import assert from 'node:assert/strict';
import { collect } from '../../../helpers/events.ts';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const eventCases: StoreCase[] = [
  {
    name: 'events: in commit order with rising sequences; a resume after a sequence gets the rest',
    async run(h) {
      const { engine } = await h.engine();
      const all = collect(engine);
      const { jobId: a } = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('a') });
      const { jobId: b } = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('b') });
      const [leased] = await engine.reserve({ queues: ['q'] });
      assert.equal(leased?.id, a, 'FIFO');
      await engine.ack({ jobId: a, attempt: leased!.attempt });
      await engine.cancel(b);
      assert.deepEqual(all.summary(), [
        `enqueued:${a}`,
        `enqueued:${b}`,
        `leased:${a}`,
        `completed:${a}`,
        `cancelled:${b}`,
      ]);
      const sequences = all.events.map((e) => e.sequence);
      assert.deepEqual(
        sequences,
        [...sequences].sort((x, y) => x - y),
      );
      assert.equal(new Set(sequences).size, sequences.length);
      // Resume after the second event: exactly the three after it.
      const resumed = collect(
        engine,
        {},
        { kind: 'after', sequence: sequences[1]!, streamId: engine.eventStreamId },
      );
      assert.deepEqual(resumed.summary(), all.summary().slice(2));
      // Filtered by job: only that job's events, in order.
      const ofA = collect(engine, { jobIds: [a] }, { kind: 'oldest' });
      assert.deepEqual(ofA.summary(), [`enqueued:${a}`, `leased:${a}`, `completed:${a}`]);
      for (const c of [all, resumed, ofA]) c.subscription.close();
    },
  },
];
