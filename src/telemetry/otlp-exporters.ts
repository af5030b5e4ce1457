/**
 * The OTLP/HTTP exporters, loaded only when an OTLP endpoint is configured: their modules
 * (and the protobuf serialisers they share) cost tens of milliseconds of CPU to load, which a
 * server that exports nothing over OTLP need not pay at every start.
 */
import type { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';

export interface OtlpExporters {
  OTLPMetricExporter: typeof OTLPMetricExporter;
  OTLPTraceExporter: typeof OTLPTraceExporter;
}

export async function loadOtlpExporters(): Promise<OtlpExporters> {
  const [metrics, traces] = await Promise.all([
    import('@opentelemetry/exporter-metrics-otlp-http'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  return { OTLPMetricExporter: metrics.OTLPMetricExporter, OTLPTraceExporter: traces.OTLPTraceExporter };
}
