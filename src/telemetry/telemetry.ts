/**
 * Telemetry as the composition root sees it: built from the config before
 * the engine (which reports into it), then given the engine to read gauges
 * from, then shut down — flushing the last OTLP exports — after the gRPC
 * server has stopped.
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { TelemetryConfig } from '../config/index.ts';
import type { ConnectionCounts } from './connection-metrics.ts';
import type { Logger } from './logger.ts';
import { Metrics, type MetricsSource } from './metrics.ts';
import { RpcTelemetry } from './rpc-observer.ts';
import { Tracing } from './tracing.ts';

export interface TelemetryDeps {
  logger: Logger;
  /** The SQLite database file, for the file-size gauges. */
  databaseFile: string;
  /** `service.version` of everything exported. */
  version: string;
}

export class Telemetry {
  readonly metrics: Metrics;
  /** Undefined when no OTLP endpoint is configured: then no span is ever created. */
  readonly tracing: Tracing | undefined;
  /** Pass to the rpc server as its observer. */
  readonly rpcObserver: RpcTelemetry;
  private stopped: Promise<void> | undefined;
  private readonly logger: Logger;

  constructor(config: TelemetryConfig, deps: TelemetryDeps) {
    const { logger } = deps;
    this.logger = logger;
    const resource = resourceFromAttributes({
      'service.name': config.serviceName,
      'service.version': deps.version,
    });
    const base = config.otlpEndpoint?.replace(/\/+$/, '') ?? null;
    if (base !== null) routeOtelDiagnostics(logger);
    const reported = new Set<string>();
    this.metrics = new Metrics({
      resource,
      otlpMetricsUrl: base === null ? null : `${base}/v1/metrics`,
      exportIntervalMs: config.metricsExportIntervalMs,
      databaseFile: deps.databaseFile,
      onCollectError: (what, error) => {
        const message = error instanceof Error ? error.message : String(error);
        // Once per distinct problem: a broken gauge would otherwise log on every scrape.
        if (reported.has(`${what}:${message}`)) return;
        if (reported.size >= 100) reported.clear(); // bounded, whatever the messages hold
        reported.add(`${what}:${message}`);
        logger.warn('metrics.collect_failed', { metric: what, error: message });
      },
    });
    this.tracing =
      base === null
        ? undefined
        : new Tracing({
            resource,
            otlpTracesUrl: `${base}/v1/traces`,
            sampleRatio: config.tracesSampleRatio,
          });
    this.rpcObserver = new RpcTelemetry(this.metrics, this.tracing, logger);
  }

  /** The engine hooks: counters from job events, histograms from group commits. */
  get engineHooks() {
    return {
      onEvent: this.metrics.onEvent,
      onBatch: this.metrics.onBatch,
      onScheduleEvent: this.metrics.onScheduleEvent,
    };
  }

  /** Gives the gauges their source (the engine, once it exists). */
  observe(source: MetricsSource): void {
    this.metrics.observe(source);
  }

  /** Gives the connection metrics their source (the gRPC server, once it exists). */
  observeConnections(read: () => ConnectionCounts): void {
    this.metrics.observeConnections(read);
  }

  /** The Prometheus text exposition of every metric, collected now (what `/metrics` serves). */
  metricsText(): Promise<string> {
    return this.metrics.prometheusText();
  }

  /** Exports buffered spans and pushes metrics now (benchmarks and tests; shutdown does this too). */
  async flush(): Promise<void> {
    await Promise.all([this.metrics.flush(), this.tracing?.flush()]);
  }

  /**
   * Exports what is buffered (last metrics, pending spans) and stops; safe to
   * call twice. Waits at most `timeoutMs`: an unreachable collector must not
   * hold up the process's exit.
   */
  shutdown(timeoutMs: number): Promise<void> {
    this.stopped ??= Promise.all([this.metrics.shutdown(), this.tracing?.shutdown()]).then(
      () => {},
      (error: unknown) => {
        this.logger.warn('telemetry.flush_failed', {
          error: error instanceof Error ? error.message : String(error),
        });
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    return Promise.race([this.stopped, deadline]).finally(() => clearTimeout(timer));
  }
}

/**
 * The OTLP exporters report failures (collector down, rejected payload)
 * through OpenTelemetry's global diagnostic logger; send them to sepp's log,
 * at most once a minute per distinct message so a dead collector does not
 * flood it.
 */
function routeOtelDiagnostics(logger: Logger): void {
  const lastMs = new Map<string, number>();
  const report =
    (level: 'warn' | 'error') =>
    (message: string, ...args: unknown[]) => {
      // Errors arrive with their stacks; the message is what an operator can act on.
      const detail = [message, ...args.map((a) => (a instanceof Error ? a.message : String(a)))]
        .join(' ')
        .slice(0, 1000);
      const now = Date.now();
      if ((lastMs.get(detail) ?? -Infinity) > now - 60_000) return;
      if (lastMs.size >= 100) lastMs.clear(); // bounded, whatever the messages hold
      lastMs.set(detail, now);
      logger[level]('otel.export_problem', { detail });
    };
  const adapter: DiagLogger = {
    error: report('error'),
    warn: report('warn'),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
  diag.setLogger(adapter, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
