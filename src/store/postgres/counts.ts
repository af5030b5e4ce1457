/**
 * Per-queue, per-state counts without a hot row (design note 0100, section 5):
 * `queue_counts` holds deltas per (queue, state, shard), and each sepp server's
 * writer adds to its own shard, which an advisory lock held by its connection
 * gives it (writer.ts), so no two servers ever wait on a counter row. A count is
 * the sum of a queue's shards (servers × states rows at most).
 *
 * A unit's adjustments are gathered in memory (`CountDeltas`) and written in
 * one statement when the unit ends, or before the unit reads a count, so they
 * commit with the job changes they describe and a unit sees its own. The writer's
 * connection is pipelined: the statement is sent without waiting for its answer
 * (what comes after it on the connection sees it), and the writer checks the answer
 * before it trusts the batch's COMMIT (writer.ts).
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
    WHERE queue = $1 AND state IN ('scheduled', 'ready', 'leased')`,
);
const total = statement('SELECT coalesce(sum(jobs), 0)::bigint AS v FROM queue_counts');
const countsFromRows = statement(
  'SELECT queue, state, count(*) AS jobs FROM jobs GROUP BY queue, state ORDER BY queue, state',
);

/** The writer's deltas: gathered per unit, written to `shard` in one statement. */
export class ShardDeltas implements CountDeltas {
  private readonly pending = new Map<string, { queue: string; state: string; jobs: number }>();
  readonly lockedQueues = new Set<string>();

  constructor(
    private readonly c: Pick<Connection, 'send'>,
    private readonly shard: () => number,
    /** Takes a statement sent ahead: its answer is awaited by the writer, not the unit. */
    private readonly sentAhead: (answer: Promise<unknown>) => void,
  ) {}

  add(queue: string, state: string, jobs: number): void {
    const key = `${queue}\0${state}`;
    const entry = this.pending.get(key);
    if (entry === undefined) this.pending.set(key, { queue, state, jobs });
    else entry.jobs += jobs;
  }

  /** Forgets what was gathered (the unit failed: its changes were rolled back). */
  discard(): void {
    this.pending.clear();
  }

  flush(): Op<void> {
    if (this.pending.size === 0) return nothing;
    const entries = [...this.pending.values()].filter((e) => e.jobs !== 0);
    this.pending.clear();
    if (entries.length === 0) return nothing;
    this.sentAhead(
      this.c.send(addDeltas, [
        entries.map((e) => e.queue),
        entries.map((e) => e.state),
        entries.map((e) => e.jobs),
        this.shard(),
      ]),
    );
    return nothing;
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
