/**
 * Checks a bulk action's filter (which jobs of which queue) at the boundary:
 * a queue that exists, an optional job type, and states the
 * action applies to. The checked filter is what the statements take and what
 * the audit entry records.
 */

import type { EngineContext } from './context.ts';
import type { JobFilter } from './control-types.ts';
import { checkName } from './enqueue-validation.ts';
import { SeppError } from './errors.ts';
import { checkQueueExists, checkQueueName } from './queue-admin.ts';
import type { JobState } from './types.ts';

export interface ValidFilter<S extends JobState> {
  queue: string;
  /** null: any type. */
  type: string | null;
  /** Without repeats, in the order of the action's states. */
  states: readonly S[];
}

/** `allowed` are the states the action applies to; `what` names the action for messages ("cancelled"). */
export function checkFilter<S extends JobState>(
  ctx: EngineContext,
  filter: JobFilter,
  allowed: readonly S[],
  what: string,
): ValidFilter<S> {
  checkQueueName(ctx, filter.queue);
  // A queue nobody has used is most likely a typo: NOT_FOUND, as PurgeQueue answers, not "0 changed".
  checkQueueExists(ctx, filter.queue);
  let type: string | null = null;
  if (filter.type !== undefined && filter.type !== '') {
    const problem = checkName('type', filter.type, ctx.limits);
    if (problem) throw new SeppError('invalid_argument', problem.message);
    type = filter.type;
  }
  const given = filter.states ?? [];
  for (const state of given) {
    if (!(allowed as readonly JobState[]).includes(state)) {
      throw new SeppError(
        'invalid_argument',
        `states: ${String(state)} jobs cannot be ${what}; give any of ${allowed.join(', ')} (none means all of them)`,
      );
    }
  }
  const states = given.length === 0 ? allowed : allowed.filter((s) => given.includes(s));
  return { queue: filter.queue, type, states };
}

/** The filter as an audit entry records it. */
export function filterDetails(filter: ValidFilter<JobState>): Record<string, unknown> {
  return {
    queue: filter.queue,
    ...(filter.type === null ? {} : { type: filter.type }),
    states: filter.states,
  };
}
