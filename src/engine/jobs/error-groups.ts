/**
 * "Top errors" (issue 36, item 2): a queue's dead letters grouped by their last
 * error — the class the worker named ('' when none) and the first line of the
 * message — the most jobs first, with when the group's jobs first and last
 * failed. It reads the newest `limits`-bounded slice of the dead letters (index
 * jobs_dead, newest failure first), so its cost does not grow with the queue;
 * `complete` says whether that slice held them all. A group is also a bulk
 * filter (JobFilter.errorGroup): requeue or delete its jobs as one act.
 */

import type { ErrorGroupKey } from '../../store/job-control.ts';
import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { TopErrors } from '../admin-types.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';

/** Longest error class a nack may name, in characters. */
export const maxErrorClassChars = 256;
/** Dead letters read at most per answer (the newest failures). */
export const errorGroupScan = 50_000;
/** Groups answered at most. */
export const maxErrorGroups = 100;
/** Longest first line a group has (the stores cut it there). */
export const maxFirstLineChars = 200;

export function* topErrors(
  ctx: EngineContext,
  view: StoreView,
  query: { queue: string; limit?: number },
): Op<TopErrors> {
  const problem = checkName('queue', query.queue, ctx.limits);
  if (problem) throw new SeppError('invalid_argument', problem.message);
  if (!(yield* ctx.queueExists(view, query.queue))) {
    throw new SeppError('not_found', `queue ${query.queue} does not exist: no job was ever enqueued to it`);
  }
  const limit = query.limit ?? 20;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxErrorGroups) {
    throw new SeppError('invalid_argument', `limit is ${limit}; give 1 to ${maxErrorGroups} groups`);
  }
  const deadTotal = yield* view.counts.inState({ queue: query.queue, state: 'dead' });
  const found =
    deadTotal === 0
      ? { groups: [], group_count: 0, scanned: 0 }
      : yield* view.deadLetters.errorGroups({ queue: query.queue, scan: errorGroupScan, limit });
  return {
    queue: query.queue,
    groups: found.groups.map((g) => ({
      errorClass: g.error_class,
      firstLine: g.first_line,
      jobs: g.jobs,
      firstFailedAtMs: g.first_failed_at_ms,
      lastFailedAtMs: g.last_failed_at_ms,
    })),
    groupCount: found.group_count,
    scanned: found.scanned,
    deadTotal,
    complete: found.scanned >= deadTotal,
  };
}

/** Checks a group given as a filter (JobFilter.errorGroup); null when none is given. */
export function checkErrorGroup(group: ErrorGroupKey | undefined): ErrorGroupKey | null {
  if (group === undefined) return null;
  if (group.errorClass.length > maxErrorClassChars) {
    throw new SeppError(
      'invalid_argument',
      `error_group.error_class: at most ${maxErrorClassChars} characters`,
    );
  }
  if (group.firstLine.length > maxFirstLineChars || group.firstLine.includes('\n')) {
    throw new SeppError(
      'invalid_argument',
      `error_group.first_line: one line of at most ${maxFirstLineChars} characters (a group's first_line as top errors answers it)`,
    );
  }
  return group;
}
