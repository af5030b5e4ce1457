/**
 * Results passed on (issue 33): a leased job that had dependencies gets what each of
 * them ended with — its id, its name in the flow, its state and its result — read in
 * the lease's unit through its edges. Together at most
 * limits.max_dependency_results_bytes of results: above it, every result is left out
 * (`resultOmitted`) and the worker fetches the ones it needs with GetJob.
 *
 * A lease answered to an API key scoped to queues passes on a dependency of a queue the key may
 * not see as a swept one is passed on — its id and name, no state, no result — and does not
 * count its result against the bound: such a key tells it neither from a swept job of its own
 * queues nor learns its size (GetJob, which lists only the links to its queues, hides both).
 */
import type { DependencyEdgeRow } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineLimits } from '../settings.ts';
import { type DependencyResult, type JobState, jobStates } from '../types.ts';

const isJobState = (state: string | null): state is JobState =>
  state !== null && (jobStates as readonly string[]).includes(state);

type Limits = Pick<EngineLimits, 'maxDependencyResultsBytes'>;
/** The queues whose dependencies' results a lease may pass on (an API key's scope); absent, all. */
type QueueAllowed = ((queue: string) => boolean) | undefined;

/**
 * The results passed on to a lease's jobs, by seq: one store call when the store reads the
 * edges of many at once (`ofMany`), else one per job. A job without edges is left out. The
 * edges carry the results' sizes only; the results passed on are read afterwards, each once
 * (`results`), so a lease reads at most max_dependency_results_bytes per job, whatever the
 * results left out hold.
 */
export function* dependencyResultsOf(
  tx: StoreTx,
  jobs: readonly { id: string; seq: number }[],
  limits: Limits,
  queueAllowed?: QueueAllowed,
): Op<Map<number, DependencyResult[]>> {
  const results = new Map<number, DependencyResult[]>();
  const deps = tx.dependencies;
  if (deps === undefined || jobs.length === 0) return results;
  // The entries whose result is passed on: filled in once every edge was read.
  const toRead: DependencyResult[] = [];
  if (deps.ofMany === undefined || jobs.length === 1) {
    for (const job of jobs) {
      const edges = resultsOf(yield* deps.of(job.id, job.seq), limits, queueAllowed, toRead);
      if (edges.length > 0) results.set(job.seq, edges);
    }
  } else {
    const edges = yield* deps.ofMany(jobs.map((job) => job.seq));
    for (let start = 0; start < edges.length; ) {
      const seq = edges[start]!.child_seq;
      let end = start + 1;
      while (end < edges.length && edges[end]!.child_seq === seq) end++;
      results.set(seq, resultsOf(edges.slice(start, end), limits, queueAllowed, toRead));
      start = end;
    }
  }
  if (toRead.length === 0) return results;
  const stored = new Map<string, Uint8Array | null>();
  for (const row of yield* deps.results([...new Set(toRead.map((r) => r.jobId))]))
    stored.set(row.id, row.result);
  for (const entry of toRead) entry.result = stored.get(entry.jobId) ?? null;
  return results;
}

/** A job's dependencies as passed on; those whose result is passed on are added to `toRead`. */
function resultsOf(
  edges: readonly DependencyEdgeRow[],
  limits: Limits,
  queueAllowed: QueueAllowed,
  toRead: DependencyResult[],
): DependencyResult[] {
  if (edges.length === 0) return [];
  const hidden = (edge: DependencyEdgeRow): boolean =>
    queueAllowed !== undefined && edge.parent_queue !== null && !queueAllowed(edge.parent_queue);
  let bytes = 0;
  for (const edge of edges) if (!hidden(edge)) bytes += edge.result_bytes ?? 0;
  const omitted = bytes > limits.maxDependencyResultsBytes;
  return edges.map((edge) => {
    if (hidden(edge)) return sweptLike(edge);
    const entry: DependencyResult = {
      jobId: edge.parent_id,
      name: edge.name,
      state: isJobState(edge.parent_state) ? edge.parent_state : null,
      result: null,
      resultContentType: omitted ? null : edge.result_content_type,
      resultOmitted: omitted && edge.result_bytes !== null,
    };
    if (!omitted && edge.result_bytes !== null) toRead.push(entry);
    return entry;
  });
}

/** A dependency of a queue the caller may not see, as a swept one is passed on. */
const sweptLike = (edge: DependencyEdgeRow): DependencyResult => ({
  jobId: edge.parent_id,
  name: edge.name,
  state: null,
  result: null,
  resultContentType: null,
  resultOmitted: false,
});
