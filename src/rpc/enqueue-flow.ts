/**
 * A flow as both of its gRPC ways carry it — the unary EnqueueFlow and a
 * Produce message's `flow` (issue 33): the request converted for the engine,
 * enqueued, and the answer converted back. The callers check authentication
 * and the key's queue scope first (the unary wrapper, or the stream with the
 * same rule: queue-scope-rules.ts); the engine checks the fields and limits.
 */
import type {
  EnqueueFlowRequest,
  EnqueueFlowResponse,
} from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { Engine } from '../engine/engine.ts';
import { enqueuedBy, type JobCreator } from '../engine/jobs/index.ts';
import { atomicRejectionToProto, enqueueRequestFromProto } from './convert.ts';
import { type TraceContext, withTraceContext } from './observer.ts';

/**
 * Enqueues the flow; each job carries its own trace context or, failing that, `fallback`, and
 * `createdBy`, the caller's key (creatorOf).
 */
export async function enqueueFlowFromProto(
  engine: Engine,
  request: EnqueueFlowRequest,
  fallback: TraceContext | undefined,
  createdBy: JobCreator | undefined,
): Promise<EnqueueFlowResponse> {
  const jobs = request.jobs.map((flowJob) => {
    const job = withTraceContext(enqueueRequestFromProto(flowJob.job ?? EnqueueJob.create()), fallback);
    // Each request gains the flow's fields in place: a copy by spread made every flow job an
    // object the validation read several times slower (bench/results/w5-flows-2026-12-06-e.md).
    return Object.assign(job, { name: flowJob.name, after: flowJob.after });
  });
  const result = await engine.enqueueFlow(enqueuedBy(jobs, createdBy));
  return result.committed
    ? { committed: true, jobs: result.jobs, rejections: [] }
    : { committed: false, jobs: [], rejections: result.rejections.map(atomicRejectionToProto) };
}
