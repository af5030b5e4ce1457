/**
 * The store's health as the maintenance loop sees it, and its log lines in an outage.
 *
 * Maintenance retries a failed pass each second, so a store that stops answering (PostgreSQL
 * down) would log `maintenance.failed` once or twice a second for as long as it lasts. Here
 * the first failure is logged at once, then at most one line per `repeatEveryMs` (a minute)
 * with the failures since the last line, and one `maintenance.recovered` when a pass works
 * again. What it saw is what the dashboard shows (`storeHealth` in GET /api/v1/overview),
 * without where the store is; the log line's `detail` says where: the driver's words, or, when
 * they name no address ("terminating connection due to administrator command"), the error with
 * the address the store is connected to (`storeAt`).
 */
import type { StoreHealth } from './admin/index.ts';
import type { Clock } from './engine/clock.ts';
import { RepeatThrottle } from './platform/repeat-throttle.ts';
import { storageLogMessage } from './store/store.ts';
import type { Logger } from './telemetry/index.ts';

/** At most one `maintenance.failed` line per minute while failures go on. */
const repeatEveryMs = 60_000;

export class StoreOutage {
  private sinceMs: number | null = null;
  private lastError: string | null = null;
  private failures = 0;
  private readonly lines = new RepeatThrottle(repeatEveryMs);

  constructor(
    private readonly logger: Logger,
    private readonly clock: Pick<Clock, 'nowMs'>,
    /** Where the store is (PostgreSQL: host:port), for the log only; undefined: nothing to say. */
    private readonly storeAt: () => string | undefined = () => undefined,
  ) {}

  /** A maintenance pass (or the history's write) failed. */
  failed(error: { message: string }): void {
    const nowMs = this.clock.nowMs();
    this.lastError = error.message;
    this.failures++;
    this.sinceMs ??= nowMs;
    const told = this.lines.occurred(nowMs);
    if (told === 0) return;
    const at = this.storeAt();
    const words = storageLogMessage(error);
    const detail =
      at === undefined || (words ?? error.message).includes(at)
        ? words
        : `${words ?? error.message} (the store at ${at})`;
    this.logger.warn('maintenance.failed', {
      error: error.message,
      ...(detail === undefined ? {} : { detail }),
      failures: told,
      failing_for_ms: nowMs - this.sinceMs,
    });
  }

  /** A maintenance pass committed: one line if it ends an outage. Cheap when nothing failed. */
  passed(): void {
    if (this.sinceMs === null) return;
    this.logger.info('maintenance.recovered', {
      failures: this.failures,
      failed_for_ms: this.clock.nowMs() - this.sinceMs,
      last_error: this.lastError,
    });
    this.sinceMs = null;
    this.lastError = null;
    this.failures = 0;
    this.lines.reset();
  }

  health(): StoreHealth {
    return {
      available: this.sinceMs === null,
      unavailableSinceMs: this.sinceMs,
      lastError: this.lastError,
      failures: this.failures,
    };
  }
}
