/**
 * An edge as GetJob and GetFlow show it. A stored edge is resolved in the unit that ends its
 * dependency while its job waits (release.ts). A job that ended first — cancelled while its
 * dependency ran — has its edges from jobs that fail later resolved as failed then, but an
 * edge from one that completes later stays pending in the store: resolving it would cost the
 * ack of every job others wait on a statement more. A pending edge from a completed job is
 * never one a job still waits on (the ack resolved those), so it is shown completed, as long
 * as its dependency is kept.
 */
import type { EdgeState } from '../../store/dependencies.ts';

/** The state shown for an edge stored as `edge` from a dependency now in `dependencyState` (null: deleted). */
export function shownEdge(edge: EdgeState, dependencyState: string | null): EdgeState {
  return edge === 'pending' && dependencyState === 'completed' ? 'completed' : edge;
}
