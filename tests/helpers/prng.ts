/** Seeded randomness for tests that print their seed so that a failure can be replayed. */

/** mulberry32: a small, good, seedable PRNG; each call gives the next number in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Integers from `min` to `max`, both included, drawn from `random`. */
export function intsFrom(random: () => number): (min: number, max: number) => number {
  return (min, max) => min + Math.floor(random() * (max - min + 1));
}

/** The seed in environment variable `name` (to replay a run), or a fresh one. */
export function seedFromEnv(name: string): number {
  const given = process.env[name];
  return given === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(given);
}
