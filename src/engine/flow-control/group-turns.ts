/**
 * Fair turns across groups: how a queue with grouped jobs chooses what to lease.
 *
 * Within one priority, the members of a queue's ring are the groups with a
 * ready job at that priority, in name order, preceded by one member standing
 * for all ready jobs without a group. A cursor per (queue, priority) remembers
 * the member served last; a lease walks the ring from the one after it, one job
 * per member per turn, so a group with 100,000 ready jobs and a group with 10
 * alternate. Within a member, jobs go in the queue's usual order (due time,
 * then enqueue order). Higher priorities are served first, as always.
 *
 * The ring is not stored anywhere: "the next group after G with ready work at
 * priority P" is one seek in jobs_group_ready, so a step costs O(log jobs)
 * whatever the number of groups, and nothing has to be kept up to date as jobs
 * come and go. A member at its limit (group_max_leased, or an empty group
 * bucket) is skipped for this turn. The cursor moves only when a member is
 * served, so when nothing can be served the next lease starts from the same
 * place: the group whose token comes first is first in line. The walk looks at
 * no more than `maxProbesPerLease` members per lease, so a ring full of blocked
 * groups costs a bounded amount per lease (the reserve then waits to be woken).
 *
 * A reserve that wants more jobs than the first turn gave (more than there
 * are members to serve) shares the rest evenly among the members that took a
 * job and have more to give, instead of walking the ring again.
 */

import type { LeaseParams } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { LeasedRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { QueueSettings } from '../settings.ts';
import type { Buckets } from './buckets.ts';
import type { BucketState } from './token-bucket.ts';

/** Members of the ring a lease may look at; each look is one or two index seeks. */
export const maxProbesPerLease = 1024;

/** A ring member: a group's name, or null for the jobs without a group. */
type Member = string | null;

export interface TurnsResult {
  rows: LeasedRow[];
  /** A member with ready work was skipped for a limit (or the walk hit its bound) and the reserve is short. */
  blocked: boolean;
  /** The earliest time a skipped group's bucket gets a token (Infinity if none was skipped for its rate). */
  dueAtMs: number;
}

interface Allowance {
  jobs: number;
  bucket: BucketState | null;
  dueAtMs: number;
}

/** A member that took a job in the first turn and may take more. */
interface Open {
  member: Member;
  left: number;
  bucket: BucketState | null;
}

const byDueThenSeq = (a: LeasedRow, b: LeasedRow) => a.run_at_ms - b.run_at_ms || a.seq - b.seq;

export class GroupTurns {
  /** Per queue, per priority (index 0–9): the member served last; undefined = start of the ring. */
  private readonly cursors = new Map<string, (Member | undefined)[]>();

  constructor(private readonly buckets: Buckets) {}

  /** Leases up to `want` jobs of `queue` taking turns across its groups. */
  *lease(
    tx: StoreTx,
    queue: string,
    settings: QueueSettings,
    want: number,
    params: LeaseParams,
  ): Op<TurnsResult> {
    const result: TurnsResult = { rows: [], blocked: false, dueAtMs: Number.POSITIVE_INFINITY };
    let probesLeft = maxProbesPerLease;
    let maxPriority = 9;
    while (result.rows.length < want && maxPriority >= 0) {
      const priority = yield* this.topPriority(tx, queue, maxPriority);
      if (priority === undefined) break;
      const open: Open[] = [];
      const walked = yield* this.firstTurn(
        tx,
        queue,
        settings,
        priority,
        want,
        params,
        result,
        open,
        probesLeft,
      );
      probesLeft -= walked.probes;
      yield* this.shareOut(tx, queue, settings, priority, want, params, result, open);
      if (!walked.complete) {
        // The walk stopped at its bound with members unvisited: lower priorities wait their turn.
        if (result.rows.length < want) result.blocked = true;
        break;
      }
      maxPriority = priority - 1;
    }
    return result;
  }

  /** Forgets a queue's cursors (its groups are gone). */
  forget(queue: string): void {
    this.cursors.delete(queue);
  }

  /**
   * One turn around the ring at `priority`, from the member after the cursor:
   * one job from each member that may take one. Returns the members looked at,
   * and whether the whole ring was seen (false: the bound stopped it).
   */
  private *firstTurn(
    tx: StoreTx,
    queue: string,
    settings: QueueSettings,
    priority: number,
    want: number,
    params: LeaseParams,
    result: TurnsResult,
    open: Open[],
    maxProbes: number,
  ): Op<{ probes: number; complete: boolean }> {
    const seen = new Set<Member>();
    let member = yield* this.nextMember(tx, queue, priority, this.cursorOf(queue)[priority]);
    let probes = 0;
    while (member !== undefined && result.rows.length < want) {
      if (seen.has(member)) return { probes, complete: true };
      if (probes === maxProbes) return { probes, complete: false };
      seen.add(member);
      probes++;
      const allowance = yield* this.allowance(tx, queue, member, settings, params.nowMs);
      if (allowance.jobs > 0) {
        const got = yield* this.take(tx, queue, priority, member, 1, params);
        if (got.length > 0) {
          result.rows.push(...got);
          yield* this.spend(tx, queue, member, allowance.bucket, settings, got.length);
          this.cursorOf(queue)[priority] = member;
          if (allowance.jobs > 1) open.push({ member, left: allowance.jobs - 1, bucket: allowance.bucket });
        }
      } else {
        result.blocked = true;
        result.dueAtMs = Math.min(result.dueAtMs, allowance.dueAtMs);
      }
      member = yield* this.nextMember(tx, queue, priority, member);
    }
    return { probes, complete: true };
  }

  /** Spreads what the reserve still wants evenly over the members that may give more. */
  private *shareOut(
    tx: StoreTx,
    queue: string,
    settings: QueueSettings,
    priority: number,
    want: number,
    params: LeaseParams,
    result: TurnsResult,
    open: Open[],
  ): Op<void> {
    let members = open;
    while (result.rows.length < want && members.length > 0) {
      const share = Math.ceil((want - result.rows.length) / members.length);
      const still: Open[] = [];
      for (const m of members) {
        const n = Math.min(share, m.left, want - result.rows.length);
        if (n <= 0) break;
        const got = yield* this.take(tx, queue, priority, m.member, n, params);
        result.rows.push(...got);
        yield* this.spend(tx, queue, m.member, m.bucket, settings, got.length);
        m.left -= got.length;
        if (got.length === n && m.left > 0) still.push(m);
      }
      members = still;
    }
  }

  /** How many jobs `member` may take now, and when it may take one if none. */
  private *allowance(
    tx: StoreTx,
    queue: string,
    member: Member,
    settings: QueueSettings,
    nowMs: number,
  ): Op<Allowance> {
    let jobs = Number.POSITIVE_INFINITY;
    if (member === null) return { jobs, bucket: null, dueAtMs: Number.POSITIVE_INFINITY };
    if (settings.groupMaxLeased > 0) {
      jobs = settings.groupMaxLeased - (yield* tx.flow.leasedInGroup({ queue, groupKey: member }));
      // A group at its concurrency limit waits for one of its leases to end, not for time.
      if (jobs <= 0) return { jobs: 0, bucket: null, dueAtMs: Number.POSITIVE_INFINITY };
    }
    const rate = settings.groupRateLimit;
    if (rate.leases === 0) return { jobs, bucket: null, dueAtMs: Number.POSITIVE_INFINITY };
    const bucket = yield* this.buckets.read(tx, queue, member, rate, nowMs);
    jobs = Math.min(jobs, bucket.tokens);
    const dueAtMs = jobs > 0 ? Number.POSITIVE_INFINITY : this.buckets.nextTokenAtMs(bucket, rate);
    return { jobs, bucket, dueAtMs };
  }

  private *spend(
    tx: StoreTx,
    queue: string,
    member: Member,
    bucket: BucketState | null,
    settings: QueueSettings,
    jobs: number,
  ): Op<void> {
    if (member !== null && bucket !== null && settings.groupRateLimit.leases > 0) {
      yield* this.buckets.spend(tx, queue, member, bucket, jobs);
    }
  }

  private *take(
    tx: StoreTx,
    queue: string,
    priority: number,
    member: Member,
    limit: number,
    params: LeaseParams,
  ): Op<LeasedRow[]> {
    const rows =
      member === null
        ? yield* tx.leases.leaseUngroupedAt({ ...params, queue, priority, limit })
        : yield* tx.leases.leaseGroupAt({ ...params, queue, priority, groupKey: member, limit });
    // RETURNING gives no order: a member's jobs go in the queue's order (due time, enqueue order).
    if (rows.length > 1) rows.sort(byDueThenSeq);
    return rows;
  }

  /** The highest priority ≤ `maxPriority` with any ready job (grouped or not). */
  private *topPriority(tx: StoreTx, queue: string, maxPriority: number): Op<number | undefined> {
    const ungrouped = yield* tx.flow.topPriority({ queue, maxPriority, grouped: false });
    const grouped = yield* tx.flow.topPriority({ queue, maxPriority, grouped: true });
    if (ungrouped === undefined) return grouped;
    return grouped === undefined ? ungrouped : Math.max(ungrouped, grouped);
  }

  /**
   * The member after `after` in the ring at `priority` (undefined after: the
   * first), wrapping around; undefined when no member has ready work there.
   */
  private *nextMember(
    tx: StoreTx,
    queue: string,
    priority: number,
    after: Member | undefined,
  ): Op<Member | undefined> {
    if (after !== undefined) {
      const next = yield* tx.flow.nextGroupAt({ queue, priority, after: after ?? '' });
      if (next !== undefined) return next.group_key;
    }
    // Wrapped (or starting): the jobs without a group come first, then the first group.
    if (yield* tx.flow.hasUngroupedAt({ queue, priority })) return null;
    return (yield* tx.flow.nextGroupAt({ queue, priority, after: '' }))?.group_key;
  }

  private cursorOf(queue: string): (Member | undefined)[] {
    let cursor = this.cursors.get(queue);
    if (cursor === undefined) {
      cursor = new Array<Member | undefined>(10).fill(undefined);
      this.cursors.set(queue, cursor);
    }
    return cursor;
  }
}
