/**
 * Telemetry as the composition root sees it: built from the config before
 * the engine (which reports into it), then given the engine to read gauges
 * from, rebuilt when a config reload changes the exporters, then shut down —
 * flushing the last OTLP exports — after the gRPC server has stopped.
 */
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { TelemetryConfig } from '../config/index.ts';
import type { ScheduleEvent } from '../engine/schedules/types.ts';
import type { CommitStats, JobEvent } from '../engine/types.ts';
import { RepeatThrottles } from '../platform/repeat-throttle.ts';
import type { StoreFiles } from '../store/store.ts';
import type { AnswerCounts } from './answer-metrics.ts';
import type { ConnectionCounts } from './connection-metrics.ts';
import type { HttpDoorCounts } from './http-door-metrics.ts';
import type { Logger } from './logger.ts';
import { Metrics, type MetricsSource } from './metrics.ts';
import { routeOtelDiagnostics } from './otel-diagnostics.ts';
import { loadOtlpExporters, type OtlpExporters } from './otlp-exporters.ts';
import { RpcTelemetry } from './rpc-observer.ts';
import { Tracing } from './tracing.ts';

/** A gauge that keeps failing is logged at most once a minute (with the failures since). */
const collectErrorEveryMs = 60_000;

export interface TelemetryDeps {
  logger: Logger;
  /** The store's files, for the file-size gauges (a store without files has none). */
  storeFiles: StoreFiles | undefined;
  /** `service.version` of everything exported. */
  version: string;
  /** The clock the log throttles read (default: the wall clock). */
  nowMs?: () => number;
}

export class Telemetry {
  private currentMetrics: Metrics;
  /** Undefined when no OTLP endpoint is configured: then no span is ever created. */
  private currentTracing: Tracing | undefined;
  /** Pass to the rpc server as its observer. */
  readonly rpcObserver: RpcTelemetry;
  private stopped: Promise<void> | undefined;
  private readonly logger: Logger;
  private source: MetricsSource | undefined;
  private connections: (() => ConnectionCounts) | undefined;
  private storeAvailable: (() => boolean) | undefined;
  private httpDoors: (() => HttpDoorCounts) | undefined;
  private answers: (() => AnswerCounts) | undefined;
  /** The settings the exporters were built with. */
  private config: TelemetryConfig;

  /** Loads the OTLP exporters first when an endpoint is configured (otlp-exporters.ts). */
  static async open(config: TelemetryConfig, deps: TelemetryDeps): Promise<Telemetry> {
    return new Telemetry(config, deps, config.otlpEndpoint === null ? undefined : await loadOtlpExporters());
  }

  private constructor(
    config: TelemetryConfig,
    private readonly deps: TelemetryDeps,
    /** Loaded once an OTLP endpoint is configured, kept for later reloads. */
    private otlpExporters: OtlpExporters | undefined,
  ) {
    this.logger = deps.logger;
    this.config = config;
    const built = this.build(config);
    this.currentMetrics = built.metrics;
    this.currentTracing = built.tracing;
    this.rpcObserver = new RpcTelemetry(this.currentMetrics, this.currentTracing, deps.logger);
  }

  get metrics(): Metrics {
    return this.currentMetrics;
  }

  get tracing(): Tracing | undefined {
    return this.currentTracing;
  }

  private build(config: TelemetryConfig): { metrics: Metrics; tracing: Tracing | undefined } {
    const { logger } = this.deps;
    const resource = resourceFromAttributes({
      'service.name': config.serviceName,
      'service.version': this.deps.version,
    });
    const base = config.otlpEndpoint?.replace(/\/+$/, '') ?? null;
    const nowMs = this.deps.nowMs ?? Date.now;
    if (base !== null) routeOtelDiagnostics(logger, nowMs);
    const exporters = this.otlpExporters;
    if (base !== null && exporters === undefined) throw new Error('the OTLP exporters are not loaded');
    // Once per distinct problem and minute: a broken gauge would otherwise log on every scrape.
    const collectErrors = new RepeatThrottles(collectErrorEveryMs, 100);
    const metrics = new Metrics({
      resource,
      otlpMetrics:
        base === null || exporters === undefined
          ? null
          : { url: `${base}/v1/metrics`, Exporter: exporters.OTLPMetricExporter },
      exportIntervalMs: config.metricsExportIntervalMs,
      storeFiles: this.deps.storeFiles,
      onCollectError: (what, error) => {
        const message = error instanceof Error ? error.message : String(error);
        const repeats = collectErrors.occurred(`${what}:${message}`, nowMs());
        if (repeats === 0) return;
        logger.warn('metrics.collect_failed', {
          metric: what,
          error: message,
          ...(repeats === 1 ? {} : { repeats }),
        });
      },
    });
    if (this.source !== undefined) metrics.observe(this.source);
    if (this.connections !== undefined) metrics.observeConnections(this.connections);
    if (this.storeAvailable !== undefined) metrics.observeStoreHealth(this.storeAvailable);
    if (this.httpDoors !== undefined) metrics.observeHttpDoors(this.httpDoors);
    if (this.answers !== undefined) metrics.observeAnswers(this.answers);
    const tracing =
      base === null || exporters === undefined
        ? undefined
        : new Tracing({
            resource,
            otlpTracesUrl: `${base}/v1/traces`,
            Exporter: exporters.OTLPTraceExporter,
            sampleRatio: config.tracesSampleRatio,
          });
    return { metrics, tracing };
  }

  /**
   * New telemetry settings (a config reload). When the exporters' settings
   * changed (OTLP endpoint, service name, sample ratio, push interval), new
   * exporters take over at once and the old ones send what they hold and stop;
   * the metrics start from zero then, as after a restart (Prometheus's rate()
   * and OTLP's start times handle that). Returns whether anything was rebuilt.
   */
  async reconfigure(config: TelemetryConfig): Promise<boolean> {
    if (config.otlpEndpoint !== null && this.otlpExporters === undefined) {
      this.otlpExporters = await loadOtlpExporters();
    }
    const exporterKeys = [
      'otlpEndpoint',
      'serviceName',
      'tracesSampleRatio',
      'metricsExportIntervalMs',
    ] as const;
    const same = exporterKeys.every((key) => this.config[key] === config[key]);
    this.config = config;
    if (same || this.stopped !== undefined) return false;
    const old = { metrics: this.currentMetrics, tracing: this.currentTracing };
    const built = this.build(config);
    this.currentMetrics = built.metrics;
    this.currentTracing = built.tracing;
    this.rpcObserver.use(built.metrics, built.tracing);
    Promise.all([old.metrics.shutdown(), old.tracing?.shutdown()]).catch((error: unknown) => {
      this.logger.warn('telemetry.flush_failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    });
    return true;
  }

  /**
   * The engine hooks: counters from job events, histograms from group commits. Made once (a
   * job event runs them, so a getter making new closures on each read cost CPU per job); they
   * reach the metrics through `this`, so after a reload replaces the metrics they count there.
   */
  readonly engineHooks: {
    readonly onEvent: (event: JobEvent) => void;
    readonly onBatch: (stats: CommitStats) => void;
    readonly onScheduleEvent: (event: ScheduleEvent) => void;
  } = Object.freeze({
    onEvent: (event: JobEvent) => this.currentMetrics.onEvent(event),
    onBatch: (stats: CommitStats) => this.currentMetrics.onBatch(stats),
    onScheduleEvent: (event: ScheduleEvent) => this.currentMetrics.onScheduleEvent(event),
  });

  /**
   * What src/push reports each delivery to (its PushObserver; the shape is
   * repeated, not imported: telemetry and push may not import each other).
   */
  get pushObserver(): { delivered(queue: string, outcome: string, durationMs: number): void } {
    return {
      delivered: (queue, outcome, durationMs) => this.currentMetrics.recordPush(queue, outcome, durationMs),
    };
  }

  /** Gives the gauges their source (the engine, once it exists). */
  observe(source: MetricsSource): void {
    this.source = source;
    this.currentMetrics.observe(source);
  }

  /** Gives the connection metrics their source (the gRPC server, once it exists). */
  observeConnections(read: () => ConnectionCounts): void {
    this.connections = read;
    this.currentMetrics.observeConnections(read);
  }

  /** Gives the HTTP doors' counters their source (the admin port and the HTTP API, once they listen). */
  observeHttpDoors(read: () => HttpDoorCounts): void {
    this.httpDoors = read;
    this.currentMetrics.observeHttpDoors(read);
  }

  /** Gives the answers-beyond-their-room counter its source (the gRPC server and the HTTP API). */
  observeAnswers(read: () => AnswerCounts): void {
    this.answers = read;
    this.currentMetrics.observeAnswers(read);
  }

  /** Gives the store-availability gauge its source (the app's outage tracker). */
  observeStoreHealth(read: () => boolean): void {
    this.storeAvailable = read;
    this.currentMetrics.observeStoreHealth(read);
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
