/**
 * A flow's rows, A/B (issue 33): two source trees' SQLite stores writing W5's flows — the jobs'
 * INSERT (`Jobs.insert`, all of a unit's jobs in one call, as AddedJobs does) and each
 * collector's edges (`Dependencies.add`, its parents marked by their INSERT) — on a database
 * each, opened and migrated by its own tree, in one process, finely interleaved. What the
 * statements cost, without the engine, gRPC or fsync (WAL, synchronous NORMAL, one commit
 * per step, not counted).
 *
 *   npx tsx bench/w5-inserts.ts --a /work/wt/base-integ13 --b . [--runs 3] [--steps 300]
 *                               [--flows 10] [--children 20]
 *
 * Each step writes `--flows` flows of `--children` → 1 on A, then on B (the order alternating);
 * the CPU time (process.cpuUsage) of each part is added to its side. Prints µs of CPU per job
 * (INSERT) and per edge (add) for each run and as medians, with B / A. Run it with B = A to
 * see the harness's own spread. Not part of `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { newJob } from '../tests/store/conformance/harness.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const trees = [resolve(args.get('a') ?? '.'), resolve(args.get('b') ?? '.')] as const;
const runs = Number(args.get('runs') ?? 3);
const steps = Number(args.get('steps') ?? 300);
const flowsPerStep = Number(args.get('flows') ?? 10);
const children = Number(args.get('children') ?? 20);
const warmup = 20;

/** What the benchmark uses of a tree's store: its connection and capabilities (their types as the tree has them). */
interface Side {
  db: { exec(sql: string): unknown; prepare(sql: string): { run(...p: unknown[]): unknown }; close(): void };
  jobs: { insert(rows: unknown[]): Generator<unknown, void> };
  dependencies: { add(p: unknown): Generator<unknown, void> };
  runAtOnce<T>(op: Generator<unknown, T>): T;
  dir: string;
  insertUs: number;
  addUs: number;
}

async function openSide(root: string): Promise<Side> {
  const { openDataDir } = await import(join(root, 'src/store/sqlite/open.ts'));
  const { sqliteCapabilities } = await import(join(root, 'src/store/sqlite/sqlite-store.ts'));
  const { runAtOnce } = await import(join(root, 'src/store/op.ts'));
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-inserts-'));
  const db = openDataDir(dir, { durability: 'full' });
  db.prepare("INSERT INTO queues (name, created_at_ms) VALUES ('w5', 0)").run();
  const caps = sqliteCapabilities(db);
  return { db, jobs: caps.jobs, dependencies: caps.dependencies, runAtOnce, dir, insertUs: 0, addUs: 0 };
}

let idCounter = 0;
const payload = new Uint8Array(0);
/** A W5 flow's rows as the engine makes them: children marked as waited on, the collector waiting. */
function flowRows(nowMs: number) {
  const ids = Array.from({ length: children + 1 }, () => {
    idCounter++;
    return `0193a6f2-7c1e-7000-8c3d-${String(idCounter).padStart(12, '0')}`;
  });
  const rows = ids.map((id, i) =>
    newJob('w5', {
      id,
      type: i < children ? 'child' : 'collector',
      state: i < children ? 'ready' : 'waiting',
      payload,
      enqueued_at_ms: nowMs,
      run_at_ms: nowMs,
      dependency_flags: i < children ? 2 : 1,
    }),
  );
  const edges = ids.slice(0, children).map((parentId, i) => ({
    parentId,
    state: 'pending',
    name: `c${i}`,
    parentMarked: true,
  }));
  return { rows, add: { childId: ids[children]!, policy: 'cancel', edges } };
}

function step(side: Side, nowMs: number, counted: boolean): void {
  const flows = Array.from({ length: flowsPerStep }, () => flowRows(nowMs));
  const rows = flows.flatMap((flow) => flow.rows);
  side.db.exec('BEGIN');
  const start = process.cpuUsage();
  side.runAtOnce(side.jobs.insert(rows));
  const inserted = process.cpuUsage(start);
  for (const flow of flows) side.runAtOnce(side.dependencies.add(flow.add));
  const added = process.cpuUsage(start);
  side.db.exec('COMMIT');
  if (!counted) return;
  side.insertUs += inserted.user + inserted.system;
  side.addUs += added.user + added.system - (inserted.user + inserted.system);
}

const results: { insert: [number, number]; add: [number, number] }[] = [];
for (let run = 0; run < runs; run++) {
  const sides = [await openSide(trees[0]), await openSide(trees[1])] as const;
  for (let s = 0; s < warmup + steps; s++) {
    const order = (s + run) % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) step(sides[i]!, 1_700_000_000_000 + s, s >= warmup);
  }
  const jobs = steps * flowsPerStep * (children + 1);
  const edges = steps * flowsPerStep * children;
  results.push({
    insert: [sides[0].insertUs / jobs, sides[1].insertUs / jobs],
    add: [sides[0].addUs / edges, sides[1].addUs / edges],
  });
  for (const side of sides) {
    side.db.close();
    rmSync(side.dir, { recursive: true, force: true });
  }
}

const row = (label: string, pick: (r: (typeof results)[number]) => [number, number]) => {
  const a = median(results.map((r) => pick(r)[0]));
  const b = median(results.map((r) => pick(r)[1]));
  const perRun = results.map((r) => (pick(r)[1] / pick(r)[0]).toFixed(3)).join(', ');
  return [label, a.toFixed(2), b.toFixed(2), (b / a).toFixed(3), perRun];
};
console.log(`A = ${trees[0]}\nB = ${trees[1]}`);
console.log(
  `${runs} runs of ${steps} steps of ${flowsPerStep} flows of ${children} → 1 (after ${warmup} not counted), load ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log(
  markdownTable(
    ['statements', 'A µs CPU (median)', 'B µs CPU (median)', 'B / A', 'B / A per run'],
    [row("jobs' INSERT, per job", (r) => r.insert), row('edges (add), per edge', (r) => r.add)],
  ),
);
console.log(`\n${machineDescription(tmpdir()).join('\n')}`);
