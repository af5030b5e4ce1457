/**
 * Two codings of the same messages, A/B in one process: each case runs both sides `batches` times
 * a round, the sides' order alternating by round, and prints the medians of the rounds' CPU µs per
 * job (`perBatch` jobs a run) and how many rounds side B was the cheaper. bench/work-codec.ts (the
 * server's codecs) and bench/sdk-work-codec.ts (the SDK Worker's) use it.
 */
import { median } from '../engine-lib.ts';

/** One case: side A's and side B's run, each returning something that is not 0 (so nothing is optimised away). */
export type CodecCase = readonly [a: () => number, b: () => number];

export function compareCodecs(
  names: readonly [a: string, b: string],
  cases: Readonly<Record<string, CodecCase>>,
  options: { rounds: number; batches: number; perBatch: number },
): void {
  const { rounds, batches, perBatch } = options;
  for (const [label, sides] of Object.entries(cases)) {
    const samples: [number[], number[]] = [[], []];
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const run = sides[side]!;
        const start = process.cpuUsage();
        let check = 0;
        for (let b = 0; b < batches; b++) check += run();
        const used = process.cpuUsage(start);
        if (check === 0) throw new Error(`${label}: nothing done`);
        samples[side]!.push((used.user + used.system) / (batches * perBatch));
      }
    }
    const [a, b] = [median(samples[0]), median(samples[1])];
    const cheaper = samples[1].filter((d, i) => d < samples[0][i]!).length;
    console.log(
      `${label}: ${names[0]} ${a.toFixed(3)}, ${names[1]} ${b.toFixed(3)} µs CPU per job (medians of ${rounds}; rounds where ${names[1]} is cheaper: ${cheaper}/${rounds})`,
    );
  }
}
