/**
 * The OTLP exporters report failures (collector down, rejected payload) through
 * OpenTelemetry's global diagnostic logger; here they go to sepp's log as
 * `otel.export_problem`, throttled per distinct message as the server's other
 * repeating lines are (platform/repeat-throttle.ts): the first at once, then at
 * most one line a minute while it goes on, with `repeats`, the occurrences that
 * line stands for. A dead collector does not flood the log, and its line still
 * says how often the export failed.
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import { RepeatThrottles } from '../platform/repeat-throttle.ts';
import type { Logger } from './logger.ts';

/** At most one line per distinct message per minute. */
const repeatEveryMs = 60_000;
/** Distinct messages followed at once: bounded, whatever the messages hold. */
const maxMessages = 100;
/** What of a message is kept (errors arrive with stacks; the message is what an operator acts on). */
const maxDetailChars = 1000;

/** Sends OpenTelemetry's warnings and errors to `logger` from now on (it replaces any earlier one). */
export function routeOtelDiagnostics(logger: Logger, nowMs: () => number): void {
  diag.setLogger(otelDiagnostics(logger, nowMs), {
    logLevel: DiagLogLevel.WARN,
    suppressOverrideMessage: true,
  });
}

/** The diagnostic logger itself; `nowMs` is the clock the throttle reads. */
export function otelDiagnostics(logger: Logger, nowMs: () => number): DiagLogger {
  const lines = new RepeatThrottles(repeatEveryMs, maxMessages);
  const report =
    (level: 'warn' | 'error') =>
    (message: string, ...args: unknown[]) => {
      const detail = [message, ...args.map((a) => (a instanceof Error ? a.message : String(a)))]
        .join(' ')
        .slice(0, maxDetailChars);
      const repeats = lines.occurred(detail, nowMs());
      if (repeats === 0) return;
      logger[level]('otel.export_problem', { detail, ...(repeats === 1 ? {} : { repeats }) });
    };
  return {
    error: report('error'),
    warn: report('warn'),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
}
