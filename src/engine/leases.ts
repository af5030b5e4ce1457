/**
 * What workers call: lease jobs, ack (one or a batch), nack, extend and report
 * progress. Each settle is one write operation over settle.ts, answered once
 * its commit is durable; the checks that need no transaction run before it.
 */

import type { EngineContext } from './context.ts';
import { SeppError } from './errors.ts';
import type { AckBatches } from './leases/ack-batch.ts';
import { checkProgressReport, type ProgressReports } from './leases/progress.ts';
import type { Reserver } from './leases/reserve.ts';
import { checkAckResult } from './leases/results.ts';
import type { Settler } from './leases/settle.ts';
import { type EngineLifecycle, shuttingDown } from './lifecycle.ts';
import type {
  Ack,
  ExtendRequest,
  JobProgress,
  LeasedJob,
  NackRequest,
  NackResult,
  ProgressReport,
  ReserveRequest,
  SettleOutcome,
} from './types.ts';

export class Leases {
  private readonly stopsWaiting = (): boolean => this.lifecycle.stopsWaiting;

  constructor(
    private readonly ctx: EngineContext,
    private readonly lifecycle: EngineLifecycle,
    private readonly reserver: Reserver,
    private readonly settler: Settler,
    private readonly acks: AckBatches,
    private readonly progress: ProgressReports,
  ) {}

  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    if (this.lifecycle.isClosed) return Promise.reject(shuttingDown());
    return this.reserver.reserve(request, signal, this.stopsWaiting);
  }

  async ack(ack: Ack): Promise<void> {
    checkAckResult(ack, this.ctx.limits);
    return this.ctx.write((tx) => this.settler.ack(tx, ack)).then(throwIfFailed);
  }

  async ackBatch(settles: readonly Ack[]): Promise<SettleOutcome[]> {
    for (const ack of settles) checkAckResult(ack, this.ctx.limits);
    if (settles.length > this.ctx.limits.maxReserveJobs) {
      throw new SeppError(
        'resource_exhausted',
        `acks: ${settles.length} in one batch, the limit is ${this.ctx.limits.maxReserveJobs} (limits.max_reserve_jobs)`,
      );
    }
    return this.ctx.write((tx) => this.acks.ackEach(tx, settles));
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.ctx.write((tx) => this.settler.nack(tx, request));
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.ctx.write((tx) => this.settler.extend(tx, request));
  }

  async reportProgress(report: ProgressReport): Promise<JobProgress> {
    checkProgressReport(report, this.ctx.limits);
    return this.ctx.write((tx) => this.progress.report(tx, report));
  }
}

function throwIfFailed(outcome: SettleOutcome): void {
  if (!outcome.ok) throw new SeppError(outcome.code, outcome.message);
}
