/**
 * A benchmark against a baseline checkout in the same run: each run of this tree and of the
 * baseline alternates which goes first, so that a machine growing busier (or quieter) weighs
 * on both sides alike. The load average after each run goes with the figures.
 */
import { loadavg } from 'node:os';

export interface Interleaved<F> {
  readonly base: F[];
  readonly this: F[];
  /** The 1-minute load average after each run, in order. */
  readonly loads: number[];
}

/** Runs `run` `runs` times on each side, alternating which side goes first. */
export async function interleaved<F>(
  runs: number,
  run: (side: 'base' | 'this') => Promise<F>,
): Promise<Interleaved<F>> {
  const figures: Interleaved<F> = { base: [], this: [], loads: [] };
  for (let i = 0; i < runs; i++) {
    for (const side of i % 2 === 0 ? (['base', 'this'] as const) : (['this', 'base'] as const)) {
      figures[side].push(await run(side));
      figures.loads.push(loadavg()[0] ?? 0);
    }
  }
  return figures;
}
