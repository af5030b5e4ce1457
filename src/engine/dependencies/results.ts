/**
 * Results passed on (issue 33): a leased job that had dependencies gets what each of
 * them ended with — its id, its name in the flow, its state and its result — read in
 * the lease's unit through its edges. Together at most
 * limits.max_dependency_results_bytes of results: above it, every result is left out
 * (`resultOmitted`) and the worker fetches the ones it needs with GetJob.
 */
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineLimits } from '../settings.ts';
import { type DependencyResult, type JobState, jobStates } from '../types.ts';

const isJobState = (state: string | null): state is JobState =>
  state !== null && (jobStates as readonly string[]).includes(state);

export function* dependencyResults(
  tx: StoreTx,
  job: { id: string; seq: number },
  limits: Pick<EngineLimits, 'maxDependencyResultsBytes'>,
): Op<DependencyResult[]> {
  if (tx.dependencies === undefined) return [];
  const edges = yield* tx.dependencies.of(job.id, job.seq);
  if (edges.length === 0) return [];
  let bytes = 0;
  for (const edge of edges) bytes += edge.result?.byteLength ?? 0;
  const omitted = bytes > limits.maxDependencyResultsBytes;
  return edges.map((edge) => ({
    jobId: edge.parent_id,
    name: edge.name,
    state: isJobState(edge.parent_state) ? edge.parent_state : null,
    result: omitted ? null : edge.result,
    resultContentType: omitted ? null : edge.result_content_type,
    resultOmitted: omitted && edge.result !== null,
  }));
}
