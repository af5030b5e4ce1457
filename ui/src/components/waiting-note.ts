/**
 * What the delete of a dead letter does to the jobs waiting on it (docs/workflows.md, "When a
 * dependency is deleted"): they are cancelled with it. Both delete dialogs of one dead letter
 * (its row on Dead letters, its job page) say how many, as the server counts them.
 */
import { seg } from '../api.ts';
import { fmtNum } from '../format.ts';
import { useApi } from '../hooks.ts';

/** The sentence for the delete of dead letter `jobId` of `queue` (null: no dialog open); '' for none waiting. */
export function useWaitingNote(queue: string, jobId: string | null): string {
  const counted = useApi<{ waiting: number; more: boolean }>(
    jobId === null ? null : `/api/v1/queues/${seg(queue)}/dead-letters/${seg(jobId)}/waiting`,
  ).data;
  if (counted === null || counted.waiting === 0) return '';
  const one = counted.waiting === 1 && !counted.more;
  const jobs = `${counted.more ? 'more than ' : ''}${fmtNum(counted.waiting)} job${one ? '' : 's'}`;
  return `${jobs[0]!.toUpperCase()}${jobs.slice(1)} ${one ? 'waits' : 'wait'} on it (onDependencyFailure: wait): ${one ? 'it is' : 'they are'} cancelled with it.`;
}
