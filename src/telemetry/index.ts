/** The telemetry layer's public face for the composition root. */
export { createLogger, type Logger, type LogLevel, silentLogger } from './logger.ts';
export { type MetricsSource, prometheusContentType } from './metrics.ts';
export { Telemetry, type TelemetryDeps } from './telemetry.ts';
