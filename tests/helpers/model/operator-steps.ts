/** The model test's operator and time steps: maintenance, the clock, cancels, updates, dead letters and queues. */
import assert from 'node:assert/strict';
import type { JobState } from '../../../src/engine/types.ts';
import { expectCode } from '../engine.ts';
import { queueNames, unknownId } from './config.ts';
import { saw } from './coverage.ts';
import { fail, ok } from './model-queues.ts';
import { outcomeOf } from './run-state.ts';
import { WorkerSteps } from './worker-steps.ts';

export class OperatorSteps extends WorkerSteps {
  protected async cancel(): Promise<void> {
    const d = this.dice;
    const ids = [...this.model.jobs.keys()];
    const jobId = ids.length > 0 && d.chance(0.9) ? d.pick(ids) : unknownId;
    this.log.push(`cancel ${jobId}`);
    const got = await outcomeOf(this.engine.cancel(jobId));
    saw(`cancel ${got.ok ? `${got.value.previousState} → ${got.value.state}` : got.code}`);
    assert.deepEqual(got, this.model.cancel(jobId));
  }

  protected async cancelJobs(): Promise<void> {
    const d = this.dice;
    const queue = d.pick(queueNames);
    const states = d.pick<JobState[]>([
      ['scheduled', 'ready', 'leased'],
      ['ready'],
      ['leased'],
      ['scheduled'],
    ]);
    this.log.push(`cancelJobs ${queue} ${states.join(',')}`);
    if (!this.model.existing.has(queue)) {
      // A queue nobody has used: NOT_FOUND (as PurgeQueue), not "0 cancelled".
      await assert.rejects(async () => this.engine.countCancellable({ queue, states }), {
        code: 'not_found',
      });
      assert.deepEqual(await outcomeOf(this.engine.cancelJobs({ queue, states })), fail('not_found'));
      saw('cancelJobs not_found');
      return;
    }
    const counted = await this.engine.countCancellable({ queue, states });
    const got = await this.engine.cancelJobs({ queue, states });
    const expected = this.model.cancelJobs(queue, states);
    assert.deepEqual(got, expected);
    assert.equal(counted, expected.cancelled + expected.cancelRequested);
    saw('cancelJobs cancelled', got.cancelled);
    saw('cancelJobs requested', got.cancelRequested);
  }

  protected async updateJob(): Promise<void> {
    const d = this.dice;
    const ids = [...this.model.jobs.keys()];
    const jobId = ids.length > 0 && d.chance(0.95) ? d.pick(ids) : unknownId;
    const priority = d.chance(0.6) ? d.int(0, 9) : undefined;
    const schedule = d.weighted([
      [priority === undefined ? 0 : 2, 'none'],
      [2, 'now'],
      [1, 'delay'],
    ]);
    const delayMs = schedule === 'delay' ? d.int(0, 20_000) : undefined;
    this.log.push(`updateJob ${jobId} ${JSON.stringify({ priority, schedule, delayMs })}`);
    const changes = {
      ...(priority === undefined ? {} : { priority }),
      ...(schedule === 'now' ? { runNow: true } : {}),
      ...(delayMs === undefined ? {} : { delayMs }),
    };
    const got = await outcomeOf(this.engine.updateJob(jobId, changes));
    saw(`updateJob ${got.ok ? 'ok' : got.code}`);
    const expected = this.model.updateJob(jobId, priority, schedule === 'now', delayMs);
    assert.deepEqual(got.ok ? ok(null) : got, expected);
  }

  protected async runNow(): Promise<void> {
    const queue = this.dice.pick(queueNames);
    this.log.push(`runNow ${queue}`);
    if (!this.model.existing.has(queue)) {
      assert.deepEqual(
        await outcomeOf(this.engine.updateJobs({ queue }, { runNow: true })),
        fail('not_found'),
      );
      saw('run now (bulk) not_found');
      return;
    }
    const n = await this.engine.updateJobs({ queue }, { runNow: true });
    assert.equal(n, this.model.runNow(queue));
    saw('run now (bulk)', n);
  }

  protected async deadLetters(): Promise<void> {
    const d = this.dice;
    const withDead = queueNames.filter((q) => this.model.deadOf(q).length > 0);
    const queue = withDead.length > 0 && d.chance(0.8) ? d.pick(withDead) : d.pick(queueNames);
    if (!this.model.existing.has(queue)) {
      // A queue never used and not declared does not exist: NOT_FOUND, not an empty answer.
      this.log.push(`dead letters of ${queue}, which does not exist`);
      await expectCode(this.engine.listDeadLetters({ queue }), 'not_found');
      assert.equal((await outcomeOf(this.engine.requeueDeadLetters({ queue, all: true }))).ok, false);
      saw('dead letters of a queue that does not exist');
      return;
    }
    const dead = this.model.deadOf(queue);
    const listed = await this.engine.listDeadLetters({ queue, pageSize: 1000 });
    assert.deepEqual(listed.items.map((j) => j.id).sort(), dead.map((j) => j.id).sort());
    const all = d.chance(0.3);
    const ids = all ? 'all' : dead.filter(() => d.chance(0.6)).map((j) => j.id);
    if (ids !== 'all' && d.chance(0.3)) ids.push(unknownId);
    const selection = ids === 'all' ? { queue, all: true as const } : { queue, jobIds: ids };
    const requeue = d.chance(0.6);
    this.log.push(`${requeue ? 'requeue' : 'deleteDead'} ${queue} ${JSON.stringify(ids)}`);
    if (ids !== 'all' && ids.length === 0) return;
    const got = await outcomeOf(
      requeue ? this.engine.requeueDeadLetters(selection) : this.engine.deleteDeadLetters(selection),
    );
    // An action on a queue nobody used is not_found (a typo changes nothing).
    if (!this.model.existing.has(queue)) {
      assert.deepEqual(got, fail('not_found'));
      return saw('dead letters of a queue nobody used');
    }
    assert.ok(got.ok, `${requeue ? 'requeue' : 'delete'} failed: ${got.ok ? '' : got.code}`);
    assert.equal(got.value, requeue ? this.model.requeue(queue, ids) : this.model.deleteDead(queue, ids));
    saw(requeue ? 'requeued dead letters' : 'deleted dead letters', got.value);
  }

  protected async pauseOrResume(): Promise<void> {
    const queue = this.dice.pick(queueNames);
    const pause = !this.model.paused.has(queue) && this.dice.chance(0.7);
    const allowMissing = this.dice.chance(0.5);
    this.log.push(`${pause ? 'pause' : 'resume'} ${queue}${allowMissing ? ' allowMissing' : ''}`);
    const got = await outcomeOf(
      pause
        ? this.engine.pauseQueue(queue, undefined, { allowMissing })
        : this.engine.resumeQueue(queue, undefined, { allowMissing }),
    );
    assert.deepEqual(got, this.model.setPaused(queue, pause, allowMissing));
    saw(`${pause ? 'pause' : 'resume'} ${got.ok ? 'ok' : got.code}`);
  }

  protected async deleteQueue(): Promise<void> {
    // Mostly q4, the one undeclared queue, which alone can be deleted.
    const queue = this.dice.chance(0.6) ? 'q4' : this.dice.pick(queueNames);
    this.log.push(`deleteQueue ${queue}`);
    const got = await outcomeOf(this.engine.deleteQueue(queue));
    assert.deepEqual(got, this.model.deleteQueue(queue));
    saw(`deleteQueue ${got.ok ? 'ok' : got.code}`);
  }
}
