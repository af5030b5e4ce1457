/**
 * The per-batch statements of the hot path: a batch enqueue is stored with
 * multi-row INSERTs (50 rows per statement, then one of the rest's exact size) and an AckBatch counts
 * its acks once per queue. Both must store and count exactly what one job at a
 * time did (docs/performance.md, "Levers, each measured").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import type { Ack, EnqueueRequest, JobEvent } from '../../src/engine/types.ts';
import {
  type AckedDependencies,
  ackDependencies,
  assertAckedDependencies,
} from '../helpers/acked-dependencies.ts';
import { bytes, job, withEngine } from '../helpers/engine.ts';

/** A job with every column the insert writes set to something other than its default. */
const fullJob = (queue: string, n: number): EnqueueRequest => ({
  queue,
  type: `type-${n % 3}`,
  payload: bytes(`payload ${n}`),
  contentType: 'application/json',
  priority: 4,
  delayMs: 60_000,
  maxAttempts: 7,
  leaseMs: 120_000,
  ttlMs: 3_600_000,
  idempotencyKey: `key-${n}`,
  metadata: { tenant: `t${n}` },
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  tracestate: 'vendor=x',
  group: `g${n % 2}`,
});

/** Acks of `n` freshly leased jobs of queue `pad`: they bring an AckBatch to the size the multi-row delete serves (10). */
async function padding(engine: Engine, n: number): Promise<Ack[]> {
  await engine.enqueueBatch(Array.from({ length: n }, () => job('pad')));
  const leased = await engine.reserve({ queues: ['pad'], maxJobs: n });
  assert.equal(leased.length, n);
  return leased.map((j) => ({ jobId: j.id, attempt: j.attempt }));
}

test('a batch of 67 jobs is stored in order through the multi-row inserts (50 rows, then the rest), every column as one by one', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const requests: EnqueueRequest[] = [];
    for (let n = 0; n < 70; n++) {
      if (n === 20)
        requests.push(job('a', { priority: 42 })); // rejected: nothing stored for it
      else if (n === 30) requests.push(job('a', { idempotencyKey: 'twice' }));
      else if (n === 31)
        requests.push(job('a', { idempotencyKey: 'twice' })); // a duplicate of n = 30
      else if (n === 55) requests.push(fullJob('b', n));
      else requests.push(job(n % 2 === 0 ? 'a' : 'b', { payload: bytes(`job ${n}`) }));
    }
    const results = await engine.enqueueBatch(requests);
    assert.equal(results.length, 70);
    assert.equal(results[20]?.ok, false);
    const [first, second] = [results[30], results[31]];
    assert.ok(first?.ok && second?.ok && second.deduplicated);
    assert.equal(second.jobId, first.jobId);
    const stored = results.flatMap((r, n) => (r.ok && !r.deduplicated ? [{ n, id: r.jobId }] : []));
    assert.equal(stored.length, 68, '67 stored by the batch: 70 less one rejection and one duplicate');

    // seq follows the batch's order, so leasing (same priority, all due) returns it.
    const ready = stored.filter(({ n }) => n !== 55);
    for (const queue of ['a', 'b']) {
      const expected = ready.filter(({ n }) => requests[n]?.queue === queue).map(({ id }) => id);
      const leased = await engine.reserve({ queues: [queue], maxJobs: 100 });
      assert.deepEqual(
        leased.map((j) => j.id),
        expected,
      );
      for (const j of leased) {
        const n = stored.find(({ id }) => id === j.id)?.n ?? -1;
        assert.deepEqual(Buffer.from(j.payload), Buffer.from(requests[n]!.payload));
      }
    }

    // The job with every column set is stored exactly as a single enqueue stores the same request.
    const single = await engine.enqueue(fullJob('b', 55));
    const row = (id: string) => {
      const {
        seq: _seq,
        id: _id,
        idempotency_key: _key,
        ...rest
      } = db.prepare<[string], Record<string, unknown>>('SELECT * FROM jobs WHERE id = ?').get(id)!;
      return rest;
    };
    const batched = results[55];
    assert.ok(batched?.ok && !batched.deduplicated);
    assert.ok(single.deduplicated, 'the same idempotency key: the batch stored it');
    await engine.enqueue({ ...fullJob('b', 55), idempotencyKey: 'other' });
    const otherId = db
      .prepare<[], string>("SELECT id FROM jobs WHERE idempotency_key = 'other'")
      .pluck()
      .get()!;
    assert.deepEqual(row(otherId), row(batched.jobId));
    assert.equal(row(batched.jobId).lease_ms, 120_000);
    assert.equal(row(batched.jobId).group_key, 'g1');
    assert.equal(typeof row(batched.jobId).expires_at_ms, 'number');
  });
});

test('an AckBatch of 10 or more counts its acks once per queue: exact counters, one acked event per queue', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (event) => events.push(event) } }, async ({ engine }) => {
    await engine.enqueueBatch([
      ...Array.from({ length: 7 }, () => job('a')),
      ...Array.from({ length: 5 }, () => job('b')),
    ]);
    const leased = await engine.reserve({ queues: ['a', 'b'], maxJobs: 12 });
    assert.equal(leased.length, 12);
    events.length = 0;
    const settles = leased.map((j) => ({ jobId: j.id, attempt: j.attempt }));
    const stale = settles[0]!;
    const outcomes = await engine.ackBatch([...settles, stale]);
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [...settles.map(() => true), false],
    );
    assert.deepEqual(
      events.filter((e) => e.kind === 'acked').map((e) => `${e.queue}:${e.count}`),
      ['a:7', 'b:5'],
    );
    for (const info of await engine.listQueues()) {
      assert.equal(info.counts.leased, 0, `${info.name} has nothing leased`);
      assert.equal(info.counts.ready, 0);
    }
  });
});

test('an AckBatch (of 10 or more) answers each ack as one at a time would: ok, lease_lost, not_found, a job named twice', async () => {
  await withEngine({}, async ({ engine, db }) => {
    await engine.enqueueBatch(Array.from({ length: 4 }, () => job('q')));
    const [j1, j2, j3] = await engine.reserve({ queues: ['q'], maxJobs: 3 });
    assert.ok(j1 && j2 && j3);
    const ready = db.prepare<[], string>("SELECT id FROM jobs WHERE state = 'ready'").pluck().get()!;
    const outcomes = await engine.ackBatch([
      { jobId: j1.id, attempt: j1.attempt },
      { jobId: j2.id, attempt: j2.attempt + 1 },
      { jobId: ready, attempt: 1 },
      { jobId: '0190aaaa-0000-7000-8000-000000000000', attempt: 1 },
      { jobId: j3.id, attempt: j3.attempt },
      ...(await padding(engine, 8)),
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      ['ok', 'lease_lost', 'not_found', 'not_found', 'ok', ...Array.from({ length: 8 }, () => 'ok')],
    );
    assert.equal((await engine.getJob(j2.id)).state, 'leased', 'a stale ack changes nothing');
    const twice = await engine.ackBatch([
      { jobId: j2.id, attempt: j2.attempt },
      { jobId: j2.id, attempt: j2.attempt },
      ...(await padding(engine, 8)),
    ]);
    assert.deepEqual(twice.map((o) => (o.ok ? 'ok' : o.code)).slice(0, 2), ['ok', 'not_found']);
  });
});

test('the AckBatch delete finds each job through the id index, never by scanning jobs', async () => {
  await withEngine({}, async ({ db }) => {
    const tuples = Array.from({ length: 50 }, () => '(?, ?)').join(', ');
    const plan = db
      .prepare<unknown[], { detail: string }>(
        `EXPLAIN QUERY PLAN DELETE FROM jobs WHERE state = 'leased' AND (id, attempt) IN (VALUES ${tuples}) RETURNING id`,
      )
      .all(...Array.from({ length: 100 }, () => null))
      .map((row) => row.detail);
    assert.ok(
      plan.some((d) => d.includes('SEARCH jobs USING INDEX sqlite_autoindex_jobs_1 (id=?)')),
      plan.join('\n'),
    );
    assert.ok(!plan.some((d) => /SCAN jobs\b/.test(d)), plan.join('\n'));
  });
});

test('the AckBatch completion of jobs others wait on finds each job through the id index, never by scanning jobs', async () => {
  await withEngine({}, async ({ db }) => {
    // Every size: prepareKeptCompletes (src/store/sqlite/leases.ts) prepares one per batch size.
    for (let rows = 1; rows <= 50; rows++) {
      const tuples = Array.from({ length: rows }, () => '(?, ?, ?, ?, ?)').join(', ');
      // The statement of prepareKeptCompletes (src/store/sqlite/leases.ts).
      const plan = db
        .prepare<unknown[], { detail: string }>(
          `EXPLAIN QUERY PLAN UPDATE jobs SET state = 'completed', completed_at_ms = v.column5, lease_deadline_ms = NULL,
                  result = v.column3, result_content_type = v.column4
             FROM (VALUES ${tuples}) AS v
            WHERE jobs.id = v.column1 AND jobs.attempt = v.column2 AND jobs.state = 'leased'
              AND jobs.cancelled_at_ms IS NULL AND jobs.dependency_flags & 2 <> 0
            RETURNING id`,
        )
        .all(...Array.from({ length: rows * 5 }, () => null))
        .map((row) => row.detail);
      assert.ok(
        plan.some((d) => d.includes('SEARCH jobs USING INDEX sqlite_autoindex_jobs_1 (id=?)')),
        plan.join('\n'),
      );
      assert.ok(!plan.some((d) => /SCAN jobs\b/.test(d)), plan.join('\n'));
    }
  });
});

test('an AckBatch naming a job first with a stale attempt, then the right one: lease_lost, then ok', async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.enqueueBatch([job('q'), job('q')]);
    const [j1, j2] = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.ok(j1 && j2);
    const outcomes = await engine.ackBatch([
      { jobId: j1.id, attempt: j1.attempt + 1 },
      { jobId: j2.id, attempt: j2.attempt },
      { jobId: j1.id, attempt: j1.attempt },
      ...(await padding(engine, 8)),
    ]);
    assert.deepEqual(outcomes.map((o) => (o.ok ? 'ok' : o.code)).slice(0, 3), ['lease_lost', 'ok', 'ok']);
  });
});

test('an AckBatch of 10 or more: a lease whose job has a cancel request is answered job_cancelled, not deleted as done', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    await engine.cancel(jobId);
    const outcomes = await engine.ackBatch([
      { jobId, attempt: leased.attempt },
      ...(await padding(engine, 9)),
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      ['job_cancelled', ...Array.from({ length: 9 }, () => 'ok')],
    );
    assert.equal((await engine.getJob(jobId)).state, 'cancelled');
  });
});

/** The AckBatch-vs-one-by-one scenario (tests/helpers/acked-dependencies.ts) on SQLite. */
async function ackedDependencies(together: boolean): Promise<AckedDependencies> {
  let after: AckedDependencies | undefined;
  await withEngine({}, async ({ engine, db }) => {
    after = await ackDependencies(
      engine,
      {
        state: async (id) =>
          db.prepare<[string], string>('SELECT state FROM jobs WHERE id = ?').pluck().get(id),
        edges: async () =>
          db
            .prepare<[], { child: string; parent: string; state: string }>(
              'SELECT c.id AS child, d.parent_id AS parent, d.state FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq',
            )
            .all(),
        completions: async () =>
          db.prepare<[], number>("SELECT count(*) FROM jobs WHERE queue = 'callbacks'").pluck().get() ?? 0,
      },
      together,
    );
  });
  return after!;
}

test('an AckBatch of jobs others wait on releases, schedules and leaves waiting exactly as acking them one by one', async () => {
  const together = await ackedDependencies(true);
  assertAckedDependencies(together);
  assert.deepEqual(together, await ackedDependencies(false));
});

test('AckBatches of jobs others wait on: each keeps its own result and content type, or none, whichever statement runs first', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const parents: string[] = [];
    for (let n = 0; n < 12; n++) parents.push((await engine.enqueue(job('p'))).jobId);
    const waiting = (await engine.enqueue(job('c', { dependsOn: parents }))).jobId;
    const leased = await engine.reserve({ queues: ['p'], maxJobs: 12 });
    assert.equal(leased.length, 12);
    const ack = (j: (typeof leased)[number], n: number): Ack =>
      n % 3 === 0
        ? { jobId: j.id, attempt: j.attempt }
        : {
            jobId: j.id,
            attempt: j.attempt,
            result: bytes(`r${n}`),
            ...(n % 3 === 2 ? { resultContentType: 'text/plain' } : {}),
          };
    // Without results, then with some (the kept jobs' statement first, after a batch of mostly kept jobs),
    // then jobs nobody waits on next to kept ones.
    const plain = await engine.enqueueBatch([job('p'), job('p')]);
    const plainLeased = await engine.reserve({ queues: ['p'], maxJobs: 2 });
    const batches: Ack[][] = [
      leased.slice(0, 3).map((j) => ({ jobId: j.id, attempt: j.attempt })),
      leased.slice(3, 9).map((j, i) => ack(j, i + 3)),
      [
        ...plainLeased.map((j) => ({ jobId: j.id, attempt: j.attempt })),
        ...leased.slice(9).map((j, i) => ack(j, i + 9)),
      ],
    ];
    for (const acks of batches) {
      const outcomes = await engine.ackBatch(acks);
      assert.deepEqual(
        outcomes,
        acks.map(() => ({ ok: true })),
      );
    }
    for (const [n, j] of leased.entries()) {
      const info = await engine.getJob(j.id);
      assert.equal(info.state, 'completed');
      const expected = n < 3 || n % 3 === 0 ? null : `r${n}`;
      assert.equal(info.result === null ? null : Buffer.from(info.result).toString(), expected, `job ${n}`);
      assert.equal(
        info.resultContentType,
        expected === null ? null : n % 3 === 2 ? 'text/plain' : 'application/octet-stream',
        `job ${n}`,
      );
    }
    // Nobody waits on them: deleted.
    const stored = db.prepare<[string], number>('SELECT count(*) FROM jobs WHERE id = ?').pluck();
    for (const result of plain) assert.equal(stored.get(result.ok ? result.jobId : assert.fail('plain')), 0);
    assert.equal((await engine.getJob(waiting)).state, 'ready');
    assert.deepEqual(await engine.counterMismatches(), []);
  });
});
