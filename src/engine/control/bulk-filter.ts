/**
 * Checks a bulk action's filter at the boundary and turns it into a plan:
 * the queues and states whose index ranges the operation reads, the type (one
 * range) or type prefix (a loose index scan over types), and the residual
 * filters checked on each candidate row. The checked filter is what the audit
 * entry and the operation's progress record.
 */

import type { BulkResidual } from '../../store/job-control.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { type BulkAction, bulkActionStates, type JobFilter } from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { checkErrorGroup } from '../jobs/index.ts';
import { checkQueueExists, checkQueueName } from '../queues/index.ts';
import { scheduleFilter } from '../schedules/index.ts';
import { type DeadReason, type JobState, jobStates } from '../types.ts';

const deadReasons: readonly DeadReason[] = [
  'attempts_exhausted',
  'lease_expired',
  'dead_lettered',
  'expired',
];
/** Longest error text or metadata value a filter may give. */
const maxFilterText = 1024;

export interface BulkPlan {
  /** The queues to read, by name; empty when the filter named none and none exists. */
  queues: readonly string[];
  /** The states to read, in the action's order. */
  states: readonly JobState[];
  /** One type (one index range per queue and state), or null. */
  type: string | null;
  /** A type prefix ('' for any type) when `type` is null. */
  typePrefix: string;
  residual: BulkResidual;
  /** The filter as the audit entry records it. */
  details: Record<string, unknown>;
}

/**
 * `then(found)`, once it is known whether `queue` exists: at once when the registry answers (or
 * no queue is named: found), so the call adds no turn and its first write joins the batch of
 * this turn; after the store's answer when the registry misses it (a queue another server just
 * made, queues/queue-lookup.ts), so that a check that it exists (planBulk's, the dead letters')
 * answers as that server would.
 */
export function afterQueueLookup<T>(
  ctx: EngineContext,
  queue: string | undefined,
  then: (found: boolean) => Promise<T>,
): Promise<T> {
  const found = queue === undefined || queue === '' ? true : ctx.queueExistsNow(queue);
  return typeof found === 'boolean' ? then(found) : found.then(then);
}

/** `what` names the action for messages ("cancelled"); `list` plans a count of the jobs list (every state). */
export function planBulk(
  ctx: EngineContext,
  action: BulkAction | 'list',
  filter: JobFilter,
  what: string,
): BulkPlan {
  const allowed = action === 'list' ? jobStates : bulkActionStates[action];
  const queue = filter.queue === undefined || filter.queue === '' ? null : filter.queue;
  if (queue !== null) {
    checkQueueName(ctx, queue);
    // A queue nobody has used is most likely a typo: NOT_FOUND, as PurgeQueue answers, not "0 changed".
    checkQueueExists(ctx, queue);
  }
  const type = optionalName('type', filter.type, ctx);
  const prefix = optionalName('type', filter.typePrefix, ctx);
  if (type !== null && prefix !== null) {
    throw new SeppError('invalid_argument', 'give a type or a type prefix, not both');
  }
  const group = optionalName('group', filter.group, ctx);
  const given = filter.states ?? [];
  for (const state of given) {
    if (!allowed.includes(state)) {
      throw new SeppError(
        'invalid_argument',
        `states: ${String(state)} jobs cannot be ${what}; give any of ${allowed.join(', ')} (none means all of them)`,
      );
    }
  }
  let states = given.length === 0 ? allowed : allowed.filter((s) => given.includes(s));
  const deadReason = filter.deadReason ?? null;
  if (deadReason !== null) {
    if (!deadReasons.includes(deadReason)) {
      throw new SeppError('invalid_argument', `dead_reason must be one of ${deadReasons.join(', ')}`);
    }
    if (!states.includes('dead')) {
      throw new SeppError(
        'invalid_argument',
        `dead_reason: only dead letters have one, and ${what} applies to none`,
      );
    }
    states = ['dead'];
  }
  const retriesOnly = filter.retriesOnly === true;
  if (retriesOnly) {
    if (!states.includes('scheduled')) {
      throw new SeppError(
        'invalid_argument',
        `retries_only: retries are scheduled jobs, and ${what} applies to none`,
      );
    }
    states = ['scheduled'];
  }
  const errorText = optionalText('error_text', filter.errorText);
  const errorGroup = checkErrorGroup(filter.errorGroup);
  const metadata = filter.metadata ?? null;
  if (metadata !== null) {
    // The key becomes a JSON path in SQLite, where a quote, a backslash or a control character is an error.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
    if (metadata.key === '' || /["\\\u0000-\u001f\u007f]/.test(metadata.key) || metadata.key.length > 256) {
      throw new SeppError(
        'invalid_argument',
        'metadata key must be 1 to 256 printable characters without " or \\',
      );
    }
    if (metadata.value.length > maxFilterText) {
      throw new SeppError('invalid_argument', `metadata value: at most ${maxFilterText} characters`);
    }
  }
  const enqueuedFromMs = optionalTime('enqueued_from_ms', filter.enqueuedFromMs);
  const enqueuedBeforeMs = optionalTime('enqueued_before_ms', filter.enqueuedBeforeMs);
  const keyShapes = scheduleFilter(filter.schedule, ctx.limits);
  const details: Record<string, unknown> = {
    queue: queue ?? '*',
    states,
    ...(type === null ? {} : { type }),
    ...(prefix === null ? {} : { typePrefix: prefix }),
    ...(group === null ? {} : { group }),
    ...(errorText === null ? {} : { errorText }),
    ...(errorGroup === null ? {} : { errorGroup }),
    ...(metadata === null ? {} : { metadata }),
    ...(enqueuedFromMs === null ? {} : { enqueuedFromMs }),
    ...(enqueuedBeforeMs === null ? {} : { enqueuedBeforeMs }),
    ...(deadReason === null ? {} : { deadReason }),
    ...(retriesOnly ? { retriesOnly } : {}),
    ...(keyShapes === null ? {} : { schedule: filter.schedule }),
  };
  return {
    queues: queue === null ? ctx.queues.names() : [queue],
    states,
    type,
    typePrefix: prefix ?? '',
    residual: {
      errorText,
      metadata,
      groupKey: group,
      enqueuedFromMs,
      enqueuedBeforeMs,
      deadReason,
      retriesOnly,
      errorGroup,
      keyShapes,
    },
    details,
  };
}

/** Whether some filter needs each candidate row read (the counters and index ranges alone do not answer it). */
export function hasResidual(plan: BulkPlan): boolean {
  const r = plan.residual;
  return (
    r.errorText !== null ||
    r.metadata !== null ||
    r.groupKey !== null ||
    r.enqueuedFromMs !== null ||
    r.enqueuedBeforeMs !== null ||
    r.deadReason !== null ||
    r.retriesOnly ||
    r.errorGroup !== null ||
    r.keyShapes !== null
  );
}

/** An optional name of a filter: absent or empty means any. */
function optionalName(what: 'type' | 'group', name: string | undefined, ctx: EngineContext): string | null {
  if (name === undefined || name === '') return null;
  const problem = checkName(what, name, ctx.limits);
  if (problem) throw new SeppError('invalid_argument', problem.message);
  return name;
}

function optionalText(field: string, text: string | undefined): string | null {
  if (text === undefined || text === '') return null;
  if (text.length > maxFilterText) {
    throw new SeppError('invalid_argument', `${field}: at most ${maxFilterText} characters`);
  }
  return text;
}

function optionalTime(field: string, ms: number | undefined): number | null {
  if (ms === undefined || ms === 0) return null;
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new SeppError('invalid_argument', `${field} is ${ms}; it must be ms since the epoch`);
  }
  return ms;
}
