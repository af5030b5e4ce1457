/**
 * Flow control: the limits a lease obeys beyond "a job is ready" — a queue's
 * concurrency limit (`max_leased`) and rate limit, and, for jobs with a group,
 * fair turns across groups with per-group limits (docs/flow-control.md).
 *
 * Every decision is made inside the lease's write operation from what the
 * database holds (leased counts, bucket rows), so the limits are exact across
 * every worker and transport (there is one writer) and hold right after a
 * restart. Settings are read per lease, so a changed setting applies to the
 * next lease.
 *
 * A reserve held back by a limit waits like any long-poll, marked as throttled
 * on the queue, and is woken by what can lift the limit:
 *   - a lease of the queue ending (ack, nack, expiry): as many waiters as leases ended;
 *   - a token coming due: one timer per queue, from the injected clock, set to
 *     the earliest token any throttled lease was waiting for;
 *   - new ready jobs (as always).
 * A woken reserve that finds the limit still holding registers again.
 */

import type { LeaseParams } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { LeasedRow } from '../../store/rows.ts';
import type { Store, StoreTx, StoreView } from '../../store/store.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import type { QueueSettings } from '../settings.ts';
import { Buckets, queueBucketKey } from './buckets.ts';
import { GroupTurns } from './group-turns.ts';
import type { BucketState } from './token-bucket.ts';
import { leaseUngrouped } from './ungrouped-lease.ts';

/**
 * The long-polls flow control wakes (the leases room's waiters): how many a limit holds
 * back on a queue, and waking as many as can lease.
 */
export interface ThrottledWaiters {
  throttledOn(queue: string): number;
  notify(queue: string, jobs: number): void;
}

export interface FlowLease {
  /** Leased rows, in the order they were chosen. */
  rows: LeasedRow[];
  /** Ready jobs were left because of a limit: a reserve that waits now is throttled on this queue. */
  throttled: boolean;
}

/** What ListQueues shows of a queue's flow control. */
export interface FlowStats {
  /** Long-polls waiting on the queue because a limit holds its ready jobs back. */
  throttledWaiters: number;
  /** Groups with ready jobs, counted up to `readyGroupsCountLimit`. */
  readyGroups: number;
  /** True when counting stopped at the limit: there are more groups than `readyGroups`. */
  readyGroupsCapped: boolean;
  /** Earliest due time among the grouped ready jobs counted (null: none). */
  oldestGroupedRunAtMs: number | null;
}

/** Groups ListQueues counts per queue before it says "at least" (each is one index seek). */
export const readyGroupsCountLimit = 1000;

/** What a lease left behind, for the wake-ups after its commit. */
interface LeaseAfterEffects {
  /** Jobs the queue's own limits would still allow now (Infinity: it has none). */
  capacityLeft: number;
  readyLeft: number;
  /** Some group with ready jobs was at its limit. */
  blocked: boolean;
  /** The earliest token this lease waited for or used up. */
  dueAtMs: number;
}

/**
 * True when leases of a queue with these settings obey a flow limit: `max_leased`,
 * `group_max_leased`, a rate limit or a group rate limit. Each leased job says so
 * (LeasedJob.flow_limited), and Workers that lease ahead by default stop: jobs one worker
 * holds take the limit's allowance from workers with free slots, and run in a burst.
 */
export function hasFlowLimit(settings: QueueSettings): boolean {
  return (
    settings.maxLeased > 0 ||
    settings.groupMaxLeased > 0 ||
    settings.rateLimit.leases > 0 ||
    settings.groupRateLimit.leases > 0
  );
}

export class FlowControl {
  private readonly buckets = new Buckets();
  private readonly turns: GroupTurns;
  /** Queues that have had a job with a group (queues.has_groups). */
  private readonly grouped = new Set<string>();
  private readonly timers = new Map<string, { atMs: number; handle: TimerHandle }>();
  /** Leases ended in the batch being written, per queue with throttled waiters. */
  private readonly leaseEnds = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly waiters: ThrottledWaiters,
    private readonly settingsFor: (queue: string) => QueueSettings,
  ) {
    this.turns = new GroupTurns(this.buckets);
  }

  /** Reads which queues have had a job with a group (as the engine opens). */
  *load(view: StoreView): Op<void> {
    for (const queue of yield* view.queues.withGroups()) this.grouped.add(queue);
  }

  /** `queue`'s row says it has had a job with a group (read on a miss, queues/queue-lookup.ts). */
  groupsFound(queue: string): void {
    this.grouped.add(queue);
  }

  /** True when leases of `queue` need nothing but the plain statement (no limits, never had groups). */
  isPlain(queue: string, settings: QueueSettings): boolean {
    return settings.maxLeased === 0 && settings.rateLimit.leases === 0 && !this.grouped.has(queue);
  }

  /**
   * The queue's limits may have changed (a run-time override, a config reload):
   * its throttled reserves try again now under the new ones, instead of waiting
   * for a lease to end or a token that the old limits promised.
   */
  limitsChanged(queue: string): void {
    if (this.waiters.throttledOn(queue) > 0) this.waiters.notify(queue, Number.POSITIVE_INFINITY);
  }

  hasGroups(queue: string): boolean {
    return this.grouped.has(queue);
  }

  /** Called when a job with a group is stored in `queue` (whose row exists): its leases take turns from now on. */
  *groupedJobAdded(tx: StoreTx, queue: string): Op<void> {
    if (this.grouped.has(queue)) return;
    yield* tx.queues.markGrouped(queue);
    // At once, not after the commit: a lease later in this batch must already take turns.
    this.grouped.add(queue);
  }

  /**
   * The queue's row (and its buckets) is deleted in the write in progress (it holds no
   * job): it takes turns again only once a job with a group comes, which marks the new
   * row (the mark was on the deleted one). Done at once, not after the commit, for an
   * enqueue later in this batch; should the write fail, the queue is still empty, so
   * the next job with a group marks it again.
   */
  queueDeleted(queue: string): void {
    this.grouped.delete(queue);
  }

  /** Leases up to `want` jobs of `queue` within its limits (the caller checked it is not plain). */
  *lease(
    tx: StoreTx,
    queue: string,
    settings: QueueSettings,
    want: number,
    params: LeaseParams,
  ): Op<FlowLease> {
    let allowed = want;
    let capacityLeft = Number.POSITIVE_INFINITY;
    if (settings.maxLeased > 0) {
      capacityLeft = Math.max(0, settings.maxLeased - (yield* tx.counts.inState({ queue, state: 'leased' })));
    }
    const rate = settings.rateLimit;
    let bucket: BucketState | null = null;
    if (rate.leases > 0) {
      bucket = yield* this.buckets.read(tx, queue, queueBucketKey, rate, params.nowMs);
      capacityLeft = Math.min(capacityLeft, bucket.tokens);
    }
    allowed = Math.min(allowed, capacityLeft);
    let rows: LeasedRow[] = [];
    let blocked = false;
    let dueAtMs = Number.POSITIVE_INFINITY;
    if (allowed > 0) {
      if (this.grouped.has(queue)) {
        const turns = yield* this.turns.lease(tx, queue, settings, allowed, params);
        ({ rows, blocked, dueAtMs } = turns);
      } else {
        rows = yield* leaseUngrouped(tx, queue, allowed, params, settings.priorityAgingMs);
      }
    }
    capacityLeft -= rows.length;
    if (bucket !== null) {
      yield* this.buckets.spend(tx, queue, queueBucketKey, bucket, rows.length);
      if (bucket.tokens === 0) dueAtMs = Math.min(dueAtMs, this.buckets.nextTokenAtMs(bucket, rate));
    }
    const short = rows.length < want && (allowed < want || blocked);
    const readyLeft =
      short || this.waiters.throttledOn(queue) > 0
        ? (yield* tx.counts.inState({ queue, state: 'ready' })) - rows.length
        : 0;
    const effects: LeaseAfterEffects = { capacityLeft, readyLeft, blocked, dueAtMs };
    tx.afterCommit(() => this.afterLease(queue, settings, effects));
    return { rows, throttled: short && readyLeft > 0 };
  }

  /**
   * Leases of `queue` undone in the write in progress (leases/undone-lease.ts): the tokens
   * they took go back to the queue's rate-limit bucket and to their groups' (`groups`: how
   * many undone leases each group had; a job without a group took none of a group's). Under
   * the queue's limits as they are now: a bucket never holds more than its capacity.
   */
  *tokensBack(
    tx: StoreTx,
    queue: string,
    jobs: number,
    groups: ReadonlyMap<string, number>,
    nowMs: number,
  ): Op<void> {
    const settings = this.settingsFor(queue);
    if (settings.rateLimit.leases > 0) {
      yield* this.buckets.giveBack(tx, queue, queueBucketKey, settings.rateLimit, jobs, nowMs);
    }
    if (settings.groupRateLimit.leases > 0) {
      for (const [group, leases] of groups) {
        yield* this.buckets.giveBack(tx, queue, group, settings.groupRateLimit, leases, nowMs);
      }
    }
  }

  /** Called for every job leaving `leased` (ack, nack, expiry, cancel…), inside its write. */
  leaseEnded(queue: string, jobs: number): void {
    if (this.waiters.throttledOn(queue) > 0)
      this.leaseEnds.set(queue, (this.leaseEnds.get(queue) ?? 0) + jobs);
  }

  /**
   * After each batch's commit: wakes throttled reserves of the queues whose
   * leases ended in it, as many as can now lease. Waking one too many is
   * harmless (it registers again) but costs a lease attempt; one too few would
   * strand it. So: a queue whose limit is max_leased wakes as many as its free
   * slots after the batch (a worker that acked and reserved again in the same
   * batch has already taken its own slot); group limits wake one per ended
   * lease (which group it freed is not worth finding out); a rate limit alone
   * gains nothing from an ended lease (its timer wakes them).
   */
  flushLeaseEnds(): void {
    if (this.leaseEnds.size === 0) return;
    const ended = [...this.leaseEnds];
    this.leaseEnds.clear();
    for (const [queue, jobs] of ended) {
      const settings = this.settingsFor(queue);
      if (settings.maxLeased <= 0) {
        if (settings.groupMaxLeased > 0) this.waiters.notify(queue, jobs);
        continue;
      }
      // How many are free after the batch is read from the store (an asynchronous
      // store answers later; the SQLite store at once, the wake-up a microtask after).
      this.store
        .read((view) => view.counts.inState({ queue, state: 'leased' }))
        .then(
          (leased) => {
            const wake = Math.min(jobs, settings.maxLeased - leased);
            if (wake > 0) this.waiters.notify(queue, wake);
          },
          // The store is closing: the waiters are answered by the shutdown.
          () => undefined,
        );
    }
  }

  *stats(view: StoreView, queue: string): Op<FlowStats> {
    const stats: FlowStats = {
      throttledWaiters: this.waiters.throttledOn(queue),
      readyGroups: 0,
      readyGroupsCapped: false,
      oldestGroupedRunAtMs: null,
    };
    if (!this.grouped.has(queue)) return stats;
    const names = new Set<string>();
    let probes = 0;
    let priority = yield* view.flow.topPriority({ queue, maxPriority: 9, grouped: true });
    outer: while (priority !== undefined) {
      let after = '';
      for (;;) {
        if (probes === readyGroupsCountLimit) {
          stats.readyGroupsCapped = true;
          break outer;
        }
        probes++;
        const next = yield* view.flow.nextGroupAt({ queue, priority, after });
        if (next === undefined) break;
        names.add(next.group_key);
        if (stats.oldestGroupedRunAtMs === null || next.run_at_ms < stats.oldestGroupedRunAtMs) {
          stats.oldestGroupedRunAtMs = next.run_at_ms;
        }
        after = next.group_key;
      }
      priority =
        priority === 0
          ? undefined
          : yield* view.flow.topPriority({ queue, maxPriority: priority - 1, grouped: true });
    }
    stats.readyGroups = names.size;
    return stats;
  }

  /** Forgets rate-limit buckets of `queue` that are full again (maintenance); returns how many rows went. */
  sweep(tx: StoreTx, queue: string, nowMs: number, limit: number): Op<number> {
    const settings = this.settingsFor(queue);
    return this.buckets.sweep(tx, queue, [settings.rateLimit, settings.groupRateLimit], nowMs, limit);
  }

  stop(): void {
    this.stopped = true;
    for (const { handle } of this.timers.values()) handle.cancel();
    this.timers.clear();
  }

  /** After a lease's commit: serve throttled reserves the queue can serve now, and wait for the next token. */
  private afterLease(queue: string, settings: QueueSettings, effects: LeaseAfterEffects): void {
    if (this.waiters.throttledOn(queue) === 0) return;
    const { capacityLeft, readyLeft, blocked, dueAtMs } = effects;
    // Only the queue's own limits say how many more may go now; a group limit is lifted by its events.
    if (Number.isFinite(capacityLeft) && capacityLeft > 0 && readyLeft > 0 && !blocked) {
      this.waiters.notify(queue, Math.min(capacityLeft, readyLeft));
    }
    if (Number.isFinite(dueAtMs)) this.wakeAt(queue, dueAtMs);
    else if (settings.groupRateLimit.leases > 0)
      this.wakeAt(queue, this.clock.nowMs() + groupTokenMs(settings));
  }

  /** Makes sure a throttled reserve of `queue` is woken at `atMs`. */
  private wakeAt(queue: string, atMs: number): void {
    if (this.stopped) return;
    const armed = this.timers.get(queue);
    if (armed !== undefined && armed.atMs <= atMs) return;
    armed?.handle.cancel();
    const handle = this.clock.setTimer(atMs - this.clock.nowMs(), () => this.tokenDue(queue));
    this.timers.set(queue, { atMs, handle });
  }

  private tokenDue(queue: string): void {
    this.timers.delete(queue);
    if (this.stopped || this.waiters.throttledOn(queue) === 0) return;
    // One reserve goes first; what its lease leaves decides whether more are woken or the timer is set again.
    this.waiters.notify(queue, 1);
    const settings = this.settingsFor(queue);
    if (this.waiters.throttledOn(queue) > 0 && settings.groupRateLimit.leases > 0) {
      // The next group token is not known without a walk; look again after one group interval.
      this.wakeAt(queue, this.clock.nowMs() + groupTokenMs(settings));
    }
  }
}

/** The interval between two tokens of one group's bucket. */
function groupTokenMs(settings: QueueSettings): number {
  const rate = settings.groupRateLimit;
  return Math.max(1, Math.ceil(rate.periodMs / rate.leases));
}
