/**
 * How many calls a client may cancel on one connection. Each cancel of a call
 * the server has not ended sends an HTTP/2 RST_STREAM, and Node's HTTP/2
 * server (nghttp2 1.57 and later: the rapid-reset defence, CVE-2023-44487)
 * allows each connection a bucket of 1,000 of them, refilled at 33 a second;
 * the one past it closes the connection with GOAWAY INTERNAL_ERROR (code 2),
 * which fails every call open on it (grpc-js: "Session closed with error code
 * 2"). Node 20 has no option to change the bucket (docs/configuration.md,
 * "Cancelled calls per connection").
 */
export const resetBurst = 1000;
export const resetsPerSecond = 33;

/**
 * A model of that bucket for a test that cancels many calls on one
 * connection: `take()` before each cancel waits until the reset fits. nghttp2
 * refills once a second (whole seconds), so the model may run ahead of it by
 * up to 33 resets: it keeps `reserve` of the burst unused.
 */
export class ResetPacer {
  /** Resets taken so far. */
  taken = 0;
  /** Milliseconds spent waiting for the bucket. */
  waitedMs = 0;
  private readonly capacity: number;
  private tokens: number;
  private lastMs = performance.now();

  constructor(reserve = 100) {
    this.capacity = resetBurst - reserve;
    this.tokens = this.capacity;
  }

  async take(): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.capacity, this.tokens + ((now - this.lastMs) / 1000) * resetsPerSecond);
      this.lastMs = now;
      if (this.tokens >= 1) {
        this.tokens--;
        this.taken++;
        return;
      }
      const waitMs = Math.ceil(((1 - this.tokens) / resetsPerSecond) * 1000);
      this.waitedMs += waitMs;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
