/**
 * The scenario of a failure passed on through a long chain, bounded per transaction
 * (src/engine/dependencies/failures.ts), for each store's test: a chain of jobs each waiting on
 * the one before, made over many requests, is cancelled a bounded part per unit — the unit that
 * fails its first job, then maintenance passes one right after the other — never whole in one
 * transaction; what is left is kept in the store, so a restart between two passes goes on
 * where the last one stopped. The clocks are fake: a pass runs only when the test lets the
 * clock's due timers fire (`advance(0)`), so what one unit did is seen before the next.
 */
import assert from 'node:assert/strict';
import type { FakeClock } from '../../src/engine/clock.ts';
import { failureVisitsPerUnit } from '../../src/engine/dependencies/failures.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { DependencyPolicy, FlowJob } from '../../src/engine/types.ts';

const payload = new Uint8Array([1]);
/** Jobs in the chain: each link costs a unit two visits (the job, the one waiting on it). */
const chainJobs = 1200;
const perFlow = 50;

/** An engine on a store, whose maintenance passes the test runs one at a time. */
export interface Subject {
  engine: Engine;
  clock: FakeClock;
  /** Lets the clock's due timers fire and resolves once the pass they start has committed. */
  pass(): Promise<void>;
  /** Jobs kept for maintenance, read from the store's table. */
  kept(): Promise<number>;
  /** The same store opened again by a new engine, this one closed first (a restart). */
  restart(): Promise<Subject>;
  /** Checks the counters and closes. */
  close(): Promise<void>;
}

/** Maintenance's observer (EngineDeps.onMaintenancePassed), and `pass` that waits on it. */
export function passes(clock: FakeClock): { onMaintenancePassed: () => void; pass: () => Promise<void> } {
  let resolvePass: (() => void) | undefined;
  return {
    onMaintenancePassed: () => resolvePass?.(),
    pass: async () => {
      const passed = new Promise<void>((resolve) => {
        resolvePass = resolve;
      });
      clock.advance(0);
      await passed;
    },
  };
}

/**
 * A job on `queue` its own, then `chainJobs` jobs on `chain`, each waiting on the one before, in
 * flows; the first waits on the head by `headPolicy` (the others by the default, `cancel`).
 */
export async function chain(
  engine: Engine,
  head: string,
  queue: string,
  headPolicy: DependencyPolicy = 'cancel',
): Promise<string> {
  const { jobId: headId } = await engine.enqueue({ queue: head, type: 't', payload });
  let last = headId;
  for (let made = 0; made < chainJobs; made += perFlow) {
    const jobs: FlowJob[] = Array.from({ length: perFlow }, (_, i) => ({
      queue,
      type: 't',
      payload,
      name: `j${i}`,
      ...(i === 0 ? { dependsOn: [last] } : { after: [`j${i - 1}`] }),
      ...(i === 0 && made === 0 ? { onDependencyFailure: headPolicy } : {}),
    }));
    const flow = await engine.enqueueFlow(jobs);
    assert.ok(flow.committed);
    last = flow.jobs.at(-1)!.jobId;
  }
  return headId;
}

export async function fail(engine: Engine, queue: string): Promise<void> {
  const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1, leaseMs: 60_000 });
  assert.ok(leased !== undefined);
  await engine.nack({
    jobId: leased.id,
    attempt: leased.attempt,
    error: 'boom',
    directive: { kind: 'dead_letter' },
  });
}

export const countsOf = async (engine: Engine, queue: string) => {
  const info = await engine.getQueue(queue);
  assert.ok(info !== undefined);
  return { waiting: info.counts.waiting, cancelled: info.counts.cancelled };
};

/**
 * The chain's first job fails: its unit cancels at most the bound's part of the chain and keeps
 * the rest; one more pass does the same; a restart; passes go on at once until it is all cancelled.
 */
export async function boundedCascade(open: () => Promise<Subject>, queue: string): Promise<void> {
  let s = await open();
  try {
    await chain(s.engine, `${queue}-head`, queue);
    await fail(s.engine, `${queue}-head`);
    const first = await countsOf(s.engine, queue);
    // A link is two visits: the unit stops once it visited the bound's jobs.
    assert.equal(first.cancelled, failureVisitsPerUnit / 2, 'the failing unit cancels a bounded part');
    assert.equal(first.waiting, chainJobs - first.cancelled);
    assert.equal(await s.kept(), 1, 'the job it stopped at is kept');

    await s.pass();
    const second = await countsOf(s.engine, queue);
    assert.ok(second.cancelled > first.cancelled, 'a pass goes on');
    assert.ok(second.cancelled - first.cancelled <= failureVisitsPerUnit / 2, 'a pass is bounded too');
    assert.ok(second.waiting > 0);

    s = await s.restart();
    assert.deepEqual(await countsOf(s.engine, queue), second, 'nothing moved while stopped');
    for (let i = 0; i < 5 && (await countsOf(s.engine, queue)).waiting > 0; i++) await s.pass();
    assert.deepEqual(await countsOf(s.engine, queue), { waiting: 0, cancelled: chainJobs });
    assert.equal(await s.kept(), 0);
  } finally {
    await s.close();
  }
}

/**
 * A chain cancelled with its flow (cancelFlow, newest job first): its unit spends its bound
 * long before the chain's end, but each job it reaches after has its edges to the jobs
 * cancelled before it resolved `failed` at once, and nothing waits on it any more: none is
 * kept for maintenance, and every edge of the flow says `failed` without a pass.
 */
export async function flowCancelKeepsNone(open: () => Promise<Subject>, queue: string): Promise<void> {
  const s = await open();
  try {
    const head = await chain(s.engine, `${queue}-head`, queue);
    const result = await s.engine.cancelFlow(head);
    assert.equal(result.cancelled, chainJobs + 1);
    assert.equal(await s.kept(), 0, 'no job of the flow is kept for maintenance');
    const flow = await s.engine.getFlow(head);
    assert.equal(flow.edges.length, chainJobs);
    assert.deepEqual([...new Set(flow.edges.map((edge) => edge.state))], ['failed']);
  } finally {
    await s.close();
  }
}
