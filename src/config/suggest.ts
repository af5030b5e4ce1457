/** "Did you mean" for misspelt keys: the closest known key, if close enough. */

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The known key nearest to `unknown`, when the typo is small relative to the
 * key's length (a third of it, at least 2 edits), or when one is a part of the
 * other (`max_lease` → `max_lease_ms`).
 */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  const needle = unknown.toLowerCase();
  // The distance is at least the difference in length, so a name more than half again as long as
  // every key is never close enough; and comparing a 1 MiB name letter by letter would take seconds.
  const longest = Math.max(0, ...known.map((k) => k.length));
  if (needle.length > 2 * longest + 2) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(needle, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best === undefined) return undefined;
  if (bestDistance <= Math.max(2, Math.floor(needle.length / 3))) return best;
  const partial = known.filter((k) => needle.length >= 4 && (k.includes(needle) || needle.includes(k)));
  return partial.length === 1 ? partial[0] : undefined;
}
