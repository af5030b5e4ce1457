/**
 * A/B of two source trees' engines on the W2 shape, in one process, interleaved: one
 * caller doing reserve (waiting) → enqueue → the reserve gets the job → AckBatch of that
 * one ack, each step `--rounds` rounds on A then on B (order alternating), durability
 * relaxed so the fsync's wait does not dominate; the CPU time (process.cpuUsage) of each
 * side is added up. What a change costs the single-job path that W2 measures.
 *
 *   npx tsx bench/engine-ab-w2.ts --a /tmp/main-tree --b . [--steps 40] [--rounds 50]
 *
 * Run it with B = A too, to see its own spread. Not part of `npm test`.
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { openTreeEngine, parseArgs, type TreeEngine } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const trees = [resolve(args.get('a') ?? '.'), resolve(args.get('b') ?? '.')];
const steps = Number(args.get('steps') ?? 40);
const rounds = Number(args.get('rounds') ?? 50);
const payload = Buffer.alloc(256, 'x');

interface Side {
  dir: string;
  engine: TreeEngine;
  cpuUs: number;
}

async function open(root: string): Promise<Side> {
  return { ...(await openTreeEngine(root, 'relaxed')), cpuUs: 0 };
}

async function round({ engine }: Side): Promise<void> {
  const waiting = engine.reserve({ queues: ['w2'], waitMs: 10_000 });
  await engine.enqueue({ queue: 'w2', type: 't', payload });
  const [job] = await waiting;
  if (job === undefined) throw new Error('the waiting reserve got no job');
  await engine.ackBatch([{ jobId: job.id, attempt: job.attempt }]);
}

const sides: Side[] = [];
for (const root of trees) sides.push(await open(root));
for (let i = 0; i < steps; i++) {
  for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
    const before = process.cpuUsage();
    for (let r = 0; r < rounds; r++) await round(side);
    const spent = process.cpuUsage(before);
    side.cpuUs += spent.user + spent.system;
  }
}
const [a, b] = sides.map((side) => side.cpuUs / (steps * rounds)) as [number, number];
console.log(`A = ${trees[0]}\nB = ${trees[1]}\n${steps} steps of ${rounds} W2 rounds each`);
console.log(`W2 round: A ${a.toFixed(1)} µs, B ${b.toFixed(1)} µs CPU per round, B/A ${(b / a).toFixed(3)}`);
console.log(`load average at the end: ${loadavg()[0]?.toFixed(1)}`);
for (const side of sides) {
  side.engine.close();
  rmSync(side.dir, { recursive: true, force: true });
}
