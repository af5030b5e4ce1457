/**
 * Checks a bulk action's filter (which jobs of which queue) at the boundary:
 * a queue that exists, an optional job type and group, and states the
 * action applies to. The checked filter is what the statements take and what
 * the audit entry records.
 */

import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import type { JobFilter } from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { checkQueueExists, checkQueueName } from '../queues/index.ts';
import type { JobState } from '../types.ts';

export interface ValidFilter<S extends JobState> {
  queue: string;
  /** null: any type. */
  type: string | null;
  /** null: any group (jobs with a group or without). */
  group: string | null;
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
  const type = optionalName('type', filter.type, ctx);
  const group = optionalName('group', filter.group, ctx);
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
  return { queue: filter.queue, type, group, states };
}

/** The filter as an audit entry records it. */
export function filterDetails(filter: ValidFilter<JobState>): Record<string, unknown> {
  return {
    queue: filter.queue,
    ...(filter.type === null ? {} : { type: filter.type }),
    ...(filter.group === null ? {} : { group: filter.group }),
    states: filter.states,
  };
}

/** The filter as the bulk statements take it (control-statements.ts). */
export function filterParams(filter: ValidFilter<JobState>): {
  queue: string;
  type: string | null;
  group: string | null;
} {
  return { queue: filter.queue, type: filter.type, group: filter.group };
}

/** An optional name of a filter: absent or empty means any. */
function optionalName(what: 'type' | 'group', name: string | undefined, ctx: EngineContext): string | null {
  if (name === undefined || name === '') return null;
  const problem = checkName(what, name, ctx.limits);
  if (problem) throw new SeppError('invalid_argument', problem.message);
  return name;
}
