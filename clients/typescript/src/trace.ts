/**
 * W3C trace context through OpenTelemetry's API, which is a no-op until an
 * application registers an SDK. Producers forward the active context with
 * each job; workers start a span per job linked to the producer's.
 *
 * Cost without OpenTelemetry set up: one context lookup per enqueue (no span
 * is active, so nothing is injected) and one tracer-provider lookup per job.
 * Without a registered tracer provider the span would be non-recording and
 * nothing could use it, so no span is made and the handler runs in the
 * context it was delivered in. (The one difference a handler could see: with
 * a context manager but no tracer provider registered, `trace.getActiveSpan()`
 * in it no longer returns a non-recording span with an invalid context; what
 * it forwards with its enqueues is the same, nothing.)
 *
 * `@opentelemetry/api` is an optional peer dependency of the package: it is
 * loaded when the application has it installed; without it nothing can have
 * been registered to trace into, so nothing is forwarded and no span is made.
 * It is loaded with `require`: its entry point is CommonJS for `import` and
 * `require` alike, so this is the instance the application's own imports get
 * (and any copy sees the same registrations: the API keeps them in one global).
 */
import { createRequire } from 'node:module';
import type * as OtelApi from '@opentelemetry/api';
import type { Context, Link, Span, Tracer } from '@opentelemetry/api';
import type { LeasedJob } from './jobs.ts';

/**
 * The OpenTelemetry API, or undefined when the application does not have it installed. Loaded on
 * the first call that needs it, not when the SDK is imported: loading it costs ~100 ms of CPU, which
 * a program that never enqueues or works (the `sepp` CLI's commands) need not pay.
 */
let loaded: { api: typeof OtelApi | undefined } | undefined;

function otelApi(): typeof OtelApi | undefined {
  loaded ??= { api: loadOptional<typeof OtelApi>('@opentelemetry/api') };
  return loaded.api;
}

function loadOptional<T>(name: string): T | undefined {
  try {
    return createRequire(import.meta.url)(name) as T;
  } catch {
    return undefined;
  }
}

/** Instrumentation scope name for the worker's spans. */
const tracerName = 'sepp';

export interface TraceHeaders {
  traceparent: string;
  tracestate: string;
}

const none: TraceHeaders = { traceparent: '', tracestate: '' };

/** The active context's `traceparent`/`tracestate`, or empty strings when no span is active or no propagator is registered. */
export function activeTraceHeaders(): TraceHeaders {
  const otel = otelApi();
  if (otel === undefined) return none;
  const active = otel.context.active();
  // Nothing to forward without an active span; this keeps the common case to one lookup.
  if (otel.trace.getSpanContext(active) === undefined) return none;
  const carrier: Record<string, string> = {};
  otel.propagation.inject(active, carrier);
  const traceparent = carrier.traceparent;
  if (traceparent === undefined) return none;
  return { traceparent, tracestate: carrier.tracestate ?? '' };
}

/** The producer's span context from a job's stored headers, as a link (none without a propagator). */
function producerLink(api: typeof OtelApi, job: LeasedJob): Link[] {
  if (job.traceparent === null) return [];
  const carrier: Record<string, string> = { traceparent: job.traceparent };
  if (job.tracestate !== null) carrier.tracestate = job.tracestate;
  const producer = api.trace.getSpanContext(api.propagation.extract(api.ROOT_CONTEXT, carrier));
  return producer === undefined ? [] : [{ context: producer }];
}

/** The tracer for job spans, or undefined while the API's global tracer provider has no SDK behind it. */
function jobTracer(api: typeof OtelApi): Tracer | undefined {
  const provider = api.trace.getTracerProvider();
  // `getTracer` would return the delegate's tracer too, or else a proxy that makes non-recording spans.
  if (provider instanceof api.ProxyTracerProvider) return provider.getDelegateTracer(tracerName);
  return provider.getTracer(tracerName);
}

/**
 * Starts the span a worker runs one job in, linked to the producer's span;
 * undefined when OpenTelemetry is not installed or no tracer provider is
 * registered (see the top of this file).
 */
export function startJobSpan(job: LeasedJob): { span: Span; context: Context } | undefined {
  const otel = otelApi();
  if (otel === undefined) return undefined;
  const tracer = jobTracer(otel);
  if (tracer === undefined) return undefined;
  const span = tracer.startSpan(`process ${job.queue}`, {
    kind: otel.SpanKind.CONSUMER,
    links: producerLink(otel, job),
    attributes: {
      'messaging.system': 'sepp',
      'messaging.operation.type': 'process',
      'messaging.destination.name': job.queue,
      'messaging.message.id': job.id,
      'sepp.job.type': job.type,
      'sepp.job.attempt': job.attempt,
    },
  });
  return { span, context: otel.trace.setSpan(otel.context.active(), span) };
}

/** Runs `fn` with `ctx` (from startJobSpan) as the active context, so the handler's own spans become children. */
export function runInContext<T>(ctx: Context, fn: () => T): T {
  // The API is loaded: ctx came from startJobSpan.
  const api = loaded?.api;
  return api === undefined ? fn() : api.context.with(ctx, fn);
}

/** Ends a job's span with the job's outcome. */
export function endJobSpan(span: Span, error: unknown): void {
  // A span exists only when the API is loaded (startJobSpan).
  const api = loaded?.api;
  if (error !== undefined && api !== undefined) {
    if (error instanceof Error) span.recordException(error);
    span.setStatus({
      code: api.SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
  span.end();
}
