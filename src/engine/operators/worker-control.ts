/**
 * Operators' view of workers and their one lever on them: the connected
 * workers with the leases each holds, and releasing a stuck lease. A release
 * ends the lease now exactly as its expiry would (the attempt counts; back to
 * ready, or to the dead letters with reason lease_expired on the last
 * attempt), audited in the same transaction. The worker finds out when its
 * next extend, ack or nack is refused as a lost lease.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput, WorkerInfo } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import type { Settler } from '../leases/index.ts';
import type { JobState } from '../types.ts';
import type { WorkerActivity } from './worker-activity.ts';
import { noWorkerId, WorkerRegistry } from './worker-registry.ts';

export class WorkerControl {
  readonly registry: WorkerRegistry;

  constructor(
    private readonly ctx: EngineContext,
    private readonly settler: Settler,
    private readonly audit: AuditLog,
    private readonly activity: WorkerActivity,
  ) {
    this.registry = new WorkerRegistry(ctx.clock);
  }

  *list(view: StoreView): Op<WorkerInfo[]> {
    const held = new Map(
      (yield* view.leases.holders()).map((row) => [
        row.worker_id ?? noWorkerId,
        { jobs: row.jobs, sinceMs: row.since_ms },
      ]),
    );
    return this.registry
      .list(held)
      .map((worker) => ({ ...worker, ...this.activity.recent(worker.workerId) }));
  }

  releaseLease(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState; state: JobState }> {
    return this.ctx.write((tx) => this.release(tx, jobId, audit));
  }

  private *release(
    tx: StoreTx,
    jobId: string,
    audit: AuditInput | undefined,
  ): Op<{ previousState: JobState; state: JobState }> {
    const row = yield* tx.jobs.attempt(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    if (row.state !== 'leased') {
      throw new SeppError(
        'failed_precondition',
        `job ${jobId} is ${row.state}, not leased: there is no lease to release`,
      );
    }
    const by = audit === undefined ? 'an operator' : audit.actor;
    this.ctx.emit(tx, { kind: 'expired', queue: row.queue, count: 1 });
    const result = yield* this.settler.failAttempt(
      tx,
      row,
      `lease released by ${by}`,
      { kind: 'delay', delayMs: 0 },
      'lease_expired',
    );
    const outcome = { previousState: 'leased' as JobState, state: result.state as JobState };
    if (audit !== undefined)
      yield* this.audit.write(tx, audit, { jobId, queue: row.queue, attempt: row.attempt, ...outcome });
    return outcome;
  }
}
