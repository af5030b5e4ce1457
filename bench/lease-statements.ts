/**
 * The lease of a Worker at prefetch 0 as a statement alone (issue 33, W5 at prefetch 0): the
 * SQLite store's `leaseReady` on two databases in one process, finely interleaved, side A as the
 * engine runs it and side B as `--variant` would.
 *
 * Each step enqueues `--chunk` ready jobs (the W5 child's row: 16 bytes of payload, time-ordered
 * ids), leases the `--chunk` oldest of the queue's `--backlog` ready jobs, completes them (kept,
 * as a flow's children are), sweeps as many completed jobs and commits. WAL, synchronous
 * NORMAL, no fsync. Only the lease is timed (process.cpuUsage), and the sides' order alternates.
 * W5 at prefetch 0 leases 25 jobs a call (845 calls for 21,000 jobs, counted in the server).
 *
 *   npx tsx bench/lease-statements.ts [--variant same|from|returning|select-update|packed] [--runs 5]
 *                                     [--steps 600] [--backlog 1000] [--chunk 25] [--metadata]
 *                                     [--returning 'seq, id']
 *
 * Variants (side B):
 *   same           as A: the harness's own spread
 *   from           `UPDATE jobs … FROM (SELECT seq … LIMIT) AS l WHERE jobs.seq = l.seq`
 *                  instead of `WHERE seq IN (SELECT seq … LIMIT)`
 *   returning      A's statement returning only --returning's columns (default `seq`), as arrays:
 *                  what the returned columns cost (a floor, not a form: the Worker gets them all)
 *   select-update  a SELECT of the rows (the new attempt and deadlines computed as the UPDATE
 *                  sets them), then the UPDATE by seq without RETURNING
 *   packed         the five columns most jobs leave NULL (metadata, idempotency key, last error,
 *                  expiry, group) returned as one JSON array, NULL when all are, and unpacked
 * --metadata gives every job metadata, so `packed` builds and parses its array for every row.
 *
 * Prints CPU µs per leased job for each side, per run, and B / A as the median of runs.
 * Not part of `npm test`.
 */
import { loadavg, tmpdir } from 'node:os';
import type Database from 'better-sqlite3';
import { jobsWaitOnIt } from '../src/store/dependencies.ts';
import type { LeaseParams } from '../src/store/leases.ts';
import type { LeasedRow } from '../src/store/rows.ts';
import { leasedColumns, prepareLeaseStatements } from '../src/store/sqlite/leases.ts';
import { machineDescription, markdownTable, median, parseArgs } from './engine-lib.ts';
import { StatementDb, stepInterleaved } from './lib/statement-db.ts';

const args = parseArgs(process.argv.slice(2));
const variant = args.get('variant') ?? 'same';
const runs = Number(args.get('runs') ?? 5);
const steps = Number(args.get('steps') ?? 600);
const backlog = Number(args.get('backlog') ?? 1000);
const chunk = Number(args.get('chunk') ?? 25);
/** --metadata: every job carries metadata (a row whose rarely-set columns are not all NULL). */
const metadataJson = args.has('metadata')
  ? `'{"tenant":"acme","request":"0190f3a2-7c1e-7d21-9b55-2c8f0e4d6a17"}'`
  : 'NULL';

const leasedColumnNames = leasedColumns.split(', ');

type LeaseStatementParams = LeaseParams & { queue: string; limit: number };
type Lease = (p: LeaseStatementParams) => unknown[];

/** The columns most jobs leave NULL: `packed` returns them as one JSON array, NULL when all are. */
const rarelySet = ['metadata_json', 'idempotency_key', 'last_error', 'expires_at_ms', 'group_key'];

/** Side B's lease: `source` (the engine's leaseReady) as `variant` runs it. */
function leaseOf(db: Database.Database, variant: string, source: string): Lease {
  const changed = (sql: string) => {
    if (sql === source) throw new Error(`--variant ${variant}: the statement did not change`);
    return sql;
  };
  const prepare = (sql: string) => db.prepare<[LeaseStatementParams], unknown[]>(changed(sql)).raw(true);
  const returned = /RETURNING [\s\S]*$/;
  switch (variant) {
    case 'from': {
      const statement = prepare(
        source.replace(
          /WHERE seq IN \((SELECT seq FROM jobs [\s\S]*?LIMIT CAST\(@limit AS INTEGER\))\)/,
          'FROM ($1) AS l WHERE jobs.seq = l.seq',
        ),
      );
      return (p) => statement.all(p);
    }
    case 'returning': {
      const statement = prepare(source.replace(returned, `RETURNING ${args.get('returning') ?? 'seq'}`));
      return (p) => statement.all(p);
    }
    case 'select-update': {
      // The rows read first (the lease's new values computed as the UPDATE sets them), then the UPDATE by seq.
      const deadline = source.match(/lease_deadline_ms = (min\([\s\S]*?\)\)),\s*timeout_at_ms/)?.[1];
      const timeout = source.match(/timeout_at_ms = (@nowMs \+ coalesce\(timeout_ms, @timeoutMs\))/)?.[1];
      if (deadline === undefined || timeout === undefined)
        throw new Error('select-update: the lease changed');
      const selected = leasedColumnNames.map((name) =>
        name === 'attempt'
          ? 'attempt + 1'
          : name === 'lease_deadline_ms'
            ? deadline
            : name === 'timeout_at_ms'
              ? timeout
              : name,
      );
      const select = db
        .prepare<[LeaseStatementParams], unknown[]>(
          `SELECT ${selected.join(', ')} FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
            ORDER BY priority DESC, run_at_ms, seq LIMIT CAST(@limit AS INTEGER)`,
        )
        .raw(true);
      const update = db.prepare(
        changed(
          source.replace(/WHERE seq IN \([\s\S]*$/, 'WHERE seq IN (SELECT value FROM json_each(@seqs))'),
        ),
      );
      return (p) => {
        const rows = select.all(p);
        const { queue: _queue, limit: _limit, ...set } = p;
        update.run({ ...set, seqs: JSON.stringify(rows.map((row) => row[0])) } as never);
        return rows;
      };
    }
    case 'packed': {
      const common = leasedColumnNames.filter((name) => !rarelySet.includes(name));
      const packed = `CASE WHEN ${rarelySet.map((name) => `${name} IS NULL`).join(' AND ')} THEN NULL
                      ELSE json_array(${rarelySet.join(', ')}) END`;
      const statement = prepare(source.replace(returned, `RETURNING ${common.join(', ')}, ${packed}`));
      const rowFrom = new Function(
        'values',
        `const rare = values[${common.length}] === null ? undefined : JSON.parse(values[${common.length}]);
         return { ${common.map((name, i) => `${name}: values[${i}]`).join(', ')},
                  ${rarelySet.map((name, i) => `${name}: rare === undefined ? null : rare[${i}]`).join(', ')} };`,
      ) as (values: unknown[]) => LeasedRow;
      return (p) => statement.all(p).map(rowFrom);
    }
    default:
      throw new Error(`--variant ${variant}: unknown`);
  }
}

class Side {
  private readonly store = new StatementDb('sepp-bench-leases-');
  readonly db = this.store.db;
  cpuUs = 0;
  private readonly insertJob: Database.Statement<[string]>;
  private readonly complete: Database.Statement<[string]>;
  private readonly sweep: Database.Statement;
  private readonly lease: Lease;
  private nowMs = 1_000_000;

  constructor(readonly variant: string) {
    this.insertJob = this.db.prepare(
      `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, max_attempts, enqueued_at_ms,
                         run_at_ms, dependency_flags, metadata_json)
       VALUES (?, 'w5', 'child', 'ready', 0, x'00112233445566778899aabbccddeeff', 'application/json', 3, 1, 1,
               ${jobsWaitOnIt}, ${metadataJson})`,
    );
    this.complete = this.db.prepare(
      `UPDATE jobs SET state = 'completed', completed_at_ms = 2, lease_deadline_ms = NULL
        WHERE seq IN (SELECT value FROM json_each(?))`,
    );
    this.sweep = this.db.prepare(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE state = 'completed' ORDER BY completed_at_ms LIMIT ${chunk})`,
    );
    const engines = prepareLeaseStatements(this.db);
    this.lease =
      variant === 'same'
        ? (p) => engines.leaseReady.all(p)
        : leaseOf(this.db, variant, engines.leaseReady.source);
    this.db.exec('BEGIN');
    for (let i = 0; i < backlog; i++) this.insertJob.run(this.store.id());
    this.db.exec('COMMIT');
  }

  step(measured: boolean): void {
    this.db.exec('BEGIN');
    for (let i = 0; i < chunk; i++) this.insertJob.run(this.store.id());
    this.nowMs += 1;
    const params = {
      queue: 'w5',
      limit: chunk,
      nowMs: this.nowMs,
      leaseDeadlineMs: this.nowMs + 30_000,
      maxLeaseDeadlineMs: this.nowMs + 3_600_000,
      timeoutMs: null,
      workerId: 'bench-worker',
    };
    const before = process.cpuUsage();
    const rows = this.lease(params);
    const used = process.cpuUsage(before);
    if (measured) this.cpuUs += used.user + used.system;
    if (rows.length !== chunk) throw new Error(`leased ${rows.length} of ${chunk}`);
    this.complete.run(
      JSON.stringify(rows.map((row) => (Array.isArray(row) ? row[0] : (row as { seq: number }).seq))),
    );
    this.sweep.run();
    this.db.exec('COMMIT');
  }

  close(): void {
    this.store.close();
  }
}

const perRun: [number, number][] = [];
const loads: number[] = [];
for (let run = 0; run < runs; run++) {
  const sides = [new Side('same'), new Side(variant)] as const;
  const warmupSteps = 100;
  loads.push(loadavg()[0]!);
  stepInterleaved(sides, run, warmupSteps, steps);
  loads.push(loadavg()[0]!);
  const leased = steps * chunk;
  const [a, b] = sides.map((side) => {
    const perJob = side.cpuUs / leased;
    side.close();
    return perJob;
  }) as [number, number];
  perRun.push([a, b]);
  console.log(
    `run ${run + 1}: lease ${a.toFixed(2)} / ${b.toFixed(2)} µs per leased job (A / B); load ${loadavg()[0]!.toFixed(1)}`,
  );
}

console.log(
  `\n### W5's lease at prefetch 0 as a statement: CPU µs per leased job, B = ${variant}, medians of ${runs} runs\n`,
);
console.log(
  markdownTable(
    ['part', 'A (as the engine runs it)', `B (${variant})`, 'B / A (median of runs)'],
    [
      [
        'lease',
        median(perRun.map(([a]) => a)).toFixed(2),
        median(perRun.map(([, b]) => b)).toFixed(2),
        median(perRun.map(([a, b]) => b / a)).toFixed(3),
      ],
    ],
  ),
);
console.log(
  `\n${steps} steps after 100 not counted, ${backlog} ready jobs, ${chunk} leased a step; ` +
    `load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}.`,
);
for (const line of machineDescription(tmpdir())) console.log(line);
