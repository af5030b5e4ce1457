/**
 * Jobs without dependencies pay nothing for workflows (issue 33, W1 ≤ 3 %): the
 * statements their enqueue, lease, ack and nack run — one at a time and in batches — never
 * touch the dependency or batch tables nor set a job's dependency flags, even while
 * another queue of the same server runs flows. Every statement the store runs is
 * recorded by its SQL; the same recorder sees the workflow statements of a flow, so the
 * check can fail.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type Database from 'better-sqlite3';
import type { Engine } from '../../src/engine/engine.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { job, withEngine } from '../helpers/engine.ts';

/** What makes a statement a workflow statement: the edge and batch tables, and the flags' writes (an INSERT's too). */
const workflowStatement = /job_dependencies|batch_members|\bbatches\b|dependency_flags\s*[|)]/;

type Method = 'run' | 'get' | 'all' | 'iterate';

/** Records the SQL of every statement run on `db`'s connection while `body` runs. */
async function statementsRunBy(db: Db, body: () => Promise<void>): Promise<string[]> {
  const prototype = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<
    Method,
    (...a: unknown[]) => unknown
  >;
  const originals = new Map<Method, (...a: unknown[]) => unknown>();
  const seen: string[] = [];
  for (const method of ['run', 'get', 'all', 'iterate'] as const) {
    const original = prototype[method];
    originals.set(method, original);
    prototype[method] = function (this: Database.Statement, ...args: unknown[]) {
      seen.push(this.source);
      return original.apply(this, args);
    };
  }
  try {
    await body();
  } finally {
    for (const [method, original] of originals) prototype[method] = original;
  }
  return seen;
}

/** The W1 shape at engine level: single and batched enqueues, leases, acks (one and many), a nack. */
async function w1(engine: Engine, queue: string): Promise<void> {
  await engine.enqueue(job(queue));
  await engine.enqueueBatch(Array.from({ length: 67 }, () => job(queue)));
  const leased = await engine.reserve({ queues: [queue], maxJobs: 68, leaseMs: 60_000 });
  assert.equal(leased.length, 68);
  const [one, retried, ...many] = leased;
  await engine.ack({ jobId: one!.id, attempt: one!.attempt });
  await engine.nack({ jobId: retried!.id, attempt: retried!.attempt, error: 'again' });
  const outcomes = await engine.ackBatch(many.map((j) => ({ jobId: j.id, attempt: j.attempt })));
  assert.ok(outcomes.every((o) => o.ok));
}

test('jobs without dependencies run no workflow statement, while another queue runs flows', async () => {
  await withEngine({}, async ({ engine, db }) => {
    // Flows have run on this server (another queue): the dependency code is warm and its queue marked.
    const flow = await engine.enqueueFlow([
      { name: 'a', ...job('flows') },
      { name: 'b', ...job('flows'), after: ['a'] },
    ]);
    assert.equal(flow.committed, true, JSON.stringify(flow));

    const w1Statements = await statementsRunBy(db, () => w1(engine, 'w1'));
    assert.ok(w1Statements.length > 0, 'the recorder saw the W1 statements');
    assert.ok(
      w1Statements.some((sql) => /INSERT INTO jobs/.test(sql)) &&
        w1Statements.some((sql) => /DELETE FROM jobs/.test(sql)),
      'the recorder saw the inserts and the acks',
    );
    assert.deepEqual(
      w1Statements.filter((sql) => workflowStatement.test(sql)),
      [],
      'no statement of the W1 path touches the workflow tables',
    );
    // docs/decisions/0012, lever 3: the W1 lease reads no dependency column.
    const leases = w1Statements.filter((sql) => /SET state = 'leased'/.test(sql));
    assert.ok(leases.length > 0, 'the recorder saw the leases');
    assert.deepEqual(
      leases.filter((sql) => /RETURNING[\s\S]*dependency_flags/.test(sql)),
      [],
      'a W1 lease returns no dependency flags',
    );

    // The control: the flow's own lease and ack run workflow statements, and the recorder sees them.
    const flowStatements = await statementsRunBy(db, async () => {
      const [a] = await engine.reserve({ queues: ['flows'], maxJobs: 1, leaseMs: 60_000 });
      await engine.ack({ jobId: a!.id, attempt: a!.attempt });
    });
    assert.ok(
      flowStatements.some((sql) => workflowStatement.test(sql)),
      'the ack of a job another waits on releases it through the dependency tables',
    );
  });
});
