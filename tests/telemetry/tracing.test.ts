/**
 * Traces end to end: a producer span made here with a test tracer, Enqueue
 * over real gRPC carrying its traceparent, Reserve handing it back to the
 * worker, Ack — and the server's spans as an OTLP/HTTP collector (inside the
 * test) receives them when the server shuts down and flushes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, Metadata } from '@grpc/grpc-js';
import { type Span, SpanKind, trace } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const job = (extra: Partial<EnqueueJob> = {}) =>
  testJob('emails', {
    type: 'send_welcome',
    payload: Buffer.from('{}'),
    contentType: 'application/json',
    ...extra,
  });

const traceparentOf = (span: Span) => {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-0${c.traceFlags}`;
};

describe('traces over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  let t: TestServer;
  // The producer's and the worker's side: an ordinary OpenTelemetry tracer in this process.
  const clientSpans = new InMemorySpanExporter();
  const clientTracer = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter: clientSpans })],
  }).getTracer('test-client');

  let producer: Span;
  let jobId: string;
  let leased: { traceparent: string; tracestate: string; attempt: number };
  let worker: Span;
  let metadataParent: Span;
  let metadataJobTraceparent: string;
  let untracedJobId: string;
  let untracedJobTraceparent: string;
  let produceOwnTraceparent: string;
  let produceStored: string[];
  let spans: ReceivedSpan[];

  before(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestServer({
      toml: `
[telemetry]
otlp_endpoint = "${receiver.endpoint}"
service_name = "sepp-under-test"
traces_sample_ratio = 1.0
`,
    });
    const c = t.client;

    // Producer → server: the job carries the producer span's context.
    producer = clientTracer.startSpan('send welcome email', { kind: SpanKind.PRODUCER });
    ({ jobId } = await call(c, c.enqueue, {
      job: job({ traceparent: traceparentOf(producer), tracestate: 'vendor=abc' }),
    }));
    producer.end();

    // Server → worker: Reserve hands the stored context back; the worker links its span to it.
    const reserved = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['emails'],
      maxJobs: 1,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: 'w1',
    });
    const got = reserved.jobs[0]!;
    assert.equal(got.jobId, jobId);
    leased = { traceparent: got.traceparent, tracestate: got.tracestate, attempt: got.attempt };
    const producerContext = parseTraceParent(got.traceparent)!;
    worker = clientTracer.startSpan('process send_welcome', {
      kind: SpanKind.CONSUMER,
      links: [{ context: producerContext }],
    });
    await call(c, c.ack, { jobId, attempt: got.attempt });
    worker.end();

    // A producer that sends its context as call metadata instead of in the job.
    metadataParent = clientTracer.startSpan('metadata producer');
    const md = new Metadata();
    md.set('traceparent', traceparentOf(metadataParent));
    const viaMetadata = await call(c, c.enqueue, { job: job() }, md);
    metadataParent.end();
    metadataJobTraceparent = (await call(c, c.getJob, { jobId: viaMetadata.jobId })).job!.traceparent;

    // A producer with no tracing at all.
    ({ jobId: untracedJobId } = await call(c, c.enqueue, { job: job() }));
    untracedJobTraceparent = (await call(c, c.getJob, { jobId: untracedJobId })).job!.traceparent;

    // A Produce batch: a job with its own context keeps it; one without gets the batch span's.
    const produce = c.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answered = new Promise<ProduceResponse>((resolve, reject) => {
      produce.once('data', resolve);
      produce.once('error', reject);
    });
    const batchProducer = clientTracer.startSpan('batch producer');
    produceOwnTraceparent = traceparentOf(batchProducer);
    batchProducer.end();
    produce.write({
      sequence: 1,
      jobs: [job({ traceparent: produceOwnTraceparent }), job()],
      atomic: false,
    });
    const produced = await answered;
    produce.end();
    produceStored = [];
    for (const r of produced.results) {
      assert.ok(r.outcome?.$case === 'accepted');
      produceStored.push((await call(c, c.getJob, { jobId: r.outcome.value.jobId })).job!.traceparent);
    }

    // Shutdown flushes the batch span processor to the receiver.
    await t.dispose();
    spans = receiver.spans;
  });
  after(async () => {
    await t.dispose();
    await receiver.close();
  });

  const serverSpans = (method: string) => spans.filter((s) => s.name === `sepp.v1.QueueService/${method}`);

  test('the stored traceparent goes back to the worker unchanged', () => {
    assert.equal(leased.traceparent, traceparentOf(producer));
    assert.equal(leased.tracestate, 'vendor=abc');
    assert.equal(leased.attempt, 1);
    const [workerSpan] = clientSpans.getFinishedSpans().filter((s) => s.name === 'process send_welcome');
    assert.equal(workerSpan?.links[0]?.context.spanId, producer.spanContext().spanId);
    assert.equal(workerSpan?.links[0]?.context.traceId, producer.spanContext().traceId);
  });

  test('the Enqueue server span is a child of the producer span, with the job attributes', () => {
    const enqueue = serverSpans('Enqueue').find((s) => s.attributes['sepp.job.id'] === jobId);
    assert.ok(enqueue, `no Enqueue span for ${jobId} among ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(enqueue.traceId, producer.spanContext().traceId);
    assert.equal(enqueue.parentSpanId, producer.spanContext().spanId);
    assert.equal(enqueue.kind, 2, 'SPAN_KIND_SERVER');
    assert.equal(enqueue.service, 'sepp-under-test');
    assert.deepEqual(enqueue.attributes, {
      'rpc.system': 'grpc',
      'rpc.service': 'sepp.v1.QueueService',
      'rpc.method': 'Enqueue',
      'rpc.grpc.status_code': 0,
      'sepp.queue': 'emails',
      'sepp.job.type': 'send_welcome',
      'sepp.job.id': jobId,
    });
  });

  test('the Reserve span carries the leased job and links to its producer', () => {
    const [reserve] = serverSpans('Reserve');
    assert.ok(reserve);
    assert.equal(reserve.attributes['sepp.job.id'], jobId);
    assert.equal(reserve.attributes['sepp.job.attempt'], 1);
    assert.equal(reserve.attributes['sepp.queue'], 'emails');
    assert.equal(reserve.attributes['sepp.job.type'], 'send_welcome');
    assert.deepEqual(
      reserve.links.map((l) => [l.traceId, l.spanId, l.attributes['sepp.job.id']]),
      [[producer.spanContext().traceId, producer.spanContext().spanId, jobId]],
    );
  });

  test('the Ack span names the job and attempt', () => {
    const [ack] = serverSpans('Ack');
    assert.equal(ack?.attributes['sepp.job.id'], jobId);
    assert.equal(ack?.attributes['sepp.job.attempt'], 1);
    assert.equal(ack?.attributes['rpc.grpc.status_code'], 0);
  });

  test('traceparent metadata parents the span, and the job stores the server span so the worker links to it', () => {
    const parent = metadataParent.spanContext();
    const enqueue = serverSpans('Enqueue').find((s) => s.parentSpanId === parent.spanId);
    assert.ok(enqueue);
    assert.equal(enqueue.traceId, parent.traceId);
    assert.equal(metadataJobTraceparent, `00-${enqueue.traceId}-${enqueue.spanId}-01`);
  });

  test('a job enqueued with no trace context stores the server span’s, a new root', () => {
    const enqueue = serverSpans('Enqueue').find((s) => s.attributes['sepp.job.id'] === untracedJobId);
    assert.ok(enqueue);
    assert.equal(enqueue.parentSpanId, '');
    assert.equal(untracedJobTraceparent, `00-${enqueue.traceId}-${enqueue.spanId}-01`);
  });

  test('a Produce batch: each job keeps its own context, the others store the batch span’s', () => {
    const [batch] = serverSpans('Produce batch');
    assert.ok(batch);
    assert.equal(batch.attributes['sepp.stream.message'], 'batch');
    assert.equal(batch.attributes['sepp.job.count'], 2);
    assert.deepEqual(produceStored, [produceOwnTraceparent, `00-${batch.traceId}-${batch.spanId}-01`]);
  });

  test('every RPC and stream request made has a server span', () => {
    const methods = ['Ack', 'Enqueue', 'Enqueue', 'Enqueue', 'GetJob', 'GetJob', 'GetJob', 'GetJob'];
    assert.deepEqual(spans.map((s) => s.attributes['rpc.method']).sort(), [...methods, 'Produce', 'Reserve']);
    assert.ok(receiver.paths.includes('/v1/traces'));
  });
});

describe('traces when no endpoint is configured', () => {
  test('no spans are created: the job keeps only what the producer sent', async () => {
    const t = await startTestServer();
    try {
      assert.equal(t.server.telemetry.tracing, undefined);
      const { jobId } = await call(t.client, t.client.enqueue, { job: job() });
      const stored = await call(t.client, t.client.getJob, { jobId });
      assert.equal(stored.job?.traceparent, '');
      const md = new Metadata();
      const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      md.set('traceparent', tp);
      const viaMetadata = await call(t.client, t.client.enqueue, { job: job() }, md);
      assert.equal(
        (await call(t.client, t.client.getJob, { jobId: viaMetadata.jobId })).job?.traceparent,
        tp,
      );
      // A malformed traceparent in the job counts as none: the metadata's is stored instead.
      const malformed = await call(
        t.client,
        t.client.enqueue,
        { job: job({ traceparent: 'not-a-trace' }) },
        md,
      );
      assert.equal((await call(t.client, t.client.getJob, { jobId: malformed.jobId })).job?.traceparent, tp);
    } finally {
      await t.dispose();
    }
  });
});

// Keep the global API untouched: sepp and this test use their own providers.
test('no global tracer provider was installed', () => {
  assert.equal(trace.getTracerProvider().constructor.name, 'ProxyTracerProvider');
});
