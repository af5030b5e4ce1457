/**
 * The server-wide limits as the engine's parts read them: one object whose
 * properties always give the values in force, so that a config reload
 * (app-reload.ts) changes them for the next call without rebuilding anything.
 * Every part that checks a call against a limit reads it from this view when
 * the call is checked, never from a copy taken at start; what is already held
 * above a lowered limit (waiters, subscribers, open batches, stored rows) is
 * kept and drains, and only new calls meet the new bound.
 *
 * A few limits are baked into what the servers were built with at start and
 * keep their running value until a restart (`restartOnlyLimits`).
 */
import { defaultEngineLimits, type EngineLimits } from './settings.ts';

/**
 * Limits a reload does not change. Both size what one message may carry, and
 * grpc.max_message_bytes and http.max_request_bytes (which the gRPC and HTTP
 * servers are built with at start) were sized to fit them: a larger
 * metadata map or result than those servers can receive or send would be
 * accepted by the check and then fail on the wire.
 */
export const restartOnlyLimits: readonly (keyof EngineLimits)[] = Object.freeze([
  'maxMetadataBytes',
  'maxResultBytes',
]);

const limitNames = Object.keys(defaultEngineLimits) as (keyof EngineLimits)[];

export class LiveLimits {
  private current: Readonly<EngineLimits>;
  /** Reads the limits in force; it cannot be written. */
  readonly view: Readonly<EngineLimits>;

  constructor(initial: Readonly<EngineLimits>) {
    this.current = Object.freeze({ ...initial });
    const view = {};
    for (const name of limitNames) {
      Object.defineProperty(view, name, { enumerable: true, get: () => this.current[name] });
    }
    this.view = Object.freeze(view) as Readonly<EngineLimits>;
  }

  /**
   * Puts `next` in force from the next call. A restart-only limit must keep
   * its value (the reload plan keeps it): a different one is a programmer error.
   */
  replace(next: Readonly<EngineLimits>): void {
    for (const name of restartOnlyLimits) {
      if (next[name] !== this.current[name])
        throw new Error(`bug: limits.${name} changes only with a restart`);
    }
    this.current = Object.freeze({ ...next });
  }
}
