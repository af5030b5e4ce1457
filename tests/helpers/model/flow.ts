/**
 * The model test's flow control (docs/flow-control.md), said plainly over an
 * in-memory list of jobs: which ready jobs a reserve may lease from one queue
 * under max_leased and group_max_leased, and in which order when the queue
 * has groups (turns round a ring of members per priority, then an even share).
 */

export interface FlowJob {
  id: string;
  queue: string;
  state: string;
  priority: number;
  runAtMs: number;
  /** Enqueue order. */
  order: number;
  group: string | null;
}

export interface FlowLimits {
  maxLeased: number;
  groupMaxLeased: number;
}

/** A ring member: a group, or null for the jobs without one. */
type Member = string | null;

/** Per queue, per priority: the member served last (undefined: none yet, start of the ring). */
export type Cursors = Map<string, (Member | undefined)[]>;

const byQueueOrder = (a: FlowJob, b: FlowJob) =>
  b.priority - a.priority || a.runAtMs - b.runAtMs || a.order - b.order;

/** Ring order: the jobs without a group first, then groups by name. */
const memberOrder = (a: Member, b: Member) =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1;

/**
 * The jobs a reserve of `want` leases from `queue`, in the order handed out.
 * Pure: the caller marks them leased. `grouped`: the queue has had a job with a
 * group (it then takes turns even when no ready job has one now).
 */
export function pickForLease(
  jobs: readonly FlowJob[],
  queue: string,
  want: number,
  limits: FlowLimits,
  grouped: boolean,
  cursors: Cursors,
): FlowJob[] {
  const mine = jobs.filter((j) => j.queue === queue);
  let allowed = want;
  if (limits.maxLeased > 0) {
    allowed = Math.min(allowed, limits.maxLeased - mine.filter((j) => j.state === 'leased').length);
  }
  const ready = mine.filter((j) => j.state === 'ready').sort(byQueueOrder);
  if (allowed <= 0) return [];
  if (!grouped) return ready.slice(0, allowed);

  let cursor = cursors.get(queue);
  if (cursor === undefined) {
    cursor = new Array<Member | undefined>(10).fill(undefined);
    cursors.set(queue, cursor);
  }
  const picked: FlowJob[] = [];
  const taken = new Set<string>();
  const leasedIn = (group: string) =>
    mine.filter((j) => j.group === group && j.state === 'leased').length +
    picked.filter((j) => j.group === group).length;
  const mayTake = (member: Member) =>
    member === null || limits.groupMaxLeased === 0
      ? Number.POSITIVE_INFINITY
      : limits.groupMaxLeased - leasedIn(member);
  const take = (member: Member, priority: number, n: number) => {
    const got = ready
      .filter((j) => j.priority === priority && j.group === member && !taken.has(j.id))
      .slice(0, n);
    for (const j of got) {
      taken.add(j.id);
      picked.push(j);
    }
    return got.length;
  };

  for (let priority = 9; priority >= 0 && picked.length < allowed; priority--) {
    const members = [...new Set(ready.filter((j) => j.priority === priority).map((j) => j.group))].sort(
      memberOrder,
    );
    if (members.length === 0) continue;
    // The first turn starts after the member served last, wrapping round.
    const last = cursor[priority];
    let start = last === undefined ? 0 : members.findIndex((m) => memberOrder(m, last) > 0);
    if (start < 0) start = 0;
    const open: { member: Member; left: number }[] = [];
    for (let k = 0; k < members.length && picked.length < allowed; k++) {
      const member = members[(start + k) % members.length]!;
      const may = mayTake(member);
      if (may <= 0) continue;
      if (take(member, priority, 1) === 1) {
        cursor[priority] = member;
        if (may > 1) open.push({ member, left: may - 1 });
      }
    }
    // Then what the reserve still wants, shared evenly among the members with more to give.
    let sharing = open;
    while (picked.length < allowed && sharing.length > 0) {
      const share = Math.ceil((allowed - picked.length) / sharing.length);
      const still: typeof open = [];
      for (const m of sharing) {
        const n = Math.min(share, m.left, allowed - picked.length);
        if (n <= 0) break;
        const got = take(m.member, priority, n);
        m.left -= got;
        if (got === n && m.left > 0) still.push(m);
      }
      sharing = still;
    }
  }
  return picked;
}

/** Whether a reserve of `queue` would lease at least one job now. */
export function wouldLeaseAny(
  jobs: readonly FlowJob[],
  queue: string,
  limits: FlowLimits,
  grouped: boolean,
): boolean {
  return pickForLease(jobs, queue, 1, limits, grouped, new Map()).length > 0;
}

/** Groups with at least one ready job in `queue`. */
export function readyGroups(jobs: readonly FlowJob[], queue: string): number {
  return new Set(
    jobs.filter((j) => j.queue === queue && j.state === 'ready' && j.group !== null).map((j) => j.group),
  ).size;
}
