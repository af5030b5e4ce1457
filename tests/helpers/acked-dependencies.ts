/**
 * An AckBatch of jobs others wait on against acking them one by one (tests/engine/batch-statements
 * on SQLite, batch-statements-postgres on PostgreSQL): a graph with a fan-in, a job left
 * waiting, a delayed one, one cancelled while it waits, a batch member and a plain job; the
 * same rows, edges, counters and results passed on after either way.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../src/engine/engine.ts';
import type { Ack, EnqueueRequest } from '../../src/engine/types.ts';
import { bytes, job } from './engine.ts';

/** What the scenario reads from the store's tables. */
export interface AckedDependencyRows {
  /** A job's state, or undefined once gone. */
  state(id: string): Promise<string | undefined>;
  /** Every edge: its waiting job's id, its job's id, its state. */
  edges(): Promise<{ child: string; parent: string; state: string }[]>;
  /** How many jobs the queue `callbacks` holds (the batch's completion job). */
  completions(): Promise<number>;
}

/** What the scenario ends with. */
export interface AckedDependencies {
  states: Record<string, string | undefined>;
  parents: (string | undefined)[];
  edges: string[];
  completions: number | undefined;
  passed: Record<string, string[] | undefined>;
}

/** Runs the scenario on `engine` (no completed job kept), acked `together` in one AckBatch or one by one. */
export async function ackDependencies(
  engine: Engine,
  rows: AckedDependencyRows,
  together: boolean,
): Promise<AckedDependencies> {
  const add = async (queue: string, extra: Partial<EnqueueRequest> = {}) =>
    (await engine.enqueue(job(queue, extra))).jobId;
  const parents: string[] = [];
  for (let n = 0; n < 4; n++) parents.push(await add('p'));
  const batch = await engine.createBatch({
    onComplete: { queue: 'callbacks', type: 'done', payload: bytes('{}'), contentType: 'application/json' },
    jobs: [job('p')],
    seal: true,
  });
  const member = batch.results[0]?.ok ? batch.results[0].jobId : assert.fail('member');
  parents.push(member);
  const [p1, p2, p3, p4] = parents as [string, string, string, string];
  const notAcked = await add('x');
  const named = {
    fanIn: await add('c', { dependsOn: [p1, p2, p3, p4] }),
    stillWaits: await add('c', { dependsOn: [p1, p2, notAcked], onDependencyFailure: 'run' }),
    later: await add('c', { dependsOn: [p3], delayMs: 60_000 }),
    cancelled: await add('c', { dependsOn: [p4] }),
    plain: await add('c'),
    afterMember: await add('c', { dependsOn: [member, p1] }),
  };
  await engine.cancel(named.cancelled);
  const leased = await engine.reserve({ queues: ['p'], maxJobs: 10 });
  assert.equal(leased.length, 5);
  const acks: Ack[] = leased.map((j) => ({
    jobId: j.id,
    attempt: j.attempt,
    result: bytes(`result of ${parents.indexOf(j.id)}`),
  }));
  if (together) {
    // Unknown jobs among them: each one's Settler path runs the kept jobs' ends before it.
    acks.splice(2, 0, { jobId: 'gone-1', attempt: 1 });
    acks.push(...Array.from({ length: 4 }, (_, i) => ({ jobId: `gone-${i + 2}`, attempt: 1 })));
    const outcomes = await engine.ackBatch(acks);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      acks.map((a) => (a.jobId.startsWith('gone-') ? 'not_found' : 'ok')),
    );
  } else {
    for (const ack of acks) await engine.ack(ack);
  }
  assert.deepEqual(await engine.counterMismatches(), []);
  const nameOf = (id: string) => Object.entries(named).find(([, n]) => n === id)?.[0];
  const edges = (await rows.edges())
    .map((e) => `${nameOf(e.child)} ← ${parents.indexOf(e.parent)}: ${e.state}`)
    .sort();
  const completions = await rows.completions();
  const states: Record<string, string | undefined> = {};
  for (const [name, id] of Object.entries(named)) states[name] = await rows.state(id);
  // The released jobs leased together: each gets its own dependencies' results (ofMany), in order.
  const passed = Object.fromEntries(
    (await engine.reserve({ queues: ['c'], maxJobs: 10 })).map((j) => [
      nameOf(j.id),
      j.dependencyResults?.map(
        (r) => `${parents.indexOf(r.jobId)} ${r.state} ${Buffer.from(r.result ?? []).toString()}`,
      ),
    ]),
  );
  const parentStates: (string | undefined)[] = [];
  for (const id of parents) parentStates.push(await rows.state(id));
  return { states, parents: parentStates, edges, completions, passed };
}

/** What the scenario must end with, either way. */
export function assertAckedDependencies(together: AckedDependencies): void {
  assert.deepEqual(together.states, {
    fanIn: 'ready',
    stillWaits: 'waiting',
    later: 'scheduled',
    cancelled: 'cancelled',
    afterMember: 'ready',
    plain: 'ready',
  });
  assert.deepEqual(together.parents, Array(5).fill('completed'));
  assert.equal(together.completions, 1, "the batch's completion job, once");
  assert.deepEqual(together.passed, {
    fanIn: [0, 1, 2, 3].map((n) => `${n} completed result of ${n}`),
    afterMember: ['0 completed result of 0', '4 completed result of 4'],
    plain: undefined,
  });
  // The edge to the job cancelled while it waited stays pending, as one by one leaves it.
  assert.ok(together.edges.includes('cancelled ← 3: pending'), together.edges.join('\n'));
}
