/**
 * The shape of a flow (issue 33): jobs named locally, each naming the jobs of the same
 * request it runs after. Checked before anything is stored: names valid and unique,
 * every name it runs after in the request, no cycle, and bounded — jobs per flow
 * (limits.max_flow_jobs), dependencies per job (limits.max_dependencies_per_job, local
 * and by id together), jobs running after one of its jobs (limits.max_dependents_per_job)
 * and depth (limits.max_flow_depth, the longest chain). The answer
 * is an order in which every job comes after the jobs it runs after (Kahn's algorithm).
 */
import { checkName } from '../checks.ts';
import { SeppError } from '../errors.ts';
import type { EngineLimits } from '../settings.ts';
import type { FlowJob } from '../types.ts';

/** Indexes of the flow's jobs, each after the ones it runs after; and each job's local parents by index. */
export interface FlowOrder {
  order: number[];
  parents: number[][];
}

export function checkFlowShape(jobs: readonly FlowJob[], limits: EngineLimits): FlowOrder {
  if (jobs.length === 0) throw new SeppError('invalid_argument', 'jobs: the flow is empty');
  if (jobs.length > limits.maxFlowJobs) {
    throw SeppError.tooLarge(
      `jobs: the flow has ${jobs.length} jobs, the limit is ${limits.maxFlowJobs} (limits.max_flow_jobs); ` +
        'make it smaller, or split it into several flows',
    );
  }
  const byName = new Map<string, number>();
  jobs.forEach((job, i) => {
    const problem = checkName('name', job.name, limits);
    if (problem !== null) throw new SeppError('invalid_argument', `jobs[${i}].${problem.message}`);
    if (byName.has(job.name)) {
      throw new SeppError('invalid_argument', `jobs[${i}].name: ${job.name} names two jobs of the flow`);
    }
    byName.set(job.name, i);
  });
  const parents: number[][] = [];
  const children: number[][] = jobs.map(() => []);
  jobs.forEach((job, i) => {
    const after = job.after ?? [];
    const total = after.length + (job.dependsOn?.length ?? 0);
    if (total > limits.maxDependenciesPerJob) {
      throw new SeppError(
        'invalid_argument',
        `jobs[${i}] (${job.name}) depends on ${total} jobs, the limit is ${limits.maxDependenciesPerJob} (limits.max_dependencies_per_job)`,
      );
    }
    const own: number[] = [];
    // A set beside the list: a wide fan-in's after (10,000 names) is checked in O(n), not O(n²).
    const seen = new Set<number>();
    for (const name of after) {
      const parent = byName.get(name);
      if (parent === undefined) {
        throw new SeppError(
          'invalid_argument',
          `jobs[${i}] (${job.name}) runs after ${name}, which is not in the flow`,
        );
      }
      if (seen.has(parent)) {
        throw new SeppError('invalid_argument', `jobs[${i}] (${job.name}) names ${name} twice in after`);
      }
      seen.add(parent);
      own.push(parent);
      children[parent]!.push(i);
    }
    parents.push(own);
  });
  // A job of the flow is new: only the flow's jobs can depend on it (a duplicate's go to its original, checked as stored).
  const maxDependents = limits.maxDependentsPerJob;
  const crowded = children.findIndex((own) => own.length > maxDependents);
  if (crowded >= 0) {
    throw new SeppError(
      'invalid_argument',
      `jobs[${crowded}] (${jobs[crowded]!.name}) has ${children[crowded]!.length} jobs running after it, the limit is ${maxDependents} (limits.max_dependents_per_job); fan out through jobs in between, or raise the limit`,
    );
  }
  const waitingOn = parents.map((own) => own.length);
  const depth = jobs.map(() => 1);
  const order: number[] = [];
  // The order itself is the queue of jobs whose parents are all placed.
  for (let i = 0; i < jobs.length; i++) if (waitingOn[i] === 0) order.push(i);
  for (let at = 0; at < order.length; at++) {
    const next = order[at]!;
    for (const child of children[next]!) {
      depth[child] = Math.max(depth[child]!, depth[next]! + 1);
      if (depth[child]! > limits.maxFlowDepth) {
        throw new SeppError(
          'invalid_argument',
          `jobs[${child}] (${jobs[child]!.name}) is ${depth[child]} jobs deep, the limit is ${limits.maxFlowDepth} (limits.max_flow_depth)`,
        );
      }
      if (--waitingOn[child]! === 0) order.push(child);
    }
  }
  if (order.length < jobs.length) {
    const inCycle = waitingOn.findIndex((n) => n > 0);
    throw new SeppError(
      'invalid_argument',
      `jobs[${inCycle}] (${jobs[inCycle]!.name}) is in a cycle: a flow's jobs must not run after each other in a loop`,
    );
  }
  return { order, parents };
}
