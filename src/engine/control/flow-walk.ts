/**
 * A flow's walk (GetFlow, CancelFlow): the jobs connected to one job through dependencies,
 * either way, found step by step — each step one store call for the ids the step before
 * found. Its cost is the edges it reads, and two bounds hold it: the jobs it may reach,
 * and `maxFlowWalkEdges` edges read. Without the second, 100 jobs each waited on by the
 * same 10,000 (a million edges, any producer key makes them in ten requests) cost every
 * read of that flow a million edges, about 0.6 s of the SQLite store's thread.
 */
import type { DependencyReads, FlowJobRow } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';

/**
 * Edges one flow walk reads (an edge counts at each end it is met from): two and a half
 * times what one answer of 4 MiB can show (about 40,000 edges), so a flow a read could
 * show whole hardly stops at it, and a walk costs tens of milliseconds at most.
 */
export const maxFlowWalkEdges = 100_000;

export interface FlowWalk {
  /** The stored jobs the walk reached, `jobId`'s first; empty when `jobId` is not stored. */
  rows: FlowJobRow[];
  /** More jobs than `jobsMax` were met (the walk stopped there). */
  jobsLimited: boolean;
  /** The walk read `edgesMax` edges and stopped: the flow may have more jobs than it found. */
  edgesLimited: boolean;
}

/** Walks `jobId`'s flow: at most `jobsMax` ids met (jobs swept since included) and `edgesMax` edges read. */
export function* walkFlow(
  deps: DependencyReads,
  jobId: string,
  jobsMax: number,
  edgesMax: number = maxFlowWalkEdges,
): Op<FlowWalk> {
  const [start] = yield* deps.flowRows([jobId]);
  if (start === undefined) return { rows: [], jobsLimited: false, edgesLimited: false };
  const seen = new Set([jobId]);
  let frontier = [jobId];
  let edgesLeft = edgesMax;
  let jobsLimited = false;
  let edgesLimited = false;
  while (frontier.length > 0 && !jobsLimited) {
    if (edgesLeft === 0) {
      edgesLimited = true;
      break;
    }
    // One more than is left: whether the step had more edges than the walk may read.
    const met = yield* deps.flowNeighbours({ ids: frontier, limit: edgesLeft + 1 });
    if (met.length > edgesLeft) {
      edgesLimited = true;
      met.length = edgesLeft;
    }
    edgesLeft -= met.length;
    const next: string[] = [];
    for (const id of met) {
      if (seen.has(id)) continue;
      if (seen.size === jobsMax) {
        jobsLimited = true;
        break;
      }
      seen.add(id);
      next.push(id);
    }
    frontier = edgesLimited ? [] : next;
  }
  seen.delete(jobId);
  const others = seen.size === 0 ? [] : yield* deps.flowRows([...seen]);
  return { rows: [start, ...others], jobsLimited, edgesLimited };
}
