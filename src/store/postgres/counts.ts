/**
 * Per-queue, per-state counts without a hot row (design note 0100, section 5):
 * `queue_counts` holds deltas per (queue, state, shard), and each sepp server's
 * writer adds to its own shard, which an advisory lock held by its connection
 * gives it (writer.ts), so no two servers ever wait on a counter row. A count is
 * the sum of a queue's shards (servers × states rows at most).
 *
 * A unit's adjustments are gathered in memory (`CountDeltas`) and written in
 * one statement per batch, before its COMMIT, or before a unit reads a count, so
 * they commit with the job changes they describe and a unit sees its own and those
 * of the units before it. The writer's connection is pipelined: the statement is
 * sent without waiting for its answer (what comes after it on the connection sees
 * it), and the writer checks the answer before it trusts the batch's COMMIT
 * (writer.ts).
 */
import { countMismatches } from '../count-check.ts';
import { nothing, type Op } from '../op.ts';
import type { Counts } from '../queues.ts';
import type { QueueCountRow } from '../rows.ts';
import { lockLimits } from './limits.ts';
import { type Connection, type CountDeltas, rows, statement, value } from './sql.ts';

/** Every state a job can be in: each queue has a count of each (0 when it has none). */
const states = ['scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled', 'waiting'];

/** Adds deltas to one shard; the rows are locked in key order, so concurrent flushes cannot deadlock. */
const addDeltas = statement(
  `INSERT INTO queue_counts (queue, state, shard, jobs)
   SELECT d.queue, d.state, $4, d.jobs FROM unnest($1::text[], $2::text[], $3::bigint[]) AS d(queue, state, jobs)
    ORDER BY d.queue, d.state
   ON CONFLICT (queue, state, shard) DO UPDATE SET jobs = queue_counts.jobs + excluded.jobs`,
);
const summed = `SELECT q.name AS queue, s.state, coalesce(sum(c.jobs), 0)::bigint AS jobs
     FROM queues q CROSS JOIN unnest($1::text[]) AS s(state)
     LEFT JOIN queue_counts c ON c.queue = q.name AND c.state = s.state`;
const allCounts = statement(`${summed} GROUP BY q.name, s.state ORDER BY q.name, s.state`);
const queueCounts = statement(`${summed} WHERE q.name = $2 GROUP BY q.name, s.state ORDER BY s.state`);
const inState = statement(
  'SELECT coalesce(sum(jobs), 0)::bigint AS v FROM queue_counts WHERE queue = $1 AND state = $2',
);
const unfinished = statement(
  `SELECT coalesce(sum(jobs), 0)::bigint AS v FROM queue_counts
    WHERE queue = $1 AND state IN ('waiting', 'scheduled', 'ready', 'leased')`,
);
const total = statement('SELECT coalesce(sum(jobs), 0)::bigint AS v FROM queue_counts');
const countsFromRows = statement(
  'SELECT queue, state, count(*) AS jobs FROM jobs GROUP BY queue, state ORDER BY queue, state',
);

type Delta = { queue: string; state: string; jobs: number };

/** Adds `jobs` to the entry of (queue, state) in `into`. */
function addTo(into: Map<string, Delta>, queue: string, state: string, jobs: number): void {
  const key = `${queue}\0${state}`;
  const entry = into.get(key);
  if (entry === undefined) into.set(key, { queue, state, jobs });
  else entry.jobs += jobs;
}

/**
 * The writer's deltas, written to `shard` once per batch: the running unit's (`unit`) join
 * the batch's (`batch`) when the unit succeeds (`unitDone`), and the writer writes them all
 * in one statement before its COMMIT (`flushBatch`), rather than one per unit. A count read
 * inside a unit writes everything gathered so far first (`flush`); those of earlier units
 * then travel in the running unit's savepoint, so when that unit fails (`discard`) they come
 * back to the batch's, to be written again.
 */
export class ShardDeltas implements CountDeltas {
  private unit = new Map<string, Delta>();
  private batch = new Map<string, Delta>();
  /** Earlier units' deltas written inside the running unit's savepoint. */
  private writtenInUnit: Delta[] = [];
  readonly lockedQueues = new Set<string>();

  constructor(
    private readonly c: Pick<Connection, 'send'>,
    private readonly shard: () => number,
    /** Takes a statement sent ahead: its answer is awaited by the writer, not the unit. */
    private readonly sentAhead: (answer: Promise<unknown>) => void,
  ) {}

  add(queue: string, state: string, jobs: number): void {
    addTo(this.unit, queue, state, jobs);
  }

  /** The running unit succeeded: its deltas join the batch's. */
  unitDone(): void {
    for (const { queue, state, jobs } of this.unit.values()) addTo(this.batch, queue, state, jobs);
    this.unit.clear();
    this.writtenInUnit = [];
  }

  /** The running unit failed and its changes were rolled back: its deltas go, earlier units' stay. */
  discard(): void {
    this.unit.clear();
    for (const { queue, state, jobs } of this.writtenInUnit) addTo(this.batch, queue, state, jobs);
    this.writtenInUnit = [];
  }

  /** Forgets everything (a new transaction, or one that failed). */
  reset(): void {
    this.unit.clear();
    this.batch.clear();
    this.writtenInUnit = [];
  }

  /** Writes everything gathered so far (a count is read inside the running unit). */
  flush(): Op<void> {
    for (const entry of this.batch.values()) this.writtenInUnit.push({ ...entry });
    // One row per (queue, state): an INSERT … ON CONFLICT cannot change a row twice.
    const all = this.batch;
    for (const { queue, state, jobs } of this.unit.values()) addTo(all, queue, state, jobs);
    this.batch = new Map();
    this.unit = new Map();
    this.write([...all.values()]);
    return nothing;
  }

  /** Writes the batch's deltas (the writer, once its units ran, before the COMMIT). */
  flushBatch(): void {
    const entries = [...this.batch.values()];
    this.batch = new Map();
    this.write(entries);
  }

  private write(all: Delta[]): void {
    const entries = all.filter((e) => e.jobs !== 0);
    if (entries.length === 0) return;
    this.sentAhead(
      this.c.send(addDeltas, [
        entries.map((e) => e.queue),
        entries.map((e) => e.state),
        entries.map((e) => e.jobs),
        this.shard(),
      ]),
    );
  }
}

export function countOps(c: Connection): Counts {
  function* flushed(): Op<void> {
    if (c.deltas !== undefined) yield* c.deltas.flush();
  }
  function* all(): Op<QueueCountRow[]> {
    yield* flushed();
    return yield* rows<QueueCountRow>(c, allCounts, [states]);
  }
  return {
    // biome-ignore lint/correctness/useYield: deltas are gathered in memory and written with the unit's end.
    *adjust({ queue, from, to, jobs }) {
      if (jobs === 0) return;
      if (c.deltas === undefined) throw new Error('counts are adjusted only inside a write');
      if (from !== null) c.deltas.add(queue, from, -jobs);
      if (to !== null) c.deltas.add(queue, to, jobs);
    },
    all,
    *ofQueue(queue) {
      yield* flushed();
      return yield* rows<{ state: string; jobs: number }>(c, queueCounts, [states, queue]);
    },
    *inState({ queue, state }) {
      // max_leased: the queue's leases are counted under its lock, so servers lease it in turn.
      if (state === 'leased') yield* lockLimits(c, queue);
      yield* flushed();
      return (yield* value<number>(c, inState, [queue, state])) ?? 0;
    },
    *unfinished(queue) {
      yield* flushed();
      return (yield* value<number>(c, unfinished, [queue])) ?? 0;
    },
    *total() {
      yield* flushed();
      return (yield* value<number>(c, total, [])) ?? 0;
    },
    *mismatches() {
      const counted = yield* all();
      return countMismatches(counted, yield* rows<QueueCountRow>(c, countsFromRows, []));
    },
  };
}
