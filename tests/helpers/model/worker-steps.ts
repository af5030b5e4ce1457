/** The model test's producer and worker steps: enqueues, leases, settlements and long-polls. */
import assert from 'node:assert/strict';
import type { EnqueueRequest, NackDirective, SettleOutcome } from '../../../src/engine/types.ts';
import { bytes, until } from '../engine.ts';
import { limits, settingsOf } from './config.ts';
import { saw } from './coverage.ts';
import { ok } from './model-queues.ts';
import { outcomeOf, RunState } from './run-state.ts';

export class WorkerSteps extends RunState {
  protected async enqueueOne(): Promise<void> {
    const request = this.request();
    this.log.push(`enqueue ${this.describeRequests([request])}`);
    const got = await outcomeOf(this.engine.enqueue(request));
    const id = got.ok && !got.value.deduplicated ? got.value.jobId : null;
    const [expected] = this.model.expectBatch([request], [id]);
    saw(`enqueue ${expected?.split(':')[0] === 'rejected' ? expected : expected?.split(':')[0]}`);
    if (expected === 'new')
      assert.ok(got.ok && !got.value.deduplicated, `expected a new job, got ${JSON.stringify(got)}`);
    else if (expected?.startsWith('dup:'))
      assert.deepEqual(got, ok({ ok: true, jobId: expected.slice(4), deduplicated: true }));
    else {
      const reason = expected?.slice('rejected:'.length);
      assert.ok(!got.ok, `expected rejection ${reason}`);
      assert.equal(got.code, reason === 'queue_full' ? 'resource_exhausted' : 'invalid_argument');
    }
  }

  protected async enqueueBatch(): Promise<void> {
    const requests = Array.from({ length: this.dice.int(1, 6) }, () => this.request());
    this.log.push(`enqueueBatch ${this.describeRequests(requests)}`);
    const results = await this.engine.enqueueBatch(requests);
    const ids = results.map((r) => (r.ok && !r.deduplicated ? r.jobId : null));
    const expected = this.model.expectBatch(requests, ids);
    saw('enqueueBatch');
    const actual = results.map((r, i) =>
      !r.ok
        ? `rejected:${r.reason}`
        : r.deduplicated
          ? `dup:${r.jobId}`
          : expected[i] === 'new'
            ? 'new'
            : `new:${r.jobId}`,
    );
    assert.deepEqual(actual, expected);
  }

  protected async enqueueAtomic(): Promise<void> {
    const requests = Array.from({ length: this.dice.int(1, 5) }, () => this.request());
    this.log.push(`enqueueAtomic ${this.describeRequests(requests)}`);
    const expectedRejections = this.model.expectAtomicRejections(requests);
    saw(expectedRejections === null ? 'enqueueAtomic committed' : 'enqueueAtomic refused');
    const result = await this.engine.enqueueAtomic(requests);
    if (expectedRejections !== null) {
      assert.ok(!result.committed, `expected rejections ${expectedRejections}`);
      assert.deepEqual(
        result.rejections.map((r) => `${r.index}:${r.reason}`),
        expectedRejections,
      );
      return;
    }
    assert.ok(result.committed, `expected a commit, got ${JSON.stringify(result)}`);
    const ids = result.results.map((r) => (r.deduplicated ? null : r.jobId));
    const expected = this.model.expectBatch(requests, ids);
    assert.deepEqual(
      result.results.map((r) => (r.deduplicated ? `dup:${r.jobId}` : 'new')),
      expected,
    );
  }
  protected async reserve(): Promise<void> {
    const { queues, maxJobs, leaseMs } = this.reserveRequest();
    this.log.push(`reserve ${JSON.stringify({ queues, maxJobs, leaseMs })}`);
    const got = await this.engine.reserve({ queues, maxJobs, ...(leaseMs === undefined ? {} : { leaseMs }) });
    this.checkLeased(got, this.model.reserve(queues, maxJobs, leaseMs));
    saw(`reserve got ${Math.min(got.length, 2)}${got.length >= 2 ? '+' : ''}`);
    saw('reserve of a job with a group', got.filter((j) => j.group !== null).length);
    const readyLeft = [...this.model.jobs.values()].some(
      (j) => (queues as readonly string[]).includes(j.queue) && j.state === 'ready',
    );
    if (got.length < maxJobs && readyLeft && !queues.some((q) => this.model.paused.has(q))) {
      saw('reserve held back by a limit');
    }
    saw('reserve retry delivery', got.filter((j) => j.attempt > 1).length);
  }

  protected async ack(): Promise<void> {
    const h = this.handle();
    this.log.push(`ack ${JSON.stringify(h)}`);
    const got = await outcomeOf(this.engine.ack(h));
    saw(`ack ${got.ok ? 'ok' : got.code}`);
    assert.deepEqual(got.ok ? ok(null) : got, this.model.ack(h.jobId, h.attempt));
  }

  protected async ackBatch(): Promise<void> {
    const handles = Array.from({ length: this.dice.int(1, 4) }, () => this.handle());
    this.log.push(`ackBatch ${JSON.stringify(handles)}`);
    const got = await this.engine.ackBatch(handles);
    const expected = handles.map((h) => this.model.ack(h.jobId, h.attempt));
    assert.deepEqual(
      got.map((o: SettleOutcome) => (o.ok ? 'ok' : o.code)),
      expected.map((o) => (o.ok ? 'ok' : o.code)),
    );
  }

  protected async nack(): Promise<void> {
    const d = this.dice;
    const h = this.handle();
    const directive = d.weighted<NackDirective>([
      [4, { kind: 'backoff' }],
      [2, { kind: 'delay', delayMs: 0 }],
      [2, { kind: 'delay', delayMs: d.int(1, 20_000) }],
      [2, { kind: 'dead_letter' }],
    ]);
    const error = d.chance(0.1) ? `long ${'x'.repeat(100)}` : `error ${this.log.length}`;
    this.log.push(`nack ${JSON.stringify({ ...h, directive, error: error.slice(0, 12) })}`);
    const got = await outcomeOf(this.engine.nack({ ...h, error, directive }));
    saw(`nack ${directive.kind} ${got.ok ? got.value.state : got.code}`);
    assert.deepEqual(got, this.model.nack(h.jobId, h.attempt, error, directive));
  }

  protected async extend(): Promise<void> {
    const h = this.handle();
    const leaseMs = this.dice.int(1, 30_000);
    this.log.push(`extend ${JSON.stringify({ ...h, leaseMs })}`);
    const got = await outcomeOf(this.engine.extend({ ...h, leaseMs }));
    saw(`extend ${got.ok ? 'ok' : got.code}`);
    const expected = this.model.extend(h.jobId, h.attempt, leaseMs);
    assert.deepEqual(got.ok ? ok(got.value.leaseDeadlineMs) : got, expected);
  }

  /** A long-poll that finds nothing, then is woken by an enqueue, times out, or is aborted. */
  protected async longPoll(): Promise<void> {
    const d = this.dice;
    const { queues, maxJobs, leaseMs } = this.reserveRequest();
    if (this.model.wouldLease(queues)) return this.reserve();
    const target = queues.find(
      (q) =>
        !this.model.paused.has(q) &&
        (settingsOf(q).maxDepth === 0 || this.model.depth(q) < settingsOf(q).maxDepth) &&
        this.model.leasableNow(q),
    );
    const ending = d.weighted<'enqueue' | 'timeout' | 'abort'>([
      [target === undefined ? 0 : 3, 'enqueue'],
      [1, 'timeout'],
      [1, 'abort'],
    ]);
    const waitMs = d.int(1, limits.maxWaitMs);
    this.log.push(`longPoll ${JSON.stringify({ queues, maxJobs, leaseMs, waitMs, ending, target })}`);
    saw(`longPoll ${ending}`);
    const controller = new AbortController();
    const waiting = this.engine.reserve(
      { queues, maxJobs, waitMs, ...(leaseMs === undefined ? {} : { leaseMs }) },
      controller.signal,
    );
    await until(this.engine, () => this.engine.waitingReserves === 1);
    if (ending === 'enqueue' && target !== undefined) {
      const request: EnqueueRequest = {
        queue: target,
        type: 'job',
        payload: bytes('woken'),
        priority: d.int(0, 9),
      };
      const { jobId, deduplicated } = await this.engine.enqueue(request);
      assert.equal(deduplicated, false);
      this.model.expectBatch([request], [jobId]);
      const got = await waiting;
      this.checkLeased(got, this.model.reserve(queues, maxJobs, leaseMs));
      assert.equal(got.length, 1);
    } else if (ending === 'timeout') {
      this.t.clock.advance(waitMs);
      assert.deepEqual(await waiting, []);
      await this.maintain();
    } else {
      controller.abort();
      assert.deepEqual(await waiting, []);
    }
    assert.equal(this.engine.waitingReserves, 0);
  }
}
