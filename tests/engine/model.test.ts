/**
 * Model-based test: random sequences of operations run against the real
 * engine (a real SQLite file, the fake clock) and against a plain in-memory
 * model of what a queue must do; after every step the answers, every stored
 * job and the per-queue counts must agree. Job control is in it too: cancels
 * (of waiting jobs, and requests on leased ones that end them cancelled),
 * expiry, updates of waiting jobs, and what idempotency keys mean.
 *
 * Each run has its own seed (base seed + run index). On failure the seed, the
 * step and the run's log are printed; reproduce with
 *   SEPP_MODEL_SEED=<seed> SEPP_MODEL_RUNS=1 npm run test:files -- model
 * Bigger: SEPP_MODEL_RUNS (default 1000) and SEPP_MODEL_STEPS (default 20).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Statement } from 'better-sqlite3';
import { SeppError } from '../../src/engine/errors.ts';
import {
  type BackoffSettings,
  defaultEngineLimits,
  defaultQueueSettings,
  type EngineOptions,
  type QueueSettings,
} from '../../src/engine/settings.ts';
import type {
  DeadReason,
  EnqueueRequest,
  JobState,
  LeasedJob,
  NackDirective,
  NackResult,
  SettleOutcome,
} from '../../src/engine/types.ts';
import type { Db } from '../../src/store/open.ts';
import { bytes, expectThrowsCode, openTestEngine, type TestEngine, until } from '../helpers/engine.ts';
import { mulberry32, seedFromEnv } from '../helpers/prng.ts';
import { type Cursors, pickForLease, readyGroups, wouldLeaseAny } from './model-flow.ts';

const runs = Number(process.env.SEPP_MODEL_RUNS ?? 1000);
const stepsPerRun = Number(process.env.SEPP_MODEL_STEPS ?? 20);
const baseSeed = seedFromEnv('SEPP_MODEL_SEED');

// ------------------------------------------------------------------ random

class Dice {
  constructor(readonly next: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    assert.ok(items.length > 0);
    return items[Math.floor(this.next() * items.length)]!;
  }
  weighted<T>(choices: readonly [number, T][]): T {
    const total = choices.reduce((n, [w]) => n + w, 0);
    let r = this.next() * total;
    for (const [w, value] of choices) {
      r -= w;
      if (r < 0) return value;
    }
    return choices.at(-1)![1];
  }
}

// ------------------------------------------------------------------ configuration

const queueOverrides: Record<string, Partial<QueueSettings>> = {
  q0: {
    maxAttempts: 3,
    backoff: { baseMs: 1000, factor: 2, capMs: 8000, jitter: 0 },
    defaultLeaseMs: 5000,
    maxLeaseMs: 20_000,
    // Flow control (model-flow.ts): jobs of q0 and q4 may have groups.
    groupMaxLeased: 1,
  },
  q1: {
    maxAttempts: 2,
    backoff: { baseMs: 500, factor: 3, capMs: 10_000, jitter: 0.5 },
    completedRetentionMs: 15_000,
    dedupWindowMs: 20_000,
    expiredAction: 'delete',
  },
  q2: {
    maxAttempts: 1,
    deadRetentionMs: 25_000,
    maxLeaseMs: 8000,
    defaultLeaseMs: 3000,
    cancelledRetentionMs: 30_000,
  },
  q3: { maxDepth: 4, dedupWindowMs: 0, maxLeased: 2 },
};
/** Queues whose jobs the model gives a group now and then (q4 has no group limits: turns only). */
const groupedQueueNames = new Set(['q0', 'q4']);
/** q4 is not declared: it is created on first use, with the defaults. */
const queueNames = ['q0', 'q1', 'q2', 'q3', 'q4'] as const;
const limits = { ...defaultEngineLimits, maxErrorHistory: 3, maxErrorBytes: 64 };
const engineOptions: Partial<EngineOptions> = { queues: queueOverrides, limits };
const sweepIntervalMs = 60_000;
/**
 * Where the runs' databases live: a memory file system when there is one. The
 * model checks semantics, not durability, and thousands of engines opened and
 * closed on a disk cost more in fsyncs than the steps themselves.
 */
const scratchDir =
  process.env.SEPP_MODEL_DIR ??
  (existsSync('/dev/shm') && statSync('/dev/shm').isDirectory() ? '/dev/shm' : tmpdir());
const unknownId = '01900000-0000-7000-8000-000000000000';

function settingsOf(queue: string): QueueSettings {
  const override = queueOverrides[queue] ?? {};
  return {
    ...defaultQueueSettings,
    ...override,
    backoff: { ...defaultQueueSettings.backoff, ...override.backoff },
  };
}

// ------------------------------------------------------------------ the model

interface ModelJob {
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

const unfinished: readonly JobState[] = ['scheduled', 'ready', 'leased'];

type Outcome<T> = { ok: true; value: T } | { ok: false; code: string };
const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
const fail = (code: string): Outcome<never> => ({ ok: false, code });

/** What a queue must do, as plainly as it can be said. */
class Model {
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
  private order = 0;
  nextSweepMs = 0;

  constructor(
    readonly nowMs: () => number,
    private readonly random: () => number,
  ) {}

  depth(queue: string): number {
    let n = 0;
    for (const j of this.jobs.values()) {
      if (j.queue === queue && (j.state === 'scheduled' || j.state === 'ready' || j.state === 'leased')) n++;
    }
    return n;
  }

  private runAtOf(request: EnqueueRequest): number {
    const now = this.nowMs();
    if (request.runAtMs !== undefined) return Math.max(now, request.runAtMs);
    if (request.delayMs !== undefined) return now + request.delayMs;
    return now;
  }

  private expiresAtOf(request: EnqueueRequest): number | null {
    if (request.expiresAtMs !== undefined) return request.expiresAtMs;
    if (request.ttlMs !== undefined) return this.nowMs() + request.ttlMs;
    return null;
  }

  private invalid(request: EnqueueRequest): boolean {
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
  private duplicateOf(request: EnqueueRequest): string | null {
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
  private releaseKey(j: ModelJob): void {
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

  /** The jobs a reserve must lease, in order, and their new attempt and deadline. */
  reserve(queues: readonly string[], maxJobs: number, leaseMs: number | undefined): ModelJob[] {
    const now = this.nowMs();
    const leased: ModelJob[] = [];
    for (const queue of new Set(queues)) {
      if (leased.length === maxJobs) break;
      if (!this.existing.has(queue) || this.paused.has(queue)) continue;
      const settings = settingsOf(queue);
      // As the engine (reserve.ts): lease under the limits; jobs whose expiry passed since
      // the last maintenance are taken back out (expiry.ts), and the gap is leased again.
      let want = maxJobs - leased.length;
      for (;;) {
        const picked = pickForLease(
          [...this.jobs.values()],
          queue,
          want,
          settings,
          this.grouped.has(queue),
          this.cursors,
        );
        if (picked.length === 0) break;
        let live = 0;
        for (const { id } of picked) {
          const j = this.jobs.get(id)!;
          if (j.expiresAtMs !== null && j.expiresAtMs <= now) {
            this.expire(j);
            continue;
          }
          j.state = 'leased';
          j.attempt++;
          j.leaseDeadlineMs = now + Math.min(leaseMs ?? settings.defaultLeaseMs, settings.maxLeaseMs);
          this.handles.push({ jobId: j.id, attempt: j.attempt });
          leased.push(j);
          live++;
        }
        want -= live;
        if (live === picked.length || want === 0) break;
      }
    }
    return leased;
  }

  wouldLease(queues: readonly string[]): boolean {
    return queues.some(
      (q) =>
        this.existing.has(q) &&
        !this.paused.has(q) &&
        wouldLeaseAny([...this.jobs.values()], q, settingsOf(q), this.grouped.has(q)),
    );
  }

  /** Whether a new job without a group on `queue` would be leased at once (no limit holds it back). */
  leasableNow(queue: string): boolean {
    const limit = settingsOf(queue).maxLeased;
    return limit === 0 || this.counts(queue).leased < limit;
  }

  private fence(jobId: string, attempt: number): Outcome<ModelJob> {
    const j = this.jobs.get(jobId);
    if (j === undefined) return fail('not_found');
    // Not leased is not_found whatever the attempt; leased under another attempt is a lost lease.
    if (j.state !== 'leased') return fail('not_found');
    if (j.attempt !== attempt) return fail('lease_lost');
    return ok(j);
  }

  private expire(j: ModelJob): void {
    saw(`expired ${j.state} (${settingsOf(j.queue).expiredAction})`);
    if (settingsOf(j.queue).expiredAction === 'delete') {
      this.jobs.delete(j.id);
      this.releaseKey(j);
      return;
    }
    j.state = 'dead';
    j.deadReason = 'expired';
    j.failedAtMs = this.nowMs();
    j.lastError = `expired: not started before ${new Date(j.expiresAtMs ?? 0).toISOString()} (expires_at_ms)`;
  }

  /** A leased job whose cancel was asked for ends its attempt: cancelled, never retried. */
  private finishCancelled(j: ModelJob, error: string | null): void {
    j.state = 'cancelled';
    j.leaseDeadlineMs = null;
    if (error !== null) {
      j.errors = [...j.errors, { attempt: j.attempt, atMs: this.nowMs(), error }].slice(
        -limits.maxErrorHistory,
      );
      j.lastError = error;
    }
  }

  ack(jobId: string, attempt: number): Outcome<null> {
    const fenced = this.fence(jobId, attempt);
    if (!fenced.ok) return fenced;
    const j = fenced.value;
    if (j.cancelledAtMs !== null) {
      this.finishCancelled(j, null);
      return fail('job_cancelled');
    }
    if (settingsOf(j.queue).completedRetentionMs > 0) {
      j.state = 'completed';
      j.completedAtMs = this.nowMs();
      j.leaseDeadlineMs = null;
    } else {
      this.jobs.delete(jobId);
    }
    return ok(null);
  }

  nack(jobId: string, attempt: number, error: string, directive: NackDirective): Outcome<NackResult> {
    const fenced = this.fence(jobId, attempt);
    if (!fenced.ok) return fenced;
    if (fenced.value.cancelledAtMs !== null) {
      this.finishCancelled(fenced.value, truncate(error));
      return ok({ state: 'cancelled', runAtMs: null });
    }
    return ok(this.failAttempt(fenced.value, truncate(error), directive, 'attempts_exhausted'));
  }

  private failAttempt(j: ModelJob, error: string, directive: NackDirective, reason: DeadReason): NackResult {
    const now = this.nowMs();
    j.errors = [...j.errors, { attempt: j.attempt, atMs: now, error }].slice(-limits.maxErrorHistory);
    j.lastError = error;
    j.leaseDeadlineMs = null;
    const used = j.attempt - j.base;
    if (directive.kind === 'dead_letter' || used >= j.maxAttempts) {
      j.state = 'dead';
      j.deadReason = directive.kind === 'dead_letter' ? 'dead_lettered' : reason;
      j.failedAtMs = now;
      return { state: 'dead', runAtMs: null };
    }
    const delayMs =
      directive.kind === 'delay'
        ? directive.delayMs
        : backoff(settingsOf(j.queue).backoff, used, this.random);
    j.runAtMs = now + delayMs;
    j.state = delayMs > 0 ? 'scheduled' : 'ready';
    return { state: j.state, runAtMs: j.runAtMs };
  }

  extend(jobId: string, attempt: number, leaseMs: number): Outcome<number> {
    const fenced = this.fence(jobId, attempt);
    if (!fenced.ok) return fenced;
    const j = fenced.value;
    if (j.cancelledAtMs !== null) return fail('job_cancelled');
    j.leaseDeadlineMs = this.nowMs() + Math.min(leaseMs, settingsOf(j.queue).maxLeaseMs);
    return ok(j.leaseDeadlineMs);
  }

  cancel(jobId: string): Outcome<{ previousState: JobState; state: JobState }> {
    const j = this.jobs.get(jobId);
    if (j === undefined) return fail('not_found');
    const previousState = j.state;
    if (previousState === 'dead' || previousState === 'completed') return fail('failed_precondition');
    this.cancelOne(j);
    return ok({ previousState, state: j.state });
  }

  private cancelOne(j: ModelJob): void {
    if (j.state === 'scheduled' || j.state === 'ready') {
      j.state = 'cancelled';
      j.cancelledAtMs = this.nowMs();
      this.releaseKey(j);
    } else if (j.state === 'leased' && j.cancelledAtMs === null) {
      j.cancelledAtMs = this.nowMs();
      this.releaseKey(j);
    }
  }

  /** Bulk cancel: every job of the queue (and type) in `states`. */
  cancelJobs(queue: string, states: readonly JobState[]): { cancelled: number; cancelRequested: number } {
    let cancelled = 0;
    let cancelRequested = 0;
    for (const j of this.jobs.values()) {
      if (j.queue !== queue || !states.includes(j.state)) continue;
      if (j.state === 'leased') {
        if (j.cancelledAtMs !== null) continue;
        cancelRequested++;
      } else cancelled++;
      this.cancelOne(j);
    }
    return { cancelled, cancelRequested };
  }

  updateJob(
    jobId: string,
    priority: number | undefined,
    runNow: boolean,
    delayMs: number | undefined,
  ): Outcome<null> {
    const j = this.jobs.get(jobId);
    if (j === undefined) return fail('not_found');
    if (j.state !== 'scheduled' && j.state !== 'ready') return fail('failed_precondition');
    const now = this.nowMs();
    const runAtMs = runNow ? now : delayMs !== undefined ? now + delayMs : j.runAtMs;
    const rescheduled = runNow || delayMs !== undefined;
    if (rescheduled && j.expiresAtMs !== null && runAtMs >= j.expiresAtMs) return fail('invalid_argument');
    if (priority !== undefined) j.priority = priority;
    if (rescheduled) {
      j.runAtMs = runAtMs;
      j.state = runAtMs > now ? 'scheduled' : 'ready';
    }
    return ok(null);
  }

  /** Bulk: run now the scheduled jobs of a queue. */
  runNow(queue: string): number {
    let n = 0;
    for (const j of this.jobs.values()) {
      if (j.queue !== queue || j.state !== 'scheduled') continue;
      j.state = 'ready';
      j.runAtMs = this.nowMs();
      n++;
    }
    return n;
  }

  deadOf(queue: string): ModelJob[] {
    return [...this.jobs.values()].filter((j) => j.queue === queue && j.state === 'dead');
  }

  requeue(queue: string, ids: readonly string[] | 'all'): number {
    const targets = ids === 'all' ? this.deadOf(queue) : this.deadOf(queue).filter((j) => ids.includes(j.id));
    for (const j of targets) {
      j.state = 'ready';
      j.base = j.attempt;
      j.runAtMs = this.nowMs();
      j.deadReason = null;
      j.failedAtMs = null;
      j.expiresAtMs = null;
    }
    return targets.length;
  }

  deleteDead(queue: string, ids: readonly string[] | 'all'): number {
    const targets = ids === 'all' ? this.deadOf(queue) : this.deadOf(queue).filter((j) => ids.includes(j.id));
    for (const j of targets) {
      this.jobs.delete(j.id);
      this.releaseKey(j);
    }
    return targets.length;
  }

  /** One maintenance pass at the current time: end leases, expire, promote, and sweep when a sweep is due. */
  maintain(): void {
    const now = this.nowMs();
    for (const j of this.jobs.values()) {
      if (j.state === 'leased' && (j.leaseDeadlineMs ?? 0) <= now) {
        if (j.cancelledAtMs !== null) this.finishCancelled(j, 'lease expired after a cancel');
        else this.failAttempt(j, 'lease expired', { kind: 'delay', delayMs: 0 }, 'lease_expired');
      }
    }
    for (const j of [...this.jobs.values()]) {
      const waiting = j.state === 'scheduled' || j.state === 'ready';
      if (waiting && j.expiresAtMs !== null && j.expiresAtMs <= now) this.expire(j);
    }
    for (const j of this.jobs.values()) {
      if (j.state === 'scheduled' && j.runAtMs <= now) j.state = 'ready';
    }
    if (now >= this.nextSweepMs) {
      for (const j of [...this.jobs.values()]) {
        const s = settingsOf(j.queue);
        if (j.state === 'dead' && (j.failedAtMs ?? 0) < now - s.deadRetentionMs) this.jobs.delete(j.id);
        if (j.state === 'completed' && (j.completedAtMs ?? 0) < now - s.completedRetentionMs) {
          this.jobs.delete(j.id);
        }
        if (j.state === 'cancelled' && (j.cancelledAtMs ?? 0) < now - s.cancelledRetentionMs) {
          this.jobs.delete(j.id);
        }
      }
      this.nextSweepMs = now + sweepIntervalMs;
    }
  }

  counts(queue: string): Record<JobState, number> {
    const c = { scheduled: 0, ready: 0, leased: 0, completed: 0, dead: 0, cancelled: 0 };
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

function backoff(settings: BackoffSettings, failures: number, random: () => number): number {
  const raw = Math.min(settings.capMs, settings.baseMs * settings.factor ** (failures - 1));
  return Math.max(0, Math.round(Math.min(settings.capMs, raw + raw * settings.jitter * (2 * random() - 1))));
}

/** ASCII-only model of the engine's truncation. */
function truncate(error: string): string {
  const marker = '… [truncated]';
  if (error.length <= limits.maxErrorBytes) return error;
  return error.slice(0, limits.maxErrorBytes - Buffer.byteLength(marker)) + marker;
}

// ------------------------------------------------------------------ running both

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

async function outcomeOf<T>(call: Promise<T>): Promise<Outcome<T>> {
  try {
    return ok(await call);
  } catch (error) {
    if (error instanceof SeppError) return fail(error.code);
    throw error;
  }
}

interface StoredRow {
  id: string;
  queue: string;
  state: string;
  priority: number;
  attempt: number;
  attempt_base: number;
  max_attempts: number;
  run_at_ms: number;
  lease_deadline_ms: number | null;
  dead_reason: string | null;
  failed_at_ms: number | null;
  completed_at_ms: number | null;
  last_error: string | null;
  errors_json: string | null;
  expires_at_ms: number | null;
  cancelled_at_ms: number | null;
  group_key: string | null;
}

/** How often each interesting thing happened, across all runs: printed, so a model that stops reaching states shows. */
const coverage = new Map<string, number>();
function saw(what: string, times = 1): void {
  if (times > 0) coverage.set(what, (coverage.get(what) ?? 0) + times);
}

class Run {
  t: TestEngine;
  readonly model: Model;
  readonly dice: Dice;
  readonly log: string[] = [];
  private rowsOf: { db: Db; statement: Statement<[], StoredRow> } | undefined;

  constructor(readonly seed: number) {
    this.dice = new Dice(mulberry32(seed));
    const jitterSeed = (seed ^ 0x9e3779b9) >>> 0;
    this.t = openTestEngine({
      dataDir: mkdtempSync(join(scratchDir, 'sepp-model-')),
      options: engineOptions,
      durability: 'relaxed',
      deps: { random: mulberry32(jitterSeed) },
    });
    const clock = this.t.clock;
    this.model = new Model(() => clock.nowMs(), mulberry32(jitterSeed));
  }

  get engine() {
    return this.t.engine;
  }

  async step(): Promise<void> {
    const d = this.dice;
    // Weights follow the state, so that most steps do something: settle when
    // there are leases, reserve when jobs are ready, manage dead letters when
    // there are some; now and then a step that is bound to be refused.
    const states = { scheduled: 0, ready: 0, leased: 0, completed: 0, dead: 0, cancelled: 0 };
    for (const j of this.model.jobs.values()) states[j.state]++;
    const settle = states.leased > 0 ? 10 : 0.5;
    const op = d.weighted<() => Promise<void>>([
      [states.ready + states.scheduled < 3 ? 20 : 10, () => this.enqueueOne()],
      [4, () => this.enqueueBatch()],
      [3, () => this.enqueueAtomic()],
      [states.ready > 0 ? 16 : 3, () => this.reserve()],
      [settle, () => this.ack()],
      [settle * 0.3, () => this.ackBatch()],
      [settle * 1.2, () => this.nack()],
      [settle * 0.4, () => this.extend()],
      [10, () => this.advance()],
      [3, () => this.cancel()],
      [1, () => this.cancelJobs()],
      [states.ready + states.scheduled > 0 ? 3 : 0.5, () => this.updateJob()],
      [states.scheduled > 0 ? 1 : 0.2, () => this.runNow()],
      [states.dead > 0 ? 5 : 0.5, () => this.deadLetters()],
      [2, () => this.pauseOrResume()],
      [1, () => this.deleteQueue()],
      [2, () => this.longPoll()],
      [1, () => this.restart()],
    ]);
    await op();
    this.check();
  }

  private request(): EnqueueRequest {
    const d = this.dice;
    const now = this.t.clock.nowMs();
    const request: EnqueueRequest = {
      queue: d.weighted([
        [3, 'q0'],
        [3, 'q1'],
        [2, 'q2'],
        [2, 'q3'],
        [1, 'q4'],
      ]),
      type: 'job',
      payload: bytes(`p${d.int(0, 999)}`),
      priority: d.chance(0.04) ? 10 : d.pick([0, 0, 0, 1, 5, 9]),
    };
    const when = d.weighted([
      [6, 'now'],
      [1, 'delay0'],
      [2, 'delay'],
      [1, 'past'],
      [1, 'future'],
    ]);
    if (when === 'delay0') request.delayMs = 0;
    if (when === 'delay') request.delayMs = d.int(1, 20_000);
    if (when === 'past') request.runAtMs = now - d.int(1, 100_000);
    if (when === 'future') request.runAtMs = now + d.int(1, 20_000);
    if (d.chance(0.3)) request.idempotencyKey = d.pick(['a', 'b', 'c']);
    if (d.chance(request.idempotencyKey === undefined ? 0.01 : 0.3)) request.uniqueWhileActive = true;
    if (d.chance(0.25)) request.maxAttempts = d.chance(0.1) ? 0 : d.int(1, 3);
    const expiry = d.weighted([
      [8, 'none'],
      [2, 'ttl'],
      [1, 'at'],
    ]);
    // Sometimes before the job is due: refused.
    if (expiry === 'ttl') request.ttlMs = d.int(1, 30_000);
    if (expiry === 'at') request.expiresAtMs = now + d.int(-1000, 30_000);
    if (groupedQueueNames.has(request.queue) && d.chance(0.6)) request.group = d.pick(['g1', 'g2', 'g3']);
    return request;
  }

  private describeRequests(requests: readonly EnqueueRequest[]): string {
    return requests
      .map((r) => {
        const { payload: _, type: __, ...rest } = r;
        return JSON.stringify(rest);
      })
      .join(' ');
  }

  private async enqueueOne(): Promise<void> {
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

  private async enqueueBatch(): Promise<void> {
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

  private async enqueueAtomic(): Promise<void> {
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

  private reserveRequest() {
    const d = this.dice;
    const queues = Array.from({ length: d.int(1, 3) }, () => d.pick(queueNames));
    const maxJobs = d.int(1, 4);
    const leaseMs = d.chance(0.4) ? undefined : d.int(500, 30_000);
    return { queues, maxJobs, leaseMs };
  }

  private checkLeased(got: LeasedJob[], expected: ModelJob[]): void {
    assert.deepEqual(
      got.map((j) => `${j.id}#${j.attempt}@${j.leaseDeadlineMs}/${j.maxAttempts}`),
      expected.map((j) => `${j.id}#${j.attempt}@${j.leaseDeadlineMs}/${j.base + j.maxAttempts}`),
    );
  }

  private async reserve(): Promise<void> {
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

  /** A settlement target: mostly a live lease, sometimes a stale one or an unknown job. */
  private handle(): { jobId: string; attempt: number } {
    const d = this.dice;
    const live = [...this.model.jobs.values()].filter((j) => j.state === 'leased');
    // Stale: an earlier lease of a job that still exists (lease_lost when it is leased again).
    const stale = this.model.handles.filter((h) => {
      const j = this.model.jobs.get(h.jobId);
      return j !== undefined && j.attempt !== h.attempt;
    });
    const kind = d.weighted([
      [live.length > 0 ? 12 : 0, 'live'],
      [stale.length > 0 ? 2 : 0, 'stale'],
      [this.model.handles.length > 0 ? 1 : 0, 'any'],
      [0.5, 'unknown'],
    ]);
    if (kind === 'live') {
      const j = d.pick(live);
      return { jobId: j.id, attempt: j.attempt };
    }
    if (kind === 'stale') return d.pick(stale);
    if (kind === 'any') return d.pick(this.model.handles);
    return { jobId: unknownId, attempt: 1 };
  }

  private async ack(): Promise<void> {
    const h = this.handle();
    this.log.push(`ack ${JSON.stringify(h)}`);
    const got = await outcomeOf(this.engine.ack(h));
    saw(`ack ${got.ok ? 'ok' : got.code}`);
    assert.deepEqual(got.ok ? ok(null) : got, this.model.ack(h.jobId, h.attempt));
  }

  private async ackBatch(): Promise<void> {
    const handles = Array.from({ length: this.dice.int(1, 4) }, () => this.handle());
    this.log.push(`ackBatch ${JSON.stringify(handles)}`);
    const got = await this.engine.ackBatch(handles);
    const expected = handles.map((h) => this.model.ack(h.jobId, h.attempt));
    assert.deepEqual(
      got.map((o: SettleOutcome) => (o.ok ? 'ok' : o.code)),
      expected.map((o) => (o.ok ? 'ok' : o.code)),
    );
  }

  private async nack(): Promise<void> {
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

  private async extend(): Promise<void> {
    const h = this.handle();
    const leaseMs = this.dice.int(1, 30_000);
    this.log.push(`extend ${JSON.stringify({ ...h, leaseMs })}`);
    const got = await outcomeOf(this.engine.extend({ ...h, leaseMs }));
    saw(`extend ${got.ok ? 'ok' : got.code}`);
    const expected = this.model.extend(h.jobId, h.attempt, leaseMs);
    assert.deepEqual(got.ok ? ok(got.value.leaseDeadlineMs) : got, expected);
  }

  private async maintain(): Promise<void> {
    await this.engine.runMaintenance();
    const before = new Map([...this.model.jobs.values()].map((j) => [j.id, j.state]));
    this.model.maintain();
    for (const [id, state] of before) {
      const now = this.model.jobs.get(id)?.state ?? 'swept';
      const reason = this.model.jobs.get(id)?.deadReason;
      if (now !== state) saw(`maintenance ${state} → ${now}${now === 'dead' ? ` (${reason})` : ''}`);
    }
  }

  private async advance(): Promise<void> {
    const now = this.t.clock.nowMs();
    // The next due time (run-at, lease deadline, end of a dedup window), to land on it or one millisecond before.
    const due = [...this.model.jobs.values()]
      .flatMap((j) => [
        j.state === 'scheduled' ? j.runAtMs : j.state === 'leased' ? (j.leaseDeadlineMs ?? 0) : 0,
        j.state === 'scheduled' || j.state === 'ready' ? (j.expiresAtMs ?? 0) : 0,
      ])
      .concat([...this.model.keys.values()].map((k) => k.expiresAtMs))
      .filter((at) => at > now);
    const nextDueMs = due.length > 0 ? Math.min(...due) - now : 0;
    const ms = this.dice.weighted<number>([
      [2, 0],
      [4, this.dice.int(1, 2000)],
      [4, this.dice.int(2000, 15_000)],
      [1, this.dice.int(15_000, 70_000)],
      [nextDueMs > 0 ? 3 : 0, nextDueMs],
      [nextDueMs > 0 ? 2 : 0, nextDueMs - 1],
    ]);
    this.log.push(`advance ${ms}`);
    this.t.clock.advance(ms);
    await this.maintain();
  }

  private async cancel(): Promise<void> {
    const d = this.dice;
    const ids = [...this.model.jobs.keys()];
    const jobId = ids.length > 0 && d.chance(0.9) ? d.pick(ids) : unknownId;
    this.log.push(`cancel ${jobId}`);
    const got = await outcomeOf(this.engine.cancel(jobId));
    saw(`cancel ${got.ok ? `${got.value.previousState} → ${got.value.state}` : got.code}`);
    assert.deepEqual(got, this.model.cancel(jobId));
  }

  private async cancelJobs(): Promise<void> {
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
      assert.throws(() => this.engine.countCancellable({ queue, states }), { code: 'not_found' });
      assert.deepEqual(await outcomeOf(this.engine.cancelJobs({ queue, states })), fail('not_found'));
      saw('cancelJobs not_found');
      return;
    }
    const counted = this.engine.countCancellable({ queue, states });
    const got = await this.engine.cancelJobs({ queue, states });
    const expected = this.model.cancelJobs(queue, states);
    assert.deepEqual(got, expected);
    assert.equal(counted, expected.cancelled + expected.cancelRequested);
    saw('cancelJobs cancelled', got.cancelled);
    saw('cancelJobs requested', got.cancelRequested);
  }

  private async updateJob(): Promise<void> {
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

  private async runNow(): Promise<void> {
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

  private async deadLetters(): Promise<void> {
    const d = this.dice;
    const withDead = queueNames.filter((q) => this.model.deadOf(q).length > 0);
    const queue = withDead.length > 0 && d.chance(0.8) ? d.pick(withDead) : d.pick(queueNames);
    if (!this.model.existing.has(queue)) {
      // A queue never used and not declared does not exist: NOT_FOUND, not an empty answer.
      this.log.push(`dead letters of ${queue}, which does not exist`);
      expectThrowsCode(() => this.engine.listDeadLetters({ queue }), 'not_found');
      assert.equal((await outcomeOf(this.engine.requeueDeadLetters({ queue, all: true }))).ok, false);
      saw('dead letters of a queue that does not exist');
      return;
    }
    const dead = this.model.deadOf(queue);
    const listed = this.engine.listDeadLetters({ queue, pageSize: 1000 });
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

  private async pauseOrResume(): Promise<void> {
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

  private async deleteQueue(): Promise<void> {
    // Mostly q4, the one undeclared queue, which alone can be deleted.
    const queue = this.dice.chance(0.6) ? 'q4' : this.dice.pick(queueNames);
    this.log.push(`deleteQueue ${queue}`);
    const got = await outcomeOf(this.engine.deleteQueue(queue));
    assert.deepEqual(got, this.model.deleteQueue(queue));
    saw(`deleteQueue ${got.ok ? 'ok' : got.code}`);
  }

  /** A long-poll that finds nothing, then is woken by an enqueue, times out, or is aborted. */
  private async longPoll(): Promise<void> {
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

  private async restart(): Promise<void> {
    this.log.push('restart');
    saw('restart');
    this.t = this.t.reopen();
    // A new engine's maintenance sweeps on its first pass, and its turns across groups start afresh.
    this.model.nextSweepMs = 0;
    this.model.cursors = new Map();
  }

  check(): void {
    if (this.rowsOf?.db !== this.t.db) {
      this.rowsOf = {
        db: this.t.db,
        statement: this.t.db.prepare<[], StoredRow>(
          `SELECT id, queue, state, priority, attempt, attempt_base, max_attempts, run_at_ms, lease_deadline_ms,
                  dead_reason, failed_at_ms, completed_at_ms, last_error, errors_json, expires_at_ms,
                  cancelled_at_ms, group_key FROM jobs`,
        ),
      };
    }
    const rows = this.rowsOf.statement.all();
    const stored = rows
      .map((r) => ({
        id: r.id,
        queue: r.queue,
        state: r.state,
        priority: r.priority,
        attempt: r.attempt,
        base: r.attempt_base,
        maxAttempts: r.max_attempts,
        runAtMs: r.run_at_ms,
        leaseDeadlineMs: r.lease_deadline_ms,
        deadReason: r.dead_reason,
        failedAtMs: r.failed_at_ms,
        completedAtMs: r.completed_at_ms,
        lastError: r.last_error,
        errors:
          r.errors_json === null
            ? []
            : (JSON.parse(r.errors_json) as { attempt: number; at_ms: number; error: string }[]).map((e) => ({
                attempt: e.attempt,
                atMs: e.at_ms,
                error: e.error,
              })),
        expiresAtMs: r.expires_at_ms,
        cancelledAtMs: r.cancelled_at_ms,
        group: r.group_key,
      }))
      .sort(byId);
    // The same keys in the same order as `stored`, so that the JSON comparison below is exact.
    const expected = [...this.model.jobs.values()]
      .map((j) => ({
        id: j.id,
        queue: j.queue,
        state: j.state as string,
        priority: j.priority,
        attempt: j.attempt,
        base: j.base,
        maxAttempts: j.maxAttempts,
        runAtMs: j.runAtMs,
        leaseDeadlineMs: j.leaseDeadlineMs,
        deadReason: j.deadReason as string | null,
        failedAtMs: j.failedAtMs,
        completedAtMs: j.completedAtMs,
        lastError: j.lastError,
        errors: j.errors.map((e) => ({ attempt: e.attempt, atMs: e.atMs, error: e.error })),
        expiresAtMs: j.expiresAtMs,
        cancelledAtMs: j.cancelledAtMs,
        group: j.group,
      }))
      .sort(byId);
    // Comparing the JSON first is much cheaper; the deep comparison gives a readable diff.
    if (JSON.stringify(stored) !== JSON.stringify(expected)) {
      assert.deepEqual(stored, expected, 'stored jobs match the model');
    }

    const queues = this.engine.listQueues();
    assert.deepEqual(
      queues.map((q) => q.name),
      [...this.model.existing].sort(),
    );
    for (const q of queues) {
      assert.deepEqual(q.counts, this.model.counts(q.name), `counts of ${q.name}`);
      assert.equal(q.paused, this.model.paused.has(q.name), `paused flag of ${q.name}`);
      assert.equal(q.waitingWorkers, 0);
      assert.equal(q.throttledWorkers, 0);
      assert.equal(
        q.readyGroups,
        readyGroups([...this.model.jobs.values()], q.name),
        `ready groups of ${q.name}`,
      );
      const readyRunAts = [...this.model.jobs.values()]
        .filter((j) => j.queue === q.name && j.state === 'ready')
        .map((j) => j.runAtMs);
      const oldest = readyRunAts.length === 0 ? null : this.t.clock.nowMs() - Math.min(...readyRunAts);
      assert.equal(q.oldestReadyAgeMs, oldest, `oldest ready age of ${q.name}`);
    }
    assert.deepEqual(this.engine.counterMismatches(), []);
  }
}

test(`model: ${runs} random runs of ${stepsPerRun} steps agree with the in-memory model`, {
  timeout: 10 * 60_000,
}, async () => {
  let steps = 0;
  for (let i = 0; i < runs; i++) {
    const seed = (baseSeed + i) >>> 0;
    const run = new Run(seed);
    try {
      for (let s = 0; s < stepsPerRun; s++) {
        await run.step();
        steps++;
      }
    } catch (error) {
      const tail = run.log
        .slice(-25)
        .map((line, k) => `  ${run.log.length - Math.min(25, run.log.length) + k}: ${line}`);
      console.error(
        [
          `model test failed in run ${i} with seed ${seed} at step ${run.log.length - 1}`,
          `reproduce: SEPP_MODEL_SEED=${seed} SEPP_MODEL_RUNS=1 SEPP_MODEL_STEPS=${stepsPerRun} npm run test:files -- model`,
          'last steps:',
          ...tail,
        ].join('\n'),
      );
      throw error;
    } finally {
      run.t.dispose();
    }
  }
  console.log(`model: base seed ${baseSeed}, ${runs} runs, ${steps} steps`);
  console.log(
    [...coverage]
      .sort()
      .map(([what, n]) => `  ${what}: ${n}`)
      .join('\n'),
  );
});
