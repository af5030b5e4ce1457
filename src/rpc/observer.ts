import type { Metadata } from '@grpc/grpc-js';

/**
 * What the rpc layer tells an observer about each call: the seam through which
 * telemetry (metrics, spans, request logs) sees gRPC without rpc importing it.
 * rpc defines the interface; the composition root passes an implementation.
 *
 * A "call" is one unary RPC or one message of a stream that asks for work
 * (a Produce batch; a Work ack, nack or extend; the acks of one Work batch
 * message together), so stream traffic shows up per message rather than as one
 * hours-long call.
 */

/** W3C trace context as carried on the wire and stored with a job. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string | undefined;
}

export interface RpcCallStart {
  /** QueueService method: `Enqueue`, `Work`, … */
  method: string;
  /** For a stream: which request this is (`batch` on Produce; `ack`, `nack`, `extend` on Work). */
  streamMessage?: string;
  /** The context this call continues: the producer's for Enqueue, else the caller's `traceparent` metadata. */
  parent: TraceContext | undefined;
}

/** What became known about the job a call is about. */
export interface RpcJobFacts {
  queue?: string;
  type?: string;
  jobId?: string;
  attempt?: number;
  /** Jobs in a batch call. */
  jobs?: number;
}

/** A job handed to a worker: its facts plus the producer context stored with it. */
export interface RpcLeasedJob {
  id: string;
  queue: string;
  type: string;
  attempt: number;
  traceparent: string | null;
  tracestate: string | null;
}

export interface RpcCallObservation {
  /**
   * This call's own trace context when it is traced, so a job that arrives
   * without one still links to a trace; undefined when tracing is off.
   */
  readonly context: TraceContext | undefined;
  annotate(facts: RpcJobFacts): void;
  /** Jobs leased by this call (Reserve, Work pushes): their producer contexts become span links. */
  leased(jobs: readonly RpcLeasedJob[]): void;
  /** `code` is the gRPC status code; `caller` the API key's name (never the key). */
  end(code: number, caller: string | undefined): void;
}

export interface RpcObserver {
  callStarted(start: RpcCallStart): RpcCallObservation;
}

/** Stands in when no observer is configured, so handlers never branch on it. */
export const unobserved: RpcCallObservation = {
  context: undefined,
  annotate() {},
  leased() {},
  end() {},
};

/** The W3C `traceparent` shape (version-traceid-parentid-flags) the engine also checks before storing. */
const traceparentPattern = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Whether `value` is a traceparent worth continuing; anything else counts as absent. */
export function isTraceparent(value: string | undefined): value is string {
  return value !== undefined && traceparentPattern.test(value);
}

/** The `traceparent`/`tracestate` metadata of a call, if it sent a well-formed one. */
export function metadataTraceContext(metadata: Metadata): TraceContext | undefined {
  const traceparent = metadata.get('traceparent')[0];
  if (typeof traceparent !== 'string' || !isTraceparent(traceparent)) return undefined;
  const tracestate = metadata.get('tracestate')[0];
  return { traceparent, tracestate: typeof tracestate === 'string' ? tracestate : undefined };
}

/**
 * The trace context stored with a job: its own if it carries a well-formed
 * one, else the fallback (the server span's context, or the call's metadata
 * when untraced). A malformed one is replaced rather than kept, since the
 * engine would drop it and leave the worker nothing to link to.
 */
export function withTraceContext<T extends { traceparent?: string; tracestate?: string }>(
  job: T,
  fallback: TraceContext | undefined,
): T {
  if (isTraceparent(job.traceparent) || fallback === undefined) return job;
  job.traceparent = fallback.traceparent;
  job.tracestate = fallback.tracestate;
  return job;
}
