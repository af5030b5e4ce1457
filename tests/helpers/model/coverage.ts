/** How often each interesting thing happened, across all runs: printed, so a model that stops reaching states shows. */
export const coverage = new Map<string, number>();
export function saw(what: string, times = 1): void {
  if (times > 0) coverage.set(what, (coverage.get(what) ?? 0) + times);
}
