/**
 * Durations as log-scale histograms, so that percentiles can be read from
 * buckets added together: bin 0 holds 0 ms up to 1 ms, bin i ≥ 1 holds
 * [2^((i−1)/4), 2^(i/4)) ms — four bins per doubling, the last (160: 2^40 ms,
 * 35 years) holds the rest. A percentile is read as its bin's geometric middle,
 * within 9 % of the true value (2^(1/8) − 1). Stored as JSON `[[bin, count], …]`
 * of the bins that hold something.
 */

const lastBin = 160;

export type Bins = Map<number, number>;

export function binOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(lastBin, 1 + Math.floor(4 * Math.log2(ms)));
}

export function addTo(bins: Bins, ms: number, count = 1): void {
  const bin = binOf(ms);
  bins.set(bin, (bins.get(bin) ?? 0) + count);
}

export function mergeInto(into: Bins, from: Bins): void {
  for (const [bin, count] of from) into.set(bin, (into.get(bin) ?? 0) + count);
}

export function binsToJson(bins: Bins): string | null {
  if (bins.size === 0) return null;
  return JSON.stringify([...bins].sort((a, b) => a[0] - b[0]));
}

/** Reads what binsToJson wrote; anything else (a row written by hand) adds nothing. */
export function binsFromJson(json: string | null, into: Bins = new Map()): Bins {
  if (json === null) return into;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return into;
  }
  if (!Array.isArray(parsed)) return into;
  for (const pair of parsed) {
    if (!Array.isArray(pair)) continue;
    const [bin, count] = pair as unknown[];
    if (Number.isInteger(bin) && (bin as number) >= 0 && (bin as number) <= lastBin && Number.isFinite(count))
      into.set(bin as number, (into.get(bin as number) ?? 0) + (count as number));
  }
  return into;
}

/** The `p` quantile (0 < p ≤ 1) as its bin's middle, in ms; null for no values. */
export function quantileMs(bins: Bins, p: number): number | null {
  let total = 0;
  for (const count of bins.values()) total += count;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const [bin, count] of [...bins].sort((a, b) => a[0] - b[0])) {
    seen += count;
    if (seen >= rank) return bin === 0 ? 0 : Math.round(2 ** ((bin - 0.5) / 4) * 10) / 10;
  }
  return null;
}
