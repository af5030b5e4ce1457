/** Reading figures out of a Prometheus text exposition (what sepp's `/metrics` serves). */

/** Sums every sample of one Prometheus series name (all label sets) in `/metrics` text. */
export function sumSeries(metrics: string, name: string, labelFilter?: string): number {
  let total = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (labelFilter !== undefined && !rest.includes(labelFilter)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total += value;
  }
  return total;
}
