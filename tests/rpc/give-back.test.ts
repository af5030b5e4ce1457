/**
 * A nack's `give_back` (work.proto): a worker hands back a lease it never started. Over the
 * unary Nack, a Work stream's nack and the HTTP API's nack route alike: the job is ready again
 * with no attempt counted (even on its last attempt: every queue here allows one), a
 * `lease_undone` event is told (and counted in sepp_leases_given_back_total), the queue's
 * rate-limit token comes back, and a stale attempt gets the answer a stale nack gets. The given-back attempt is never leased again (its budget
 * grows by one instead), so a late settlement of it is refused once the job is leased anew.
 * Real server on port 0, fake clock (the buckets refill only when it moves); runs on
 * PostgreSQL too (SEPP_TEST_STORE=postgres).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
import { JobState, type LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type {
  NackRequest,
  WorkRequest,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { until } from '../client/helpers.ts';
import { job } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';
import { apiCall } from '../helpers/http-api.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';

const vias = ['unary', 'stream', 'http'] as const;
type Via = (typeof vias)[number];

/** One lease a minute, one attempt per job. */
const toml = vias
  .map(
    (via) => `[queues.once-${via}]
rate_limit_leases = 1
rate_limit_period_ms = "60s"
rate_limit_burst = 1
max_attempts = 1
`,
  )
  .join('\n')
  .concat('\n[queues.plain]\nmax_attempts = 1\n');

interface Lease {
  jobId: string;
  attempt: number;
}

/** A nack's answer: where the job went, or the refusal (its code as the transport says it). */
type Answer = { state: string } | { refused: string };

type Directive = 'giveBack' | 'backoff';

describe('give_back: a lease handed back unstarted', () => {
  let t: TestServer;
  const clock = new FakeClock(Date.UTC(2026, 11, 7));
  before(async () => {
    t = await startTestServer({ clock, toml, http: true });
  });
  after(() => t.dispose());

  const directiveOf = (directive: Directive): NackRequest['directive'] =>
    directive === 'giveBack' ? { $case: 'giveBack', value: true } : { $case: 'backoff', value: true };
  const nackRequest = (lease: Lease, directive: Directive): NackRequest => ({
    jobId: lease.jobId,
    attempt: lease.attempt,
    errorMessage: 'ignored for a give-back',
    errorClass: 'Ignored',
    errorStack: '',
    directive: directiveOf(directive),
  });

  const unaryReserve = async (queue: string): Promise<LeasedJob[]> =>
    (
      await call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: [queue],
        maxJobs: 2,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId: 'w',
      })
    ).jobs;

  /** Leases one job of `queue` and returns how to nack it over `via`. */
  async function leaseOver(
    via: Via,
    queue: string,
  ): Promise<{ lease: Lease; nack(lease: Lease, directive: Directive): Promise<Answer> }> {
    if (via === 'unary') {
      const [lease] = await unaryReserve(queue);
      assert.ok(lease !== undefined);
      return {
        lease,
        nack: (l, d) =>
          call(t.client, t.client.nack, nackRequest(l, d)).then(
            (r) => ({ state: String(r.state) }),
            (e: ServiceError) => ({ refused: `${e.code}` }),
          ),
      };
    }
    if (via === 'http') {
      const reserved = await apiCall<{ jobs: Lease[] }>(t.httpUrl, '/v1/reserve', {
        body: { queues: [queue], maxJobs: 2, leaseDurationMs: 60_000 },
      });
      const [lease] = reserved.json.jobs;
      assert.ok(lease !== undefined, reserved.text);
      return {
        lease,
        nack: async (l, d) => {
          const body =
            d === 'giveBack'
              ? { attempt: l.attempt, giveBack: true, errorMessage: 'ignored' }
              : { attempt: l.attempt, backoff: true };
          const answer = await apiCall<{ state?: string; error?: { code: string } }>(
            t.httpUrl,
            `/v1/jobs/${l.jobId}/nack`,
            { body },
          );
          return answer.status === 200
            ? { state: String(answer.json.state) }
            : { refused: `${answer.status} ${answer.json.error?.code}` };
        },
      };
    }
    const work = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    work.on('error', () => {});
    after(() => work.end());
    const lease = await new Promise<Lease>((resolve) => {
      work.on('data', (response: WorkResponse) => {
        if (response.kind?.$case === 'job') resolve(response.kind.value);
      });
      work.write({
        requestId: 0,
        kind: {
          $case: 'subscribe',
          value: { queues: [queue], leaseDurationMs: 60_000, workerId: 'w', batchResponses: false },
        },
      });
      work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
    });
    let requestId = 0;
    return {
      lease,
      nack: (l, d) => {
        const id = ++requestId;
        return new Promise((resolve) => {
          const onData = (response: WorkResponse) => {
            if (response.kind?.$case !== 'settled' || response.kind.value.requestId !== id) return;
            work.off('data', onData);
            const { code, result } = response.kind.value;
            resolve(
              result?.$case === 'nack' ? { state: String(result.value.state) } : { refused: `${code}` },
            );
          };
          work.on('data', onData);
          work.write({ requestId: id, kind: { $case: 'nack', value: nackRequest(l, d) } });
        });
      },
    };
  }

  for (const via of vias) {
    test(`over ${via}: ready, no attempt counted, lease_undone, token back; the given-back attempt stale after`, async () => {
      const queue = `once-${via}`;
      const engine = t.server.engine;
      const events = collect(engine, { queues: [queue], kinds: ['lease_undone'] });
      const { jobId } = await engine.enqueue(job(queue));
      const { jobId: other } = await engine.enqueue(job(queue));
      const { lease, nack } = await leaseOver(via, queue);
      assert.equal(lease.jobId, jobId);
      assert.equal(lease.attempt, 1);
      assert.deepEqual(await unaryReserve(queue), [], 'the bucket is spent: the other job waits');

      const stale = { jobId, attempt: lease.attempt + 1 };
      const staleNack = await nack(stale, 'backoff');
      assert.ok('refused' in staleNack, 'a stale nack is refused');
      assert.deepEqual(await nack(stale, 'giveBack'), staleNack, 'a stale give-back: the same answer');

      const given = await nack(lease, 'giveBack');
      assert.ok('state' in given, JSON.stringify(given));
      const stored = await engine.getJob(jobId);
      assert.equal(stored.state, 'ready', 'ready, not dead: no attempt was counted (max_attempts = 1)');
      assert.deepEqual(
        [stored.attempt, stored.maxAttempts],
        [1, 2],
        'its attempt kept (the worker holds it), its budget one larger',
      );
      assert.deepEqual(stored.errors, [], 'the error sent with it is ignored');
      await until(() => events.summary().includes(`lease_undone:${jobId}`), 'the lease_undone event');
      assert.deepEqual(await nack(lease, 'giveBack'), await nack(lease, 'backoff'), 'given back once');
      // Counted as given back, once (the repeat was refused), not as undone; still as reserved.
      const { samples } = await scrape(t.metricsUrl);
      assert.deepEqual(
        ['given_back', 'undone', 'reserved'].map((name) =>
          sampleValue(
            samples,
            name === 'reserved' ? 'sepp_jobs_reserved_total' : `sepp_leases_${name}_total`,
            { sepp_queue: queue },
          ),
        ),
        [1, undefined, 1],
      );

      const again = await unaryReserve(queue);
      assert.deepEqual(
        again.map((j) => [j.jobId, j.attempt, j.maxAttempts]),
        [[jobId, 2, 2]],
        'its token back (one: the other job still waits), leased on the next attempt, its last',
      );
      assert.notEqual(other, jobId);

      // The given-back lease's late settlements are stale now, as a lease that ran out is.
      assert.deepEqual(await nack(lease, 'backoff'), staleNack, 'a late nack of the given-back attempt');
      assert.deepEqual(await nack(lease, 'giveBack'), staleNack, 'a late give-back');
      const codeOf = (e: ServiceError) => e.code;
      const lateAck = await call(t.client, t.client.ack, { ...lease, result: undefined }).catch(codeOf);
      const lateExtend = await call(t.client, t.client.extend, { ...lease, leaseDurationMs: 60_000 }).catch(
        codeOf,
      );
      assert.deepEqual([lateAck, lateExtend], [status.FAILED_PRECONDITION, status.FAILED_PRECONDITION]);
      assert.equal((await engine.getJob(jobId)).state, 'leased', 'the new holder still holds it');
      await call(t.client, t.client.ack, { jobId, attempt: 2, result: undefined });
      assert.equal((await engine.getJob(jobId)).state, 'completed', "the new holder's ack");
      events.subscription.close();
    });
  }

  test('a job given back again and again never goes dead by it; a failure after backs off as a first', async () => {
    const engine = t.server.engine;
    const { jobId } = await engine.enqueue(job('plain', { maxAttempts: 2 }));
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [lease] = await unaryReserve('plain');
      assert.deepEqual([lease?.jobId, lease?.attempt, lease?.maxAttempts], [jobId, attempt, attempt + 1]);
      await call(t.client, t.client.nack, nackRequest({ jobId, attempt }, 'giveBack'));
      const back = await engine.getJob(jobId);
      assert.deepEqual(
        [back.state, back.attempt, back.maxAttempts - back.attempt],
        ['ready', attempt, 2],
        `given back ${attempt} times: two attempts left, as before the first lease`,
      );
    }
    const fail = async (attempt: number) => {
      const [lease] = await unaryReserve('plain');
      assert.deepEqual([lease?.attempt, lease?.maxAttempts], [attempt, 5]);
      return call(t.client, t.client.nack, {
        ...nackRequest({ jobId, attempt }, 'backoff'),
        directive: undefined,
      });
    };
    const nowMs = clock.nowMs();
    const retry = await fail(4);
    assert.equal(retry.state, JobState.SCHEDULED);
    // The queue's backoff: 1 s ± 20 % after a first failure (8 s after a fourth).
    const delayMs = retry.runAtMs - nowMs;
    assert.ok(delayMs >= 800 && delayMs <= 1200, `backs off as after a first failure: ${delayMs} ms`);
    clock.advance(delayMs);
    await until(async () => (await engine.getJob(jobId)).state === 'ready', 'the retry due');
    const last = await fail(5);
    assert.equal(last.state, JobState.DEAD, 'its second attempt failed: dead');
    assert.equal((await engine.getJob(jobId)).deadReason, 'attempts_exhausted');
  });
});
