/**
 * Telemetry's side of the rpc observer seam (src/rpc/observer.ts declares the
 * interface; the composition root plugs this in). Each call gets one
 * observation that, when it ends, records `rpc.server.duration`, ends its
 * span (only when tracing is on) and writes a debug request log line.
 *
 * The shapes below repeat the rpc layer's on purpose: telemetry and rpc are
 * siblings and may not import each other; TypeScript checks in app.ts that
 * they still agree.
 */
import type { Attributes, Link, Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import { attr, grpcServerErrorCodes, grpcServiceName, grpcStatusNames } from './attributes.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { linkTo, type Tracing, traceContextOf, type W3CTraceContext } from './tracing.ts';

export interface CallStart {
  method: string;
  streamMessage?: string;
  parent: W3CTraceContext | undefined;
}

export interface JobFacts {
  queue?: string;
  type?: string;
  jobId?: string;
  attempt?: number;
  jobs?: number;
}

export interface LeasedJobFacts {
  id: string;
  queue: string;
  type: string;
  attempt: number;
  traceparent: string | null;
  tracestate: string | null;
}

export interface CallObservation {
  readonly context: W3CTraceContext | undefined;
  annotate(facts: JobFacts): void;
  leased(jobs: readonly LeasedJobFacts[]): void;
  end(code: number, caller: string | undefined): void;
}

/** Span links per call: the SDK's default limit, stated so a 1,000-job reserve cannot grow a span without bound. */
const maxLinks = 128;

export class RpcTelemetry {
  /** Metric attribute sets by method, message and status: built once, not per call. */
  private readonly attributeCache = new Map<string, Attributes>();

  constructor(
    private metrics: Metrics,
    private tracing: Tracing | undefined,
    private readonly logger: Logger,
  ) {}

  /** New exporters (a reload changed the OTLP settings): calls from now on report to them. */
  use(metrics: Metrics, tracing: Tracing | undefined): void {
    this.metrics = metrics;
    this.tracing = tracing;
  }

  callStarted(start: CallStart): CallObservation {
    const span =
      this.tracing === undefined
        ? undefined
        : this.tracing.startServerSpan(spanName(start), start.parent, {
            [attr.rpcSystem]: 'grpc',
            [attr.rpcService]: grpcServiceName,
            [attr.rpcMethod]: start.method,
            ...(start.streamMessage === undefined ? {} : { [attr.streamMessage]: start.streamMessage }),
          });
    return new Observation(this, start, span);
  }

  /** Called once per call by its observation. */
  finish(start: CallStart, durationMs: number, code: number, caller: string | undefined): void {
    this.metrics.recordRpc(durationMs, this.metricAttributes(start, code));
    if (this.logger.enabled('debug')) {
      this.logger.debug('rpc.call', {
        method: start.method,
        message: start.streamMessage,
        status: grpcStatusNames[code] ?? String(code),
        duration_ms: Math.round(durationMs * 1000) / 1000,
        // The key's configured name; the key itself never reaches telemetry.
        caller,
      });
    }
  }

  private metricAttributes(start: CallStart, code: number): Attributes {
    const key = `${start.method}\0${start.streamMessage ?? ''}\0${code}`;
    let attributes = this.attributeCache.get(key);
    if (attributes === undefined) {
      attributes = {
        [attr.rpcSystem]: 'grpc',
        [attr.rpcService]: grpcServiceName,
        [attr.rpcMethod]: start.method,
        [attr.rpcGrpcStatusCode]: code,
      };
      if (start.streamMessage !== undefined) attributes[attr.streamMessage] = start.streamMessage;
      this.attributeCache.set(key, attributes);
    }
    return attributes;
  }
}

class Observation implements CallObservation {
  private readonly startedMs = performance.now();
  private ended = false;

  constructor(
    private readonly owner: RpcTelemetry,
    private readonly start: CallStart,
    private readonly span: Span | undefined,
  ) {}

  get context(): W3CTraceContext | undefined {
    return this.span === undefined ? undefined : traceContextOf(this.span);
  }

  annotate(facts: JobFacts): void {
    const span = this.span;
    if (span === undefined || !span.isRecording()) return;
    span.setAttributes(jobAttributes(facts));
  }

  leased(jobs: readonly LeasedJobFacts[]): void {
    const span = this.span;
    if (span === undefined || !span.isRecording()) return;
    const [only] = jobs;
    if (jobs.length === 1 && only !== undefined) {
      span.setAttributes(
        jobAttributes({ queue: only.queue, type: only.type, jobId: only.id, attempt: only.attempt }),
      );
    } else {
      span.setAttribute(attr.jobCount, jobs.length);
    }
    // Each leased job links back to the context its producer stored with it.
    const links: Link[] = [];
    for (const job of jobs) {
      if (links.length >= maxLinks) break;
      const link = linkTo(job.traceparent, job.tracestate, {
        [attr.jobId]: job.id,
        [attr.attempt]: job.attempt,
      });
      if (link !== undefined) links.push(link);
    }
    if (links.length > 0) span.addLinks(links);
  }

  end(code: number, caller: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    const durationMs = performance.now() - this.startedMs;
    this.owner.finish(this.start, durationMs, code, caller);
    const span = this.span;
    if (span === undefined) return;
    span.setAttribute(attr.rpcGrpcStatusCode, code);
    if (grpcServerErrorCodes.has(code))
      span.setStatus({ code: SpanStatusCode.ERROR, message: grpcStatusNames[code] ?? String(code) });
    span.end();
  }
}

function spanName(start: CallStart): string {
  const name = `${grpcServiceName}/${start.method}`;
  return start.streamMessage === undefined ? name : `${name} ${start.streamMessage}`;
}

function jobAttributes(facts: JobFacts): Attributes {
  const attributes: Attributes = {};
  if (facts.queue !== undefined) attributes[attr.queue] = facts.queue;
  if (facts.type !== undefined) attributes[attr.jobType] = facts.type;
  if (facts.jobId !== undefined) attributes[attr.jobId] = facts.jobId;
  if (facts.attempt !== undefined) attributes[attr.attempt] = facts.attempt;
  if (facts.jobs !== undefined) attributes[attr.jobCount] = facts.jobs;
  return attributes;
}
