/**
 * The lease of ready jobs without a group, in the queue's order: strict priority (one
 * `UPDATE … RETURNING` over jobs_ready), or — with `priority_aging_ms` — by effective
 * priority, where a job counts one level higher for every `priority_aging_ms` it has been
 * due (docs/configuration.md, "Priority aging"):
 *
 *   effective = priority + floor((now − run_at_ms) / priority_aging_ms)
 *
 * Within one priority the oldest due job has the highest effective priority, so the best
 * `k` jobs of the queue are the first few of each priority's own order. The aged lease
 * reads at most `k` index entries per priority (`flow.readyHeads`: 10 bounded ranges of
 * jobs_ready, never a scan), picks the best `k` by effective priority (ties: the one due
 * first, then enqueue order), and leases each priority's share with `leaseUngroupedAt`,
 * which takes exactly those jobs (the oldest of that priority). The effective priority is
 * not capped at 9, and a tie goes to the job due first: a job of priority p goes before
 * every job due (9 − p) × priority_aging_ms or more after it, so none waits for ever
 * behind a flood of higher priorities.
 */

import type { LeaseParams } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { LeasedRow, ReadyHeadRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';

/** The queue's usual order: priority (high first), due time, enqueue order. */
function queueOrder(a: LeasedRow, b: LeasedRow): number {
  return b.priority - a.priority || a.run_at_ms - b.run_at_ms || a.seq - b.seq;
}

/** Leases up to `limit` ready jobs without a group of `queue`, best first. */
export function* leaseUngrouped(
  tx: StoreTx,
  queue: string,
  limit: number,
  params: LeaseParams,
  priorityAgingMs: number,
): Op<LeasedRow[]> {
  if (priorityAgingMs <= 0) {
    const rows = yield* tx.leases.leaseReady({ ...params, queue, limit });
    // RETURNING gives no order: restore the queue's order (priority, due time, enqueue order).
    rows.sort(queueOrder);
    return rows;
  }
  const heads = yield* tx.flow.readyHeads({ queue, limit });
  const shares = agedShares(heads, limit, params.nowMs, priorityAgingMs);
  const rows: LeasedRow[] = [];
  for (const [priority, share] of shares) {
    rows.push(...(yield* tx.leases.leaseUngroupedAt({ ...params, queue, priority, limit: share })));
  }
  rows.sort(agedOrder(params.nowMs, priorityAgingMs));
  return rows;
}

/** The effective priority of a job of `priority` due at `runAtMs`. */
function effectivePriority(priority: number, runAtMs: number, nowMs: number, agingMs: number): number {
  return priority + Math.floor(Math.max(0, nowMs - runAtMs) / agingMs);
}

/** Effective priority (high first), due time, enqueue order. */
function agedOrder(nowMs: number, agingMs: number) {
  return (a: ReadyHeadRow, b: ReadyHeadRow): number =>
    effectivePriority(b.priority, b.run_at_ms, nowMs, agingMs) -
      effectivePriority(a.priority, a.run_at_ms, nowMs, agingMs) ||
    a.run_at_ms - b.run_at_ms ||
    a.seq - b.seq;
}

/** How many of the best `limit` heads each priority gives (priorities in no particular order). */
function agedShares(
  heads: readonly ReadyHeadRow[],
  limit: number,
  nowMs: number,
  agingMs: number,
): Map<number, number> {
  const best = [...heads].sort(agedOrder(nowMs, agingMs)).slice(0, limit);
  const shares = new Map<number, number>();
  for (const head of best) shares.set(head.priority, (shares.get(head.priority) ?? 0) + 1);
  return shares;
}
