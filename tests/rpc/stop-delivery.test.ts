/**
 * A Work stream's `Batch.stop_delivery` (work.proto): before the batch's settlements are
 * applied the stream's unused credit is dropped, so the jobs a closing worker gives back there
 * are not pushed to it again; a long-poll waiting for the stream ends at once; settlements keep
 * working; credit after it ends the stream with INVALID_ARGUMENT. And GetServerInfo names the
 * features (`nack_give_back`, `work_stop_delivery`) by which clients tell such a server from an
 * older one. Real server on port 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
import type { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type {
  WorkRequest,
  WorkRequest_Settlement,
  WorkResponse,
  WorkResponse_Settled,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { call, startTestServer, type TestServer, testJob, waitersReach } from '../helpers/server.ts';

describe('Work: stop_delivery', () => {
  let t: TestServer;
  /** Every stream opened, cancelled at the end so a failed test leaves none open. */
  const streams: ClientDuplexStream<WorkRequest, WorkResponse>[] = [];
  before(async () => {
    t = await startTestServer();
  });
  after(async () => {
    for (const work of streams) work.cancel();
    await t.dispose();
  });

  const enqueue = async (queue: string) =>
    (await call(t.client, t.client.enqueue, { job: testJob(queue) })).jobId;

  /** A Work stream subscribed to `queue` with `credit`: its jobs, its answers, and how it ended. */
  function open(queue: string, credit: number) {
    const work = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    streams.push(work);
    const jobs: LeasedJob[] = [];
    const answers: WorkResponse_Settled[] = [];
    const ended = new Promise<ServiceError | null>((resolve) => {
      work.on('error', (error: ServiceError) => resolve(error));
      work.on('end', () => resolve(null));
    });
    work.on('data', (response: WorkResponse) => {
      if (response.kind?.$case === 'job') jobs.push(response.kind.value);
      if (response.kind?.$case === 'settled') answers.push(response.kind.value);
    });
    work.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: [queue], leaseDurationMs: 60_000, workerId: 'w', batchResponses: false },
      },
    });
    work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: credit } } });
    const stop = (settlements: WorkRequest_Settlement[], batchCredit = 0) =>
      work.write({
        requestId: 0,
        kind: { $case: 'batch', value: { settlements, credit: batchCredit, stopDelivery: true } },
      });
    return { work, jobs, answers, ended, stop };
  }

  const until = async (check: () => boolean, what: string) => {
    const giveUpAtMs = performance.now() + 15_000;
    while (!check()) {
      if (performance.now() > giveUpAtMs) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setImmediate(r));
    }
  };

  const reserveNow = async (queue: string) =>
    (
      await call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: [queue],
        maxJobs: 10,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId: 'other',
      })
    ).jobs;

  test('its give-backs are not pushed back to it: ready for others once, next attempt 2; credit after ends it', {
    timeout: 15_000,
  }, async () => {
    const queue = 'stop-give-back';
    const ids = [await enqueue(queue), await enqueue(queue)];
    const s = open(queue, 5);
    await until(() => s.jobs.length === 2, 'both jobs pushed (3 credit left unused)');
    s.stop(
      s.jobs.map((job, i) => ({
        requestId: i + 1,
        kind: {
          $case: 'nack',
          value: {
            jobId: job.jobId,
            attempt: job.attempt,
            errorMessage: '',
            errorClass: '',
            errorStack: '',
            directive: { $case: 'giveBack', value: true },
          },
        },
      })),
    );
    await until(() => s.answers.length === 2, 'both give-backs answered');
    assert.deepEqual(
      s.answers.map((a) => a.code),
      [status.OK, status.OK],
    );
    const third = await enqueue(queue);
    const others = await reserveNow(queue);
    assert.deepEqual(
      others.map((j) => [j.jobId, j.attempt]),
      [
        [ids[0], 2],
        [ids[1], 2],
        [third, 1],
      ],
      'the stream took none of them again: each given back once',
    );
    assert.equal(s.jobs.length, 2, 'nothing more pushed to the stopped stream');
    // Settlements keep working on it: an extend of another's lease is answered.
    s.work.write({
      requestId: 9,
      kind: {
        $case: 'extend',
        value: { jobId: third, attempt: 1, leaseDurationMs: 60_000 },
      },
    });
    await until(() => s.answers.length === 3, 'the extend answered');
    assert.equal(s.answers[2]?.code, status.OK);
    s.work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    const ended = await s.ended;
    assert.equal(ended?.code, status.INVALID_ARGUMENT);
    assert.match(ended?.details ?? '', /stop_delivery/);
  });

  test('a stop ends the long-poll at once: a job enqueued after goes to another worker', {
    timeout: 15_000,
  }, async () => {
    const queue = 'stop-waiting';
    const before = t.server.engine.waitingReserves;
    const s = open(queue, 1);
    await waitersReach(t, before + 1);
    s.stop([]);
    await waitersReach(t, before);
    const id = await enqueue(queue);
    assert.deepEqual(
      (await reserveNow(queue)).map((j) => j.jobId),
      [id],
    );
    // A half-close after the stop ends the stream with OK.
    s.work.end();
    assert.equal(await s.ended, null);
    assert.equal(s.jobs.length, 0);
  });

  test('a stop batch with credit ends the stream with INVALID_ARGUMENT, after its settlements', {
    timeout: 15_000,
  }, async () => {
    const s = open('stop-credit', 0);
    s.stop([], 1);
    const ended = await s.ended;
    assert.equal(ended?.code, status.INVALID_ARGUMENT);
  });

  test('GetServerInfo names the features', { timeout: 15_000 }, async () => {
    const info = await call(t.client, t.client.getServerInfo, {});
    assert.deepEqual(info.features, ['nack_give_back', 'work_stop_delivery']);
  });
});
