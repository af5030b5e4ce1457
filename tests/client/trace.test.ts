/**
 * W3C trace context: enqueue forwards the active OpenTelemetry context's
 * traceparent, and the Worker runs each job in a span linked to it. The
 * OpenTelemetry pieces an application would register (context manager,
 * propagator, tracer provider) are minimal stand-ins here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type Context,
  type ContextManager,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type TextMapPropagator,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { SeppClient, type WorkerJob } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { nextEvents } from './helpers.ts';

/** Synchronous only, which is all these tests need. */
class StackContextManager implements ContextManager {
  private readonly stack: Context[] = [];
  active(): Context {
    return this.stack.at(-1) ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    this.stack.push(ctx);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.stack.pop();
    }
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}

/** The W3C `traceparent` header, and `tracestate` passed through as text. */
const w3c: TextMapPropagator = {
  inject(ctx, carrier, setter) {
    const span = trace.getSpanContext(ctx);
    if (span === undefined) return;
    setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-0${span.traceFlags}`);
  },
  extract(ctx, carrier, getter) {
    const header = getter.get(carrier, 'traceparent');
    const match = typeof header === 'string' ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-0(\d)$/.exec(header) : null;
    if (match === null) return ctx;
    return trace.setSpanContext(ctx, {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: Number(match[3]),
      isRemote: true,
    });
  },
  fields: () => ['traceparent'],
};

interface Started {
  name: string;
  options: SpanOptions | undefined;
  span: Span;
}

const started: Started[] = [];
const tracer: Tracer = {
  startSpan(name, options) {
    const span = trace.wrapSpanContext({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: (started.length + 1).toString(16).padStart(16, '0'),
      traceFlags: TraceFlags.SAMPLED,
    });
    started.push({ name, options, span });
    return span;
  },
  startActiveSpan: (() => {
    throw new Error('not used');
  }) as Tracer['startActiveSpan'],
};

const producer: SpanContext = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
};

/**
 * For one describe block: OpenTelemetry globals set up by `register`, a server,
 * and a client to it; after the block, all undone.
 */
function serverWith(register: () => void): { readonly client: SeppClient } {
  let t: TestServer | undefined;
  let client: SeppClient | undefined;
  before(async () => {
    register();
    t = await startTestServer();
    client = SeppClient.connect(t.address);
  });
  after(async () => {
    await client?.close();
    await t?.dispose();
    trace.disable();
    propagation.disable();
    context.disable();
  });
  return {
    get client() {
      if (client === undefined) throw new Error('the client is made in before()');
      return client;
    },
  };
}

describe('trace context', () => {
  const s = serverWith(() => {
    context.setGlobalContextManager(new StackContextManager());
    propagation.setGlobalPropagator(w3c);
    trace.setGlobalTracerProvider({ getTracer: () => tracer });
  });

  test('enqueue forwards the active context’s traceparent, and nothing without one', async () => {
    const active = trace.setSpanContext(ROOT_CONTEXT, producer);
    const traced = await context.with(active, () => s.client.enqueueJson('traced', 'send', { n: 1 }));
    assert.equal(
      (await s.client.getJob(traced.id)).traceparent,
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    );
    const plain = await s.client.enqueueJson('untraced', 'send', { n: 2 });
    assert.equal((await s.client.getJob(plain.id)).traceparent, null);
  });

  test('the worker runs each job in a consumer span linked to the producer’s', async () => {
    let activeInHandler: Span | undefined;
    const worker = s.client.worker({
      queues: ['traced'],
      handlers: {
        send: () => {
          activeInHandler = trace.getActiveSpan();
        },
      },
    });
    const [job] = await nextEvents<[WorkerJob]>(worker, 'completed');
    await worker.close();
    const span = started.find((s) => s.options?.attributes?.['messaging.message.id'] === job.id);
    assert.ok(span, 'a span was started for the job');
    assert.equal(span.name, 'process traced');
    assert.equal(span.options?.kind, SpanKind.CONSUMER);
    assert.deepEqual(
      span.options?.links?.map((l) => [l.context.traceId, l.context.spanId]),
      [[producer.traceId, producer.spanId]],
    );
    assert.equal(span.options?.attributes?.['messaging.destination.name'], 'traced');
    assert.equal(activeInHandler, span.span, 'the handler runs with the job’s span active');
  });
});

describe('trace context without a tracer provider', () => {
  // A context manager but no tracer provider: the API's spans would be non-recording.
  const s = serverWith(() => context.setGlobalContextManager(new StackContextManager()));

  test('the worker starts no span, and starts them once a provider is registered later', async () => {
    const active: (Span | undefined)[] = [];
    const worker = s.client.worker({
      queues: ['late-tracing'],
      handlers: {
        send: () => {
          active.push(trace.getActiveSpan());
        },
      },
    });
    const before = started.length;
    const untraced = await s.client.enqueueJson('late-tracing', 'send', {});
    const [first] = await nextEvents<[WorkerJob]>(worker, 'completed');
    assert.equal(first.id, untraced.id);
    assert.equal(started.length, before, 'no span was started');
    assert.deepEqual(active, [undefined], 'the handler ran in the context it was delivered in');

    trace.setGlobalTracerProvider({ getTracer: () => tracer });
    const traced = await s.client.enqueueJson('late-tracing', 'send', {});
    const [second] = await nextEvents<[WorkerJob]>(worker, 'completed');
    await worker.close();
    assert.equal(second.id, traced.id);
    const span = started.find((s) => s.options?.attributes?.['messaging.message.id'] === traced.id);
    assert.ok(span, 'a span was started once a provider was registered');
    assert.equal(active[1], span.span, 'the handler runs with the job’s span active');
  });
});
