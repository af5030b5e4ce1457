/**
 * Job dependencies (issue 33): what an enqueue's depends_on becomes (edges.ts) and the
 * release of the jobs waiting on a job that ended (release.ts).
 */

export { forgetDeletedJob } from './deleted.ts';
export {
  type DependencyEdges,
  type DependentsBound,
  DependentTally,
  dependencyEdges,
} from './edges.ts';
export { DependencyFailures } from './failures.ts';
export { DependencyQueues } from './queues.ts';
export {
  passDeletionOn,
  passOnFailures,
  releaseDependents,
  releaseDependentsOfCompleted,
} from './release.ts';
export { dependencyResultsOf } from './results.ts';
export { shownEdge } from './shown.ts';
