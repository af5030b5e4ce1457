/**
 * W5's ack batch as statements alone (issue 33, docs/decisions/0012 (k)): the SQLite store's
 * statements on two databases in one process, finely interleaved, side A as the engine runs them
 * and side B as `--variant` would.
 *
 * Each step stores one flow of `--children` → 1. Its children are already leased (attempt 1,
 * flagged as depended on) and its collector waits on them through its edges. The step then acks
 * the oldest `--chunk` leased children, once `--backlog` flows are leased. Each ack batch runs
 * the multi-row DELETE (it misses every ack: each job is in a workflow), `completeDependedOnMany`
 * (kept completed) and `releaseCompleted`. Then the step sweeps as many completed children,
 * deletes the released collectors and commits. WAL, synchronous NORMAL, no fsync. The CPU time
 * of each measured part (process.cpuUsage) is added to its side, and the sides' order alternates.
 *
 *   npx tsx bench/ack-statements.ts [--variant same|kept-first|by-seq] [--runs 5] [--steps 400]
 *                                   [--backlog 50] [--chunk 25] [--children 20]
 *
 * Variants (side B):
 *   same        as A: the harness's own spread
 *   kept-first  no DELETE: the kept completion alone (the engine's order after a kept batch)
 *   by-seq      as kept-first, with each job found by its seq (the rowid) and checked by id,
 *               not found through the id index: what an ack that knew the seq would cost
 *               (not built: an ack names the job's id)
 *
 * Prints CPU µs per acked child for each part and side, per run, and B / A as medians of runs.
 * Not part of `npm test`.
 */
import { loadavg, tmpdir } from 'node:os';
import type Database from 'better-sqlite3';
import { jobsWaitOnIt, waitsOnJobs } from '../src/store/dependencies.ts';
import type { Op } from '../src/store/op.ts';
import { dependencyOps, prepareDependencyStatements } from '../src/store/sqlite/dependencies.ts';
import { prepareAckDeletes, prepareKeptCompletes } from '../src/store/sqlite/leases.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';
import { StatementDb, stepInterleaved } from './lib/statement-db.ts';

const args = parseArgs(process.argv.slice(2));
const variant = args.get('variant') ?? 'same';
const runs = Number(args.get('runs') ?? 5);
const steps = Number(args.get('steps') ?? 400);
const backlog = Number(args.get('backlog') ?? 50);
const chunk = Number(args.get('chunk') ?? 25);
const children = Number(args.get('children') ?? 20);
if (!['same', 'kept-first', 'by-seq'].includes(variant)) throw new Error(`--variant ${variant}: unknown`);

const parts = ['delete', 'kept', 'release', 'commit'] as const;
type Part = (typeof parts)[number];

/** Runs a store operation (a generator that yields nothing on SQLite) to its result. */
function drain<T>(op: Op<T>): T {
  for (;;) {
    const next = op.next();
    if (next.done === true) return next.value;
  }
}

class Side {
  private readonly store = new StatementDb('sepp-bench-acks-');
  readonly db = this.store.db;
  readonly cpuUs: Record<Part, number> = { delete: 0, kept: 0, release: 0, commit: 0 };
  private readonly leased: { jobId: string; attempt: number; seq: number }[] = [];
  private readonly insertJob: Database.Statement<unknown[], number>;
  private readonly insertEdge: Database.Statement<[number, string, string]>;
  private readonly sweep: Database.Statement;
  private readonly deletes;
  private readonly kept;
  private readonly deps;
  /** by-seq's statement, by batch size. */
  private readonly bySeq = new Map<number, Database.Statement<unknown[], unknown[]>>();

  constructor(readonly variant: string) {
    this.insertJob = this.db
      .prepare<unknown[], number>(
        `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms,
                           run_at_ms, attempt, lease_deadline_ms, leased_at_ms, worker_id, dependency_flags)
         VALUES (?, 'w5', ?, ?, 0, x'', 'application/octet-stream', 3, 1, 1, ?, ?, ?, ?, ?) RETURNING seq`,
      )
      .pluck();
    this.insertEdge = this.db.prepare(
      "INSERT INTO job_dependencies (child_seq, parent_id, state, policy, name) VALUES (?, ?, 'pending', 'cancel', ?)",
    );
    this.sweep = this.db.prepare(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE state = 'completed' ORDER BY completed_at_ms LIMIT ${chunk})`,
    );
    this.deletes = prepareAckDeletes(this.db);
    this.kept = prepareKeptCompletes(this.db);
    this.deps = dependencyOps(prepareDependencyStatements(this.db));
  }

  private timed<T>(part: Part | null, body: () => T): T {
    if (part === null) return body();
    const before = process.cpuUsage();
    const result = body();
    const used = process.cpuUsage(before);
    this.cpuUs[part] += used.user + used.system;
    return result;
  }

  private keptBySeq(acks: readonly { jobId: string; attempt: number; seq: number }[]): unknown[] {
    let statement = this.bySeq.get(acks.length);
    if (statement === undefined) {
      const tuples = Array.from({ length: acks.length }, () => '(?, ?, ?, ?)').join(', ');
      statement = this.db
        .prepare<unknown[], unknown[]>(
          `UPDATE jobs SET state = 'completed', completed_at_ms = v.column4, lease_deadline_ms = NULL,
                           result = NULL, result_content_type = NULL
             FROM (VALUES ${tuples}) AS v
            WHERE jobs.seq = v.column1 AND jobs.id = v.column2 AND jobs.attempt = v.column3
              AND jobs.state = 'leased' AND jobs.cancelled_at_ms IS NULL AND jobs.dependency_flags & ${jobsWaitOnIt} <> 0
            RETURNING id, queue, type, run_at_ms, leased_at_ms, worker_id, dependency_flags`,
        )
        .raw(true);
      this.bySeq.set(acks.length, statement);
    }
    return statement.all(acks.flatMap((ack) => [ack.seq, ack.jobId, ack.attempt, 1]));
  }

  step(measured: boolean): void {
    const at = (part: Part) => (measured ? part : null);
    this.db.exec('BEGIN');
    const parents: string[] = [];
    for (let c = 0; c < children; c++) {
      const jobId = this.store.id();
      parents.push(jobId);
      const seq = this.insertJob.get(jobId, 'child', 'leased', 1, 10, 1, 'w', jobsWaitOnIt)!;
      this.leased.push({ jobId, attempt: 1, seq });
    }
    const collector = this.insertJob.get(
      this.store.id(),
      'collector',
      'waiting',
      0,
      null,
      null,
      null,
      waitsOnJobs,
    )!;
    parents.forEach((parentId, i) => {
      this.insertEdge.run(collector, parentId, `c${i}`);
    });
    while (this.leased.length > backlog * children) {
      const acks = this.leased.splice(0, chunk);
      if (this.variant === 'same') {
        const deleted = this.timed(at('delete'), () => this.deletes.all(acks));
        if (deleted.length !== 0) throw new Error(`the DELETE matched ${deleted.length} jobs in a workflow`);
      }
      const kept = this.timed(at('kept'), () =>
        this.variant === 'by-seq'
          ? this.keptBySeq(acks)
          : this.kept.all(
              acks.map((ack) => ({ ...ack, result: null, resultContentType: null })),
              1,
            ),
      );
      if (kept.length !== acks.length) throw new Error(`kept ${kept.length} of ${acks.length}`);
      const parentIds = acks.map((ack) => ack.jobId);
      this.timed(at('release'), () => drain(this.deps.releaseCompleted!({ parentIds, nowMs: 1 })));
      this.sweep.run();
    }
    this.db.exec(
      "DELETE FROM job_dependencies WHERE child_seq IN (SELECT seq FROM jobs WHERE state = 'ready' AND type = 'collector')",
    );
    this.db.exec("DELETE FROM jobs WHERE state = 'ready' AND type = 'collector'");
    this.timed(at('commit'), () => this.db.exec('COMMIT'));
  }

  close(): void {
    this.store.close();
  }
}

const perRun: [Record<Part, number>, Record<Part, number>][] = [];
const loads: number[] = [];
for (let run = 0; run < runs; run++) {
  const sides = [new Side('same'), new Side(variant)] as const;
  const warmupSteps = backlog + 50;
  loads.push(loadavg()[0]!);
  stepInterleaved(sides, run, warmupSteps, steps);
  loads.push(loadavg()[0]!);
  const acked = steps * children;
  const [a, b] = sides.map((side) => {
    const perChild = {} as Record<Part, number>;
    for (const part of parts) perChild[part] = side.cpuUs[part] / acked;
    side.close();
    return perChild;
  }) as [Record<Part, number>, Record<Part, number>];
  perRun.push([a, b]);
  console.log(
    `run ${run + 1}: ${parts.map((p) => `${p} ${a[p].toFixed(2)} / ${b[p].toFixed(2)}`).join(', ')} µs per acked child (A / B); load ${loadavg()[0]!.toFixed(1)}`,
  );
}

const total = (r: Record<Part, number>) => parts.reduce((sum, p) => sum + r[p], 0);
const rows = [
  ...parts.map((p) => [p, (r: Record<Part, number>) => r[p]] as const),
  ['total', total] as const,
];
console.log(
  `\n### W5's ack batch as statements: CPU µs per acked child, B = ${variant}, medians of ${runs} runs\n`,
);
console.log(
  markdownTable(
    ['part', 'A (as the engine runs them)', `B (${variant})`, 'B / A (median of runs)'],
    rows.map(([name, value]) => [
      name,
      median(perRun.map(([a]) => value(a))).toFixed(2),
      median(perRun.map(([, b]) => value(b))).toFixed(2),
      median(perRun.map(([a, b]) => (value(a) > 0 ? value(b) / value(a) : 0))).toFixed(3),
    ]),
  ),
);
console.log(
  `\n${steps} steps of one flow of ${children} → 1 after ${backlog + 50} not counted, ${backlog} flows leased, ` +
    `acks in batches of ${chunk}; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}.`,
);
for (const line of machineDescription(tmpdir())) console.log(line);
