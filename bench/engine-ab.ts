/**
 * A/B of two source trees' engines on the W1 operations, in one process, finely
 * interleaved: what a change costs a queue that does not use it. Both engines
 * run side by side (each on its own data directory, durability full, no limits,
 * no groups, a backlog of 40,000 jobs); each step is one batch of `--batch`
 * concurrent calls (one commit) on A and then on B, the order alternating, and
 * the CPU time (process.cpuUsage) of each is added to its tree. Leases are 1 h
 * long, so none expires before its ack on a slow machine. A shared,
 * loaded machine slows both sides alike within a step, which separate runs
 * minutes apart do not; run it with B = A too, to see the harness's own spread.
 *
 *   npx tsx bench/engine-ab.ts --a /tmp/main-tree --b . [--batches 60] [--batch 500] [--per-call 1]
 *
 * --per-call N makes each call carry N jobs, as the server's calls do in W1 (the SDK
 * coalesces enqueues into EnqueueBatch, a Worker reserves up to its credit and acks a
 * Work message's acks with one AckBatch): enqueueBatch of N, reserve of up to N, ackBatch
 * of N.
 *
 * TREE is a checkout (or `git archive` copy) with node_modules reachable from
 * it. Prints CPU µs per job for enqueue, reserve(1) and ack, and B / A.
 * Not part of `npm test`.
 */
import { resolve } from 'node:path';
import { abLine, type TreeEngine as Engine, endAb, openTreeEngine, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const trees = [resolve(args.get('a') ?? '.'), resolve(args.get('b') ?? '.')];
const batches = Number(args.get('batches') ?? 60);
const batch = Number(args.get('batch') ?? 500);
const perCall = Number(args.get('per-call') ?? 1);
const calls = Math.ceil(batch / perCall);
const payload = Buffer.alloc(256, 'x');
const ops = ['enqueue', 'reserve', 'ack'] as const;
type Op = (typeof ops)[number];

interface Side {
  dir: string;
  engine: Engine;
  leased: { id: string; attempt: number }[];
  cpuUs: Record<Op, number>;
}

async function open(root: string): Promise<Side> {
  const { dir, engine } = await openTreeEngine(root, 'full');
  for (let i = 0; i < 40; i++) {
    await engine.enqueueBatch(Array.from({ length: 1000 }, () => ({ queue: 'w1', type: 't', payload })));
  }
  return { dir, engine, leased: [], cpuUs: { enqueue: 0, reserve: 0, ack: 0 } };
}

async function step(side: Side, op: Op, b: number): Promise<void> {
  const { engine } = side;
  if (perCall === 1) {
    await stepSingle(side, op, b);
  } else if (op === 'enqueue') {
    const jobs = () => Array.from({ length: perCall }, () => ({ queue: 'w1', type: 't', payload }));
    await Promise.all(Array.from({ length: calls }, () => engine.enqueueBatch(jobs())));
  } else if (op === 'reserve') {
    const got = await Promise.all(
      Array.from({ length: calls }, () =>
        engine.reserve({ queues: ['w1'], maxJobs: perCall, leaseMs: 3_600_000 }),
      ),
    );
    side.leased.push(...got.flat());
  } else {
    const settle = side.leased.slice(b * batch, (b + 1) * batch).map((job) => ({
      jobId: job.id,
      attempt: job.attempt,
    }));
    await Promise.all(
      Array.from({ length: calls }, (_, i) => engine.ackBatch(settle.slice(i * perCall, (i + 1) * perCall))),
    );
  }
}

/** One job per call, through the single-job calls. */
async function stepSingle(side: Side, op: Op, b: number): Promise<void> {
  const { engine } = side;
  if (op === 'enqueue') {
    await Promise.all(
      Array.from({ length: batch }, () => engine.enqueue({ queue: 'w1', type: 't', payload })),
    );
  } else if (op === 'reserve') {
    const got = await Promise.all(
      Array.from({ length: batch }, () => engine.reserve({ queues: ['w1'], leaseMs: 3_600_000 })),
    );
    side.leased.push(...got.flat());
  } else {
    const settle = side.leased.slice(b * batch, (b + 1) * batch);
    await Promise.all(settle.map((job) => engine.ack({ jobId: job.id, attempt: job.attempt })));
  }
}

const sides: Side[] = [];
for (const root of trees) sides.push(await open(root));
const [a, b] = sides as [Side, Side];
for (const op of ops) {
  for (let i = 0; i < batches; i++) {
    for (const side of i % 2 === 0 ? [a, b] : [b, a]) {
      const before = process.cpuUsage();
      await step(side, op, i);
      const spent = process.cpuUsage(before);
      side.cpuUs[op] += spent.user + spent.system;
    }
  }
}
const jobs = calls * perCall * batches;
console.log(
  `A = ${trees[0]}\nB = ${trees[1]}\n${batches} steps of ${calls} calls of ${perCall} job(s) per operation`,
);
for (const op of ops) {
  const [usA, usB] = [a.cpuUs[op] / jobs, b.cpuUs[op] / jobs];
  console.log(abLine(op, usA, usB, 'job'));
}
endAb(sides);
