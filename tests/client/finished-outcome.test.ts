/**
 * Waiting for a job that finished moments ago, on a queue that keeps nothing
 * (completed_retention_ms 0): the job's row was deleted on ack and, with
 * nobody subscribed, no event was recorded (event_resume_window_ms 0 so that a
 * wait's own subscription leaves nothing behind for the next check). GetJob,
 * `waitFor` and the HTTP API's outcome long-poll answer from the outcome the
 * engine keeps for limits.finished_outcome_ms (the CLI's `sepp job ID --wait`:
 * cli-outcomes.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const toml = '[limits]\nevent_resume_window_ms = 0\n';

describe('the outcome of a job deleted as it finished', () => {
  const clock = new FakeClock(Date.now());

  const served = serverAndClient({ toml, clock, http: true });

  /** Enqueues a job, leases it and acks it with `result` while nobody subscribes to events. */
  async function finishedUnseen(queue: string, result: unknown): Promise<string> {
    const { id } = await served.client.enqueueJson(
      queue,
      'sum',
      { terms: [1, 2] },
      { metadata: { who: 'test' } },
    );
    const [leased] = await served.client.reserve({ queues: [queue] });
    assert.equal(leased?.id, id);
    assert.equal(
      served.server.server.engine.eventBacklog.recording,
      false,
      'no event may be recorded for this job',
    );
    await served.client.ack(leased!, { result });
    return id;
  }

  test('GetJob answers with the outcome only: state, attempts, end, result; no payload', async () => {
    const id = await finishedUnseen('plain', { sum: 3 });
    const job = await served.client.getJob(id);
    assert.equal(job.outcomeOnly, true);
    assert.deepEqual(
      [job.id, job.queue, job.type, job.state, job.attempt, job.result, job.resultContentType],
      [id, 'plain', 'sum', 'completed', 1, { sum: 3 }, 'application/json'],
    );
    assert.equal(job.completedAt?.getTime(), clock.nowMs());
    assert.equal(job.payload.length, 0, 'the payload is not kept');
    assert.deepEqual(job.metadata, {}, 'nor the metadata');
  });

  test('waitFor after the fact answers with the result', async () => {
    const id = await finishedUnseen('plain', 'done');
    const outcome = await served.client.waitFor(id, { timeoutMs: 30_000 });
    assert.deepEqual([outcome.state, outcome.state === 'completed' && outcome.result], ['completed', 'done']);
  });

  test('HTTP: GET /v1/jobs/{id}/outcome finds it, GET /v1/jobs/{id} carries outcomeOnly', async () => {
    const id = await finishedUnseen('plain', { ok: true });
    const outcome = await fetch(`${served.server.httpUrl}/v1/jobs/${id}/outcome?waitMs=0`);
    const body = (await outcome.json()) as Record<string, unknown>;
    assert.equal(outcome.status, 200, JSON.stringify(body));
    assert.deepEqual([body.finished, body.state, body.result], [true, 'completed', { ok: true }]);
    const { job } = (await (await fetch(`${served.server.httpUrl}/v1/jobs/${id}`)).json()) as {
      job: Record<string, unknown>;
    };
    assert.deepEqual([job.state, job.outcomeOnly, job.payloadBytes], ['completed', true, 0]);
  });

  test('after limits.finished_outcome_ms (5 minutes) the job is NOT_FOUND', async () => {
    const id = await finishedUnseen('plain', null);
    clock.advance(5 * 60_000);
    assert.equal((await served.client.getJob(id)).outcomeOnly, true, 'kept for the whole 5 minutes');
    clock.advance(1);
    const gone = await served.client.getJob(id).catch((e: SeppError) => e);
    assert.equal((gone as SeppError).code, 'not_found');
  });
});
