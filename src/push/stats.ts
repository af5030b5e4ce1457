/**
 * What the admin UI shows of a push queue: where it delivers, how many
 * deliveries are open, how they went, the latest failures and the delivery
 * latency. Bounded: the last 10 failures and the last 200 latencies.
 */
import type { PushStatusView } from '../admin/index.ts';

/** The shapes the admin UI reads (src/admin/api-types.ts defines them; push reports in them). */
export type PushStatus = PushStatusView;
export type PushFailure = PushStatusView['lastErrors'][number];

const keptFailures = 10;
const keptLatencies = 200;

export class PushStats {
  private delivered = 0;
  private failures = 0;
  private dropped = 0;
  private lastSuccessAtMs: number | null = null;
  private readonly lastErrors: PushFailure[] = [];
  private readonly latencies: number[] = [];
  private next = 0;

  constructor(public url: string) {}

  succeeded(atMs: number, durationMs: number, resultDropped: boolean): void {
    this.delivered++;
    if (resultDropped) this.dropped++;
    this.lastSuccessAtMs = atMs;
    this.sample(durationMs);
  }

  failed(atMs: number, durationMs: number, failure: Omit<PushFailure, 'atMs'>): void {
    this.failures++;
    this.lastErrors.unshift({ atMs, ...failure });
    this.lastErrors.length = Math.min(this.lastErrors.length, keptFailures);
    this.sample(durationMs);
  }

  private sample(durationMs: number): void {
    if (this.latencies.length < keptLatencies) this.latencies.push(durationMs);
    else this.latencies[this.next] = durationMs;
    this.next = (this.next + 1) % keptLatencies;
  }

  view(inFlight: number, running: boolean, maxInFlight: number): PushStatus {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return {
      url: this.url,
      running,
      inFlight,
      maxInFlight,
      delivered: this.delivered,
      failed: this.failures,
      resultsDropped: this.dropped,
      lastSuccessAtMs: this.lastSuccessAtMs,
      lastErrors: this.lastErrors.map((e) => ({ ...e })),
      latency:
        sorted.length === 0
          ? null
          : {
              samples: sorted.length,
              p50Ms: at(0.5),
              p95Ms: at(0.95),
              maxMs: sorted[sorted.length - 1] ?? 0,
            },
    };
  }
}
