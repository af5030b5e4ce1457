/**
 * Progress reports: while a worker holds a lease it may say how far along the
 * job is — a percentage (0–100), a small JSON document, or both. A report is
 * fenced by the attempt like an extend; each part it carries replaces the
 * stored one and a part it leaves out stays as it was. A retry starts with no
 * progress; a completed or dead job keeps its last report.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import { formatBytes } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import type { EngineLimits } from '../settings.ts';
import type { JobProgress, ProgressReport } from '../types.ts';
import { cancelledMessage } from './cancelled-lease.ts';
import { settleProblem } from './settle.ts';

/** Refuses a malformed report (invalid_argument) before anything is written. */
export function checkProgressReport(report: ProgressReport, limits: EngineLimits): void {
  const { percent, json } = report;
  if (percent === undefined && json === undefined) {
    throw new SeppError('invalid_argument', 'progress: give a percent, a JSON document, or both');
  }
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new SeppError('invalid_argument', `percent is ${percent}; it must be a number from 0 to 100`);
  }
  if (json !== undefined) {
    const bytes = Buffer.byteLength(json);
    if (bytes > limits.maxProgressBytes) {
      throw new SeppError(
        'invalid_argument',
        `progress json is ${formatBytes(bytes)}, the limit is ${formatBytes(limits.maxProgressBytes)} (limits.max_progress_bytes)`,
      );
    }
    try {
      JSON.parse(json);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new SeppError('invalid_argument', `progress json is not valid JSON: ${detail}`);
    }
  }
}

export class ProgressReports {
  constructor(private readonly ctx: EngineContext) {}

  /** Records how far along a leased job is (fenced like extend); resolves with the job's progress after it. */
  report(report: ProgressReport): Promise<JobProgress> {
    try {
      checkProgressReport(report, this.ctx.limits);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.ctx.write((tx) => this.reportIn(tx, report));
  }

  /** Stores a checked report of the lease `attempt`; returns the job's progress after it. */
  private *reportIn(tx: StoreTx, report: ProgressReport): Op<JobProgress> {
    const { clock } = this.ctx;
    const row = yield* tx.jobs.attempt(report.jobId);
    const problem = settleProblem(row, report.jobId, report.attempt);
    if (problem) throw new SeppError(problem.code, problem.message);
    // Asked to stop (cancel.ts): refused like an extend, so the worker learns it here too.
    if (row!.cancelled_at_ms !== null) throw new SeppError('job_cancelled', cancelledMessage(row!));
    const nowMs = clock.nowMs();
    const stored = yield* tx.leases.reportProgress({
      jobId: report.jobId,
      attempt: report.attempt,
      percent: report.percent ?? null,
      json: report.json ?? null,
      nowMs,
    });
    if (stored === undefined)
      throw new SeppError('internal', `job ${report.jobId} changed while reporting progress`);
    this.ctx.wroteTo(tx, row!.queue);
    const progress: JobProgress = {
      percent: stored.progress_percent,
      json: stored.progress_json,
      atMs: nowMs,
    };
    if (this.ctx.events.recording) {
      this.ctx.record(tx, {
        kind: 'progress',
        sequence: 0,
        atMs: nowMs,
        jobId: row!.id,
        queue: row!.queue,
        type: row!.type,
        attempt: row!.attempt,
        progress,
      });
    }
    return progress;
  }
}
