/**
 * The in-memory model of what a queue must do (model-queues.ts holds its jobs
 * and queues): leases, acks, nacks, extends, cancels, updates, dead letters
 * and maintenance, as plainly as they can be said.
 */
import type { BackoffSettings } from '../../../src/engine/settings.ts';
import type { DeadReason, JobState, NackDirective, NackResult } from '../../../src/engine/types.ts';
import { limits, settingsOf, sweepIntervalMs } from './config.ts';
import { saw } from './coverage.ts';
import { pickForLease, wouldLeaseAny } from './flow.ts';
import { fail, type ModelJob, ModelQueues, type Outcome, ok } from './model-queues.ts';

/** What a queue must do, as plainly as it can be said. */
export class Model extends ModelQueues {
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
