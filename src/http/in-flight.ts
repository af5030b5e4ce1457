/**
 * Bytes in flight: request bodies the server is reading or holding while it
 * handles them, counted over the whole server and per API key (every caller
 * without a key counts as one). A request whose body would go past either
 * bound is refused before its body is read (429, Retry-After), so no caller,
 * or set of callers, can make the server hold more than the configured bytes;
 * the bytes are given back when the answer is done.
 */
export class InFlightBytes {
  private total = 0;
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly limits: { readonly maxInFlightBytes: number; readonly maxInFlightBytesPerKey: number },
  ) {}

  /** Takes `bytes` for `key`; false (nothing taken) when a bound would be passed. */
  take(key: string, bytes: number): boolean {
    if (bytes === 0) return true;
    const held = this.byKey.get(key) ?? 0;
    if (held + bytes > this.limits.maxInFlightBytesPerKey) return false;
    if (this.total + bytes > this.limits.maxInFlightBytes) return false;
    this.byKey.set(key, held + bytes);
    this.total += bytes;
    return true;
  }

  give(key: string, bytes: number): void {
    if (bytes === 0) return;
    const held = (this.byKey.get(key) ?? 0) - bytes;
    if (held < 0 || this.total - bytes < 0) throw new Error('bug: more bytes given back than taken');
    if (held === 0) this.byKey.delete(key);
    else this.byKey.set(key, held);
    this.total -= bytes;
  }

  /** Bytes held now, overall and by key (tests, diagnostics). */
  get held(): { total: number; keys: number } {
    return { total: this.total, keys: this.byKey.size };
  }
}
