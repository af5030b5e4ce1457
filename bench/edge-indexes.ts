/**
 * A dependency edge's B-trees (migration 0022, issue 33): the SQLite store's own edge
 * statements on two databases in one process, one with the schema as it is and one with
 * `job_dependencies_pending` created again (the schema before 0022), finely interleaved.
 *
 * Each step stores `--flows-per-step` flows of `--children` → 1 (the jobs by a plain INSERT,
 * the same on both sides, then the collector's edges by `Dependencies.add`), and ends as many
 * flows stored `--backlog` flows before: their children completed (the same UPDATE on both
 * sides), what waits on them released (`releaseCompleted`), the collector's edges forgotten
 * (`forget`) and its row deleted, as an ack batch of W5 does. One commit per step per side
 * (WAL, synchronous NORMAL, no fsync: the commit's CPU is its page writes). The CPU time of
 * each measured part (process.cpuUsage) is added to its side; the sides' order alternates.
 *
 *   npx tsx bench/edge-indexes.ts [--runs 3] [--steps 1500] [--backlog 500] [--children 20]
 *                                 [--flows-per-step 2] [--same]
 *
 * --same gives both sides the schema as it is (the harness's own spread between two sides).
 * Prints µs of CPU per edge for each part and each side, per run and as medians, and the
 * plans of the release's statement on both sides. Not part of `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dependencyOps, prepareDependencyStatements } from '../src/store/sqlite/dependencies.ts';
import { migrate } from '../src/store/sqlite/migrate.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const runs = Number(args.get('runs') ?? 3);
const steps = Number(args.get('steps') ?? 1500);
const backlog = Number(args.get('backlog') ?? 500);
const children = Number(args.get('children') ?? 20);
const flowsPerStep = Number(args.get('flows-per-step') ?? 2);
const same = args.has('same');
const warmupSteps = Math.ceil(backlog / flowsPerStep);

const parts = ['add', 'release', 'forget', 'commit'] as const;
type Part = (typeof parts)[number];

/** The index migration 0022 dropped, as migration 0012 created it. */
const pendingIndex =
  "CREATE INDEX job_dependencies_pending ON job_dependencies (parent_id, child_seq) WHERE state = 'pending'";

interface Flow {
  children: string[];
  collector: string;
  collectorSeq: number;
}

class Side {
  readonly dir = mkdtempSync(join(tmpdir(), 'sepp-bench-edges-'));
  readonly db: Database.Database;
  readonly deps: ReturnType<typeof dependencyOps>;
  readonly cpuUs: Record<Part, number> = { add: 0, release: 0, forget: 0, commit: 0 };
  private readonly insertJob: Database.Statement<[string, string, string]>;
  private readonly seqOf: Database.Statement<[string], number>;
  private readonly completeJob: Database.Statement<[string]>;
  private readonly deleteJob: Database.Statement<[number]>;
  private readonly flows: Flow[] = [];
  private nextId = 0;

  constructor(
    readonly label: string,
    extraSql: string | null,
  ) {
    this.db = new Database(join(this.dir, 'sepp.db'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    migrate(this.db);
    if (extraSql !== null) this.db.exec(extraSql);
    this.db.exec("INSERT INTO queues (name, created_at_ms) VALUES ('w5', 1)");
    this.deps = dependencyOps(prepareDependencyStatements(this.db));
    this.insertJob = this.db.prepare(
      `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms, run_at_ms)
       VALUES (?, 'w5', ?, ?, 0, x'', 'application/octet-stream', 3, 1, 1)`,
    );
    this.seqOf = this.db.prepare<[string], number>('SELECT seq FROM jobs WHERE id = ?').pluck();
    this.completeJob = this.db.prepare(
      "UPDATE jobs SET state = 'completed', completed_at_ms = 1 WHERE id = ?",
    );
    this.deleteJob = this.db.prepare('DELETE FROM jobs WHERE seq = ?');
  }

  /** Time-ordered ids, as UUIDv7 ids are (the edges' index order depends on it). */
  private id(): string {
    return `0190${(this.nextId++).toString(16).padStart(28, '0')}`;
  }

  private timed(part: Part | null, body: () => void): void {
    if (part === null) {
      body();
      return;
    }
    const before = process.cpuUsage();
    body();
    const used = process.cpuUsage(before);
    this.cpuUs[part] += used.user + used.system;
  }

  /** One step: `flowsPerStep` flows stored, and as many flows from `backlog` before ended. */
  step(measured: boolean): void {
    const at = (part: Part) => (measured ? part : null);
    this.db.exec('BEGIN');
    for (let f = 0; f < flowsPerStep; f++) {
      const flow: Flow = { children: [], collector: this.id(), collectorSeq: 0 };
      for (let c = 0; c < children; c++) {
        const id = this.id();
        flow.children.push(id);
        this.insertJob.run(id, 'child', 'ready');
      }
      this.insertJob.run(flow.collector, 'collector', 'waiting');
      const edges = flow.children.map((parentId) => ({ parentId, state: 'pending' as const }));
      this.timed(at('add'), () => drain(this.deps.add({ childId: flow.collector, policy: 'cancel', edges })));
      flow.collectorSeq = this.seqOf.get(flow.collector)!;
      this.flows.push(flow);
    }
    while (this.flows.length > backlog) {
      const flow = this.flows.shift()!;
      for (const id of flow.children) this.completeJob.run(id);
      let released = 0;
      this.timed(at('release'), () => {
        released = drain(this.deps.releaseCompleted!({ parentIds: flow.children, nowMs: 1 })).length;
      });
      if (released !== 1) throw new Error(`${this.label}: ${released} collectors released, expected 1`);
      this.timed(at('forget'), () => drain(this.deps.forget(flow.collectorSeq)));
      this.deleteJob.run(flow.collectorSeq);
    }
    this.timed(at('commit'), () => this.db.exec('COMMIT'));
  }

  releasePlan(): string {
    const statement = prepareDependencyStatements(this.db).resolveCompleted;
    return this.db
      .prepare<[string], { detail: string }>(`EXPLAIN QUERY PLAN ${statement.source}`)
      .all('[]')
      .map((row) => row.detail)
      .join('; ');
  }

  close(): void {
    this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs a store operation (a generator that yields nothing on SQLite) to its result. */
function drain<T>(op: Generator<unknown, T, unknown>): T {
  for (;;) {
    const next = op.next();
    if (next.done === true) return next.value;
  }
}

const labels = (
  same ? ['three indexes (0022)', 'three indexes again'] : ['three indexes (0022)', 'four (before 0022)']
) as [string, string];
const perRun: Record<string, Record<Part, number>>[] = [];
const loads: number[] = [];
let plans: string[] = [];
for (let run = 0; run < runs; run++) {
  const sides = [new Side(labels[0], null), new Side(labels[1], same ? null : pendingIndex)];
  plans = sides.map((side) => `- ${side.label}: ${side.releasePlan()}`);
  loads.push(loadavg()[0]!);
  for (let step = 0; step < warmupSteps + steps; step++) {
    const order = (step + run) % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) side.step(step >= warmupSteps);
  }
  loads.push(loadavg()[0]!);
  const edges = steps * flowsPerStep * children;
  const row = {} as (typeof perRun)[number];
  for (const side of sides) {
    const perEdge = {} as Record<Part, number>;
    for (const part of parts) perEdge[part] = side.cpuUs[part] / edges;
    row[side.label] = perEdge;
    side.close();
  }
  perRun.push(row);
  const three = row[labels[0]]!;
  const four = row[labels[1]]!;
  console.log(
    `run ${run + 1}: ${parts.map((p) => `${p} ${three[p].toFixed(2)} / ${four[p].toFixed(2)}`).join(', ')} µs per edge (${labels.join(' / ')}); load ${loadavg()[0]!.toFixed(1)}`,
  );
}

const total = (r: Record<Part, number>) => parts.reduce((sum, p) => sum + r[p], 0);
const cells = (label: string, value: (r: Record<Part, number>) => number) =>
  median(perRun.map((r) => value(r[label]!))).toFixed(2);
console.log(
  `\n### A dependency edge's statements: CPU µs per edge, medians of ${runs} interleaved runs${same ? ' (--same: both sides three indexes)' : ''}\n`,
);
console.log(
  markdownTable(
    ['part', ...labels, 'first / second (median of runs)'],
    [...parts.map((p) => [p, (r: Record<Part, number>) => r[p]] as const), ['total', total] as const].map(
      ([name, value]) => [
        name,
        cells(labels[0], value),
        cells(labels[1], value),
        median(perRun.map((r) => value(r[labels[0]]!) / value(r[labels[1]]!))).toFixed(3),
      ],
    ),
  ),
);
console.log(
  `\n${steps} steps of ${flowsPerStep} flows of ${children} → 1 after ${warmupSteps} not counted, ${backlog} flows waiting; ` +
    `load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}.`,
);
console.log('The release statement (resolveCompleted) plans:');
for (const plan of plans) console.log(plan);
for (const line of machineDescription(tmpdir())) console.log(line);
