/**
 * The model's jobs and queues (model.ts builds on it): what an enqueue must
 * store or answer, idempotency keys, depth limits, counts, pausing and
 * deleting queues — as plainly as it can be said.
 */
import assert from 'node:assert/strict';
import type { DeadReason, EnqueueRequest, JobState } from '../../../src/engine/types.ts';
import { queueOverrides, settingsOf } from './config.ts';
import type { Cursors } from './flow.ts';

export interface ModelJob {
  id: string;
  queue: string;
  order: number;
  state: JobState;
  priority: number;
  runAtMs: number;
  attempt: number;
  base: number;
  maxAttempts: number;
  leaseDeadlineMs: number | null;
  deadReason: DeadReason | null;
  failedAtMs: number | null;
  completedAtMs: number | null;
  lastError: string | null;
  errors: { attempt: number; atMs: number; error: string }[];
  key: string | null;
  expiresAtMs: number | null;
  cancelledAtMs: number | null;
  group: string | null;
}

/** What max_depth counts and holds a key: a job not ended, waiting on dependencies included. */
export const unfinished: readonly JobState[] = ['waiting', 'scheduled', 'ready', 'leased'];

export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string };
export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const fail = (code: string): Outcome<never> => ({ ok: false, code });

/** What a queue must do with jobs before they are leased, and the queues themselves. */
export class ModelQueues {
  readonly jobs = new Map<string, ModelJob>();
  readonly keys = new Map<string, { jobId: string; expiresAtMs: number }>();
  readonly paused = new Set<string>();
  readonly existing = new Set<string>(Object.keys(queueOverrides));
  /** Every lease handed out, for stale settlements. */
  readonly handles: { jobId: string; attempt: number }[] = [];
  /** Queues that have had a job with a group: their leases take turns (kept across restarts). */
  readonly grouped = new Set<string>();
  /** Where each grouped queue's turns stand (in memory: a restart forgets it). */
  cursors: Cursors = new Map();
  protected order = 0;
  nextSweepMs = 0;

  constructor(
    readonly nowMs: () => number,
    protected readonly random: () => number,
  ) {}

  depth(queue: string): number {
    let n = 0;
    for (const j of this.jobs.values()) {
      if (j.queue === queue && unfinished.includes(j.state)) n++;
    }
    return n;
  }

  protected runAtOf(request: EnqueueRequest): number {
    const now = this.nowMs();
    if (request.runAtMs !== undefined) return Math.max(now, request.runAtMs);
    if (request.delayMs !== undefined) return now + request.delayMs;
    return now;
  }

  protected expiresAtOf(request: EnqueueRequest): number | null {
    if (request.expiresAtMs !== undefined) return request.expiresAtMs;
    if (request.ttlMs !== undefined) return this.nowMs() + request.ttlMs;
    return null;
  }

  protected invalid(request: EnqueueRequest): boolean {
    const p = request.priority ?? 0;
    const a = request.maxAttempts ?? 1;
    const expiresAtMs = this.expiresAtOf(request);
    return (
      p < 0 ||
      p > 9 ||
      a < 1 ||
      (expiresAtMs !== null && expiresAtMs <= this.runAtOf(request)) ||
      (request.uniqueWhileActive === true && request.idempotencyKey === undefined)
    );
  }

  /** idempotency.ts, plainly: the window's record, else the newest unfinished job with the key. */
  protected duplicateOf(request: EnqueueRequest): string | null {
    const key = request.idempotencyKey;
    if (key === undefined) return null;
    if (request.uniqueWhileActive !== true) {
      if (settingsOf(request.queue).dedupWindowMs <= 0) return null;
      const seen = this.keys.get(`${request.queue}\0${key}`);
      if (seen !== undefined && seen.expiresAtMs > this.nowMs()) return seen.jobId;
    }
    const active = [...this.jobs.values()]
      .filter(
        (j) =>
          j.queue === request.queue &&
          j.key === key &&
          unfinished.includes(j.state) &&
          j.cancelledAtMs === null,
      )
      .sort((a, b) => b.order - a.order);
    return active[0]?.id ?? null;
  }

  /** A cancelled or deleted job frees its key. */
  protected releaseKey(j: ModelJob): void {
    const record = `${j.queue}\0${j.key}`;
    if (j.key !== null && this.keys.get(record)?.jobId === j.id) this.keys.delete(record);
  }

  /** Stores a new job under the id the engine chose. */
  insert(request: EnqueueRequest, id: string): void {
    const now = this.nowMs();
    const settings = settingsOf(request.queue);
    const runAtMs = this.runAtOf(request);
    assert.ok(!this.jobs.has(id), `the engine reused job id ${id}`);
    this.jobs.set(id, {
      id,
      queue: request.queue,
      order: this.order++,
      state: runAtMs > now ? 'scheduled' : 'ready',
      priority: request.priority ?? 0,
      runAtMs,
      attempt: 0,
      base: 0,
      maxAttempts: request.maxAttempts ?? settings.maxAttempts,
      leaseDeadlineMs: null,
      deadReason: null,
      failedAtMs: null,
      completedAtMs: null,
      lastError: null,
      errors: [],
      key: request.idempotencyKey ?? null,
      expiresAtMs: this.expiresAtOf(request),
      cancelledAtMs: null,
      group: request.group ?? null,
    });
    this.existing.add(request.queue);
    if (request.group !== undefined) this.grouped.add(request.queue);
    if (
      request.idempotencyKey !== undefined &&
      request.uniqueWhileActive !== true &&
      settings.dedupWindowMs > 0
    ) {
      this.keys.set(`${request.queue}\0${request.idempotencyKey}`, {
        jobId: id,
        expiresAtMs: now + settings.dedupWindowMs,
      });
    }
  }

  /** Best effort: the expected outcome of each job, 'new' where the engine picks the id. */
  expectBatch(requests: readonly EnqueueRequest[], ids: readonly (string | null)[]): string[] {
    return requests.map((request, i) => {
      if (this.invalid(request)) return 'rejected:invalid_job';
      const dup = this.duplicateOf(request);
      if (dup !== null) return `dup:${dup}`;
      const maxDepth = settingsOf(request.queue).maxDepth;
      if (maxDepth > 0 && this.depth(request.queue) + 1 > maxDepth) return 'rejected:queue_full';
      const id = ids[i];
      if (id) this.insert(request, id);
      return 'new';
    });
  }

  /** All or nothing: the rejected indexes, or null when the batch commits. */
  expectAtomicRejections(requests: readonly EnqueueRequest[]): string[] | null {
    const rejections: string[] = [];
    const adding = new Map<string, number>();
    const addsByIndex: boolean[] = [];
    const keysInBatch = new Set<string>();
    requests.forEach((request, i) => {
      if (this.invalid(request)) {
        rejections.push(`${i}:invalid_job`);
        addsByIndex.push(false);
        return;
      }
      let adds = this.duplicateOf(request) === null;
      const keyed = request.uniqueWhileActive === true || settingsOf(request.queue).dedupWindowMs > 0;
      if (adds && request.idempotencyKey !== undefined && keyed) {
        const key = `${request.queue}\0${request.idempotencyKey}`;
        adds = !keysInBatch.has(key);
        keysInBatch.add(key);
      }
      addsByIndex.push(adds);
      if (adds) adding.set(request.queue, (adding.get(request.queue) ?? 0) + 1);
    });
    requests.forEach((request, i) => {
      if (!addsByIndex[i]) return;
      const maxDepth = settingsOf(request.queue).maxDepth;
      if (maxDepth > 0 && this.depth(request.queue) + (adding.get(request.queue) ?? 0) > maxDepth) {
        rejections.push(`${i}:queue_full`);
      }
    });
    rejections.sort((a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0]));
    return rejections.length > 0 ? rejections : null;
  }

  counts(queue: string): Record<JobState, number> {
    const c = { scheduled: 0, ready: 0, leased: 0, completed: 0, dead: 0, cancelled: 0, waiting: 0 };
    for (const j of this.jobs.values()) if (j.queue === queue) c[j.state]++;
    return c;
  }

  /** Pause or resume: a queue nobody used is not_found unless created on purpose. */
  setPaused(queue: string, paused: boolean, allowMissing: boolean): Outcome<void> {
    if (!this.existing.has(queue) && !allowMissing) return fail('not_found');
    this.existing.add(queue);
    if (paused) this.paused.add(queue);
    else this.paused.delete(queue);
    return ok(undefined);
  }

  /** Only an existing, undeclared queue without jobs goes; its idempotency keys stay. */
  deleteQueue(queue: string): Outcome<void> {
    if (!this.existing.has(queue)) return fail('not_found');
    if (Object.hasOwn(queueOverrides, queue)) return fail('failed_precondition');
    if (Object.values(this.counts(queue)).some((n) => n > 0)) return fail('failed_precondition');
    this.existing.delete(queue);
    this.paused.delete(queue);
    return ok(undefined);
  }
}
