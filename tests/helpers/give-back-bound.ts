/**
 * The give-back bound's scenario (tests/engine/give-back-bound.test.ts on SQLite,
 * give-back-bound-postgres.test.ts on PostgreSQL, whose attempt columns are int4): a job whose
 * attempt is set near int32 by `setAttempt` (two billion give-backs are not run) grows its
 * budget by a give-back up to int32 exactly; the give-back past it is refused, the lease kept.
 */
import assert from 'node:assert/strict';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { Engine } from '../../src/engine/engine.ts';
import { leasedJobToProto } from '../../src/rpc/convert.ts';
import { expectCode, job } from './engine.ts';

const int32Max = 2 ** 31 - 1;

/** Sets the job's `attempt` and `attempt_base` to `attempt` in the store, directly. */
type SetAttempt = (jobId: string, attempt: number) => Promise<void> | void;

export async function giveBackBound(engine: Engine, setAttempt: SetAttempt): Promise<void> {
  const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
  const start = int32Max - 6;
  await setAttempt(jobId, start);
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
}
