/**
 * Server spans, exported over OTLP/HTTP. Built only when an endpoint is
 * configured: without one, sepp creates no spans at all (the observer skips
 * this module entirely), so tracing costs nothing when it is off.
 *
 * No global tracer provider or context manager is installed: every span gets
 * its parent explicitly from the W3C context the call or the job carried, so
 * nothing else in the process is affected and no async-context bookkeeping
 * runs on the hot path.
 */
import { type Attributes, type Link, ROOT_CONTEXT, type Span, SpanKind, trace } from '@opentelemetry/api';
import { parseTraceParent, TraceState } from '@opentelemetry/core';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

/** W3C trace context as carried on the wire and stored with a job. */
export interface W3CTraceContext {
  traceparent: string;
  tracestate?: string | undefined;
}

export interface TracingOptions {
  resource: Resource;
  /** `${otlpEndpoint}/v1/traces`. */
  otlpTracesUrl: string;
  /** The exporter class, loaded only when an endpoint is configured (otlp-exporters.ts). */
  Exporter: typeof OTLPTraceExporter;
  /** Share of new traces sampled, 0..1; a caller's sampled flag is honoured either way. */
  sampleRatio: number;
}

export class Tracing {
  private readonly provider: TracerProvider;
  private readonly tracer;

  constructor(options: TracingOptions) {
    const exporter = new options.Exporter({ url: options.otlpTracesUrl });
    this.provider = new TracerProvider({
      resource: options.resource,
      // Follow the producer's decision when there is one, so a trace is kept or dropped whole.
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio) }),
      spanProcessors: [new BatchSpanProcessor({ exporter })],
    });
    this.tracer = this.provider.getTracer('sepp');
  }

  startServerSpan(name: string, parent: W3CTraceContext | undefined, attributes: Attributes): Span {
    const parentContext = parent === undefined ? undefined : spanContextOf(parent);
    const context =
      parentContext === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parentContext);
    return this.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, context);
  }

  /** Sends what is buffered now. */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** Sends what is buffered and stops exporting. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/** A span link to the context a job carries (its producer), or undefined if it carries none that parses. */
export function linkTo(
  traceparent: string | null,
  tracestate: string | null,
  attributes: Attributes,
): Link | undefined {
  if (traceparent === null) return undefined;
  const context = spanContextOf({ traceparent, tracestate: tracestate ?? undefined });
  return context === undefined ? undefined : { context, attributes };
}

function spanContextOf(parent: W3CTraceContext) {
  const context = parseTraceParent(parent.traceparent);
  if (context === null) return undefined;
  context.isRemote = true;
  if (parent.tracestate) context.traceState = new TraceState(parent.tracestate);
  return context;
}

/** The W3C form of a span's context, to store with a job that carries none. */
export function traceContextOf(span: Span): W3CTraceContext {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  const flags = (traceFlags & 0xff).toString(16).padStart(2, '0');
  const tracestate = traceState?.serialize();
  return { traceparent: `00-${traceId}-${spanId}-${flags}`, tracestate: tracestate || undefined };
}
