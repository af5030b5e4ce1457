/**
 * A give-back grows the job's budget by one (attempt_base + 1) and its next lease takes the next
 * attempt number, so a worker that gives the same job back forever would drive both past int32,
 * which the proto (LeasedJob.attempt, max_attempts) and PostgreSQL's columns hold: the give-back
 * that would is refused, the lease stays its worker's. Real engine on SQLite, the job's attempt
 * set near the edge directly (two billion give-backs are not run).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { leasedJobToProto } from '../../src/rpc/convert.ts';
import { expectCode, job, withEngine } from '../helpers/engine.ts';

const int32Max = 2 ** 31 - 1;

test('give_back: the budget never grows past int32; the give-back that would is refused, the lease kept', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
    const start = int32Max - 6;
    db.prepare('UPDATE jobs SET attempt = ?, attempt_base = ? WHERE id = ?').run(start, start, jobId);
    const lease = async () => {
      const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 1000 });
      assert.ok(leased, 'the job is leased');
      // What every transport sends: the generated encoder refuses a number past int32.
      const wire = LeasedJob.decode(LeasedJob.encode(leasedJobToProto(leased)).finish());
      return { attempt: wire.attempt, maxAttempts: wire.maxAttempts };
    };
    const giveBack = (attempt: number) =>
      engine.nack({ jobId, attempt, error: '', directive: { kind: 'give_back' } });

    assert.deepEqual(await lease(), { attempt: start + 1, maxAttempts: start + 5 });
    assert.equal((await giveBack(start + 1)).state, 'ready', 'a budget up to int32 grows');
    assert.deepEqual(await lease(), { attempt: start + 2, maxAttempts: int32Max });
    const refused = await expectCode(giveBack(start + 2), 'failed_precondition');
    assert.match(refused.message, /cannot grow further; ack or nack/);
    const info = await engine.getJob(jobId);
    assert.deepEqual([info.state, info.attempt], ['leased', start + 2], 'the lease is still its worker’s');
    await engine.ack({ jobId, attempt: start + 2 });
    assert.equal((await engine.getJob(jobId)).state, 'completed');
  });
});
