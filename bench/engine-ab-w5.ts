/**
 * A/B of two source trees' engines on W5's flows (issue 33), in one process, finely
 * interleaved: the engine's CPU per edge of `--flows` flows of `--children` → 1 (20 → 1)
 * per step, enqueued with `--producers` concurrent enqueueFlow calls, then leased and acked
 * (reserve of up to 50, ackBatch of what came) until every collector is acked. No gRPC:
 * what the engine and the store cost a flow, which the whole server's W5 figure
 * (bench/w5-flows.ts) buries under the RPC layer on a loaded machine. Each step runs on A
 * and then on B, the order alternating; the CPU time (process.cpuUsage) of each is added
 * to its tree. Run it with B = A too, to see the harness's own spread.
 *
 *   npx tsx bench/engine-ab-w5.ts --a /tmp/main-tree --b . [--steps 40] [--flows 10] [--children 20]
 *                                 [--ack-chunk 50]
 *
 * --ack-chunk N acks what a reserve returned in AckBatches of N (the last one smaller): W5's
 * Worker sends many of 5, 20 and 25 (docs/decisions/0012, (h)).
 *
 * TREE is a checkout with node_modules reachable from it. Prints CPU µs per edge for the
 * enqueue and for the drain (lease + ack, with the releases), and B / A. Not part of `npm test`.
 */
import { resolve } from 'node:path';
import { abLine, type TreeEngine as Engine, endAb, openTreeEngine, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const trees = [resolve(args.get('a') ?? '.'), resolve(args.get('b') ?? '.')];
const steps = Number(args.get('steps') ?? 40);
const flows = Number(args.get('flows') ?? 10);
const children = Number(args.get('children') ?? 20);
const ackChunk = Number(args.get('ack-chunk') ?? 50);
const warmup = 4;
const phases = ['enqueue', 'drain'] as const;
type Phase = (typeof phases)[number];

interface Side {
  dir: string;
  engine: Engine;
  cpuUs: Record<Phase, number>;
}

const payload = Buffer.alloc(0);
const flow = () => {
  const names = Array.from({ length: children }, (_, i) => `c${i}`);
  return [
    ...names.map((name) => ({ name, queue: 'w5', type: 'child', payload })),
    { name: 'collector', queue: 'w5', type: 'collector', payload, after: names },
  ];
};

async function enqueue(side: Side): Promise<void> {
  const results = await Promise.all(Array.from({ length: flows }, () => side.engine.enqueueFlow(flow())));
  for (const result of results) if (!result.committed) throw new Error(JSON.stringify(result.rejections[0]));
}

/** Leases and acks until nothing is ready: the children, then the collectors they released. */
async function drain(side: Side): Promise<number> {
  let acked = 0;
  for (;;) {
    const leased = await side.engine.reserve({ queues: ['w5'], maxJobs: 50, leaseMs: 3_600_000 });
    if (leased.length === 0) return acked;
    for (let at = 0; at < leased.length; at += ackChunk) {
      const chunk = leased.slice(at, at + ackChunk);
      await side.engine.ackBatch(chunk.map((job) => ({ jobId: job.id, attempt: job.attempt })));
    }
    acked += leased.length;
  }
}

async function timed(side: Side, phase: Phase | null, run: () => Promise<unknown>): Promise<void> {
  const before = process.cpuUsage();
  await run();
  const spent = process.cpuUsage(before);
  if (phase !== null) side.cpuUs[phase] += spent.user + spent.system;
}

const sides: Side[] = [];
for (const root of trees) {
  const { dir, engine } = await openTreeEngine(root, 'full');
  sides.push({ dir, engine, cpuUs: { enqueue: 0, drain: 0 } });
}
const [a, b] = sides as [Side, Side];
for (let i = 0; i < warmup + steps; i++) {
  for (const side of i % 2 === 0 ? [a, b] : [b, a]) {
    const counted = i >= warmup;
    await timed(side, counted ? 'enqueue' : null, () => enqueue(side));
    await timed(side, counted ? 'drain' : null, async () => {
      const acked = await drain(side);
      if (acked !== flows * (children + 1))
        throw new Error(`drained ${acked} jobs, expected ${flows * (children + 1)}`);
    });
  }
}
const edges = steps * flows * children;
console.log(
  `A = ${trees[0]}\nB = ${trees[1]}\n${steps} steps of ${flows} flows of ${children} → 1 (after ${warmup} not counted), acks in batches of ${ackChunk}`,
);
for (const phase of [...phases, 'total'] as const) {
  const of = (side: Side) => (phase === 'total' ? side.cpuUs.enqueue + side.cpuUs.drain : side.cpuUs[phase]);
  const [usA, usB] = [of(a) / edges, of(b) / edges];
  console.log(abLine(phase, usA, usB, 'edge'));
}
endAb(sides);
