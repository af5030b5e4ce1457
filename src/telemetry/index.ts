/** The telemetry layer's public face for the composition root. */
export { type Logger, type LogLevel, silentLogger } from './logger.ts';
export { prometheusContentType } from './metrics.ts';
export { Telemetry } from './telemetry.ts';
