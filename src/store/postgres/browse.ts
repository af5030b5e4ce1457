/**
 * The reads behind the operators' job lists and the admin search box, each a
 * bounded index range read: `scan` caps how many index entries one read may
 * examine, so a filter no index answers costs at most that many row probes.
 * Those of leased jobs are the exception: they read every job leased at that
 * moment (`byState`), as many as are leased at once, whatever `scan` says.
 */

import type { Browse, KeyShapes, SeqRange } from '../browse.ts';
import type { Op } from '../op.ts';
import type { DueRow } from '../rows.ts';
import { type Connection, rows, type Statement, statement, value, writing } from './sql.ts';

/**
 * A statement on the jobs of one queue (`$1`) and state (`$2`), in two versions (`inState`
 * picks one); `text` is given where those rows come from, a FROM clause with its WHERE, to
 * which it adds its own conditions with AND. Every state but `leased` is read in
 * `jobs_by_state_type`, which holds no leased job (schema/postgres/0026): the text says
 * `state <> 'leased'` as well, so that the generic plan, made without knowing `$2`, may use
 * that partial index. The jobs of a queue that are leased are read first, all of them, from
 * `jobs_leased`, then filtered and sorted: `OFFSET 0` keeps the planner from walking the
 * primary key in seq order instead (with few of them leased, most of the table). Such a read
 * costs as many rows as jobs are leased at that moment, in every queue.
 */
interface ByState {
  readonly others: Statement;
  readonly leased: Statement;
}
export const byState = (text: (from: string) => string): ByState => ({
  others: statement(text("jobs WHERE queue = $1 AND state = $2 AND state <> 'leased'")),
  leased: statement(
    text(
      "(SELECT seq, type FROM jobs WHERE queue = $1 AND state = $2 AND state = 'leased' OFFSET 0) AS leased WHERE true",
    ),
  ),
});
export const inState = (s: ByState, state: string): Statement => (state === 'leased' ? s.leased : s.others);

const typeAfter = byState((from) => `SELECT type AS v FROM ${from} AND type > $3 ORDER BY type LIMIT 1`);
const typeFrom = byState(
  (from) => `SELECT type AS v FROM ${from} AND type >= $3 AND type < $4 ORDER BY type LIMIT 1`,
);
/**
 * The same, from just after `fromType` (the engine asks from `type + "\0"`, the least string
 * after `type`; PostgreSQL text cannot hold U+0000, so that bound is asked this way).
 */
const typeAfterBelow = byState(
  (from) => `SELECT type AS v FROM ${from} AND type > $3 AND type < $4 ORDER BY type LIMIT 1`,
);
const seqsOf = (op: '>' | '<', dir: 'ASC' | 'DESC', byType: boolean) =>
  byState(
    (from) =>
      `SELECT seq FROM ${from} ${byType ? 'AND type = $5' : ''} AND seq ${op} $3 ORDER BY seq ${dir} LIMIT $4`,
  );
const seqsAsc = seqsOf('>', 'ASC', true);
const seqsDesc = seqsOf('<', 'DESC', true);
const seqsAnyTypeAsc = seqsOf('>', 'ASC', false);
const seqsAnyTypeDesc = seqsOf('<', 'DESC', false);
const dueScan = (retries: boolean, op: '>' | '<', dir: 'ASC' | 'DESC') =>
  statement(
    `SELECT seq, run_at_ms FROM jobs WHERE queue = $1 AND state = 'scheduled' ${retries ? 'AND attempt > 0' : ''}
        AND (run_at_ms, seq) ${op} ($2, $3)
      ORDER BY run_at_ms ${dir}, seq ${dir} LIMIT $4`,
  );
const dueScans = {
  due: { asc: dueScan(false, '>', 'ASC'), desc: dueScan(false, '<', 'DESC') },
  retries: { asc: dueScan(true, '>', 'ASC'), desc: dueScan(true, '<', 'DESC') },
};
/** Which of the seqs pass the filters no index answers: one primary-key probe each. */
/**
 * Jobs whose idempotency key has one of two shapes (prefix and length), from the
 * parameters at `$from`..`$from+3` (keyShapeValues; null: any job). The prefix is
 * compared as text, so a name's `%` or `_` is no wildcard.
 */
export const keyShapesMatch = (from: number) => {
  const [a, aLen, b, bLen] = [from, from + 1, from + 2, from + 3].map((n) => `$${n}`);
  return `(${a}::text IS NULL
    OR (left(idempotency_key, length(${a})) = ${a} AND length(idempotency_key) = ${aLen}::int)
    OR (left(idempotency_key, length(${b}::text)) = ${b} AND length(idempotency_key) = ${bLen}::int))`;
};

export function keyShapeValues(shapes: KeyShapes | null): unknown[] {
  return [
    shapes?.[0].prefix ?? null,
    shapes?.[0].length ?? null,
    shapes?.[1].prefix ?? null,
    shapes?.[1].length ?? null,
  ];
}

const residual = statement(
  `SELECT seq FROM jobs WHERE seq = ANY($1::bigint[])
      AND ($2::text IS NULL OR strpos(lower(last_error), lower($2)) > 0)
      AND ($3::text IS NULL OR (metadata_json::jsonb ->> $3) = $4)
      AND ($5::text IS NULL OR (type >= $5 AND type < $6))
      AND ($7::text IS NULL OR group_key = $7)
      AND ($8::bigint IS NULL OR enqueued_at_ms < $8)
      AND ($9::text IS NULL OR dead_reason = $9)
      AND ${keyShapesMatch(10)}
    ORDER BY seq`,
);
const idsBetween = statement('SELECT id FROM jobs WHERE id >= $1 AND id < $2 ORDER BY id DESC LIMIT $3');
const idsContaining = statement(
  `SELECT id FROM (SELECT id FROM jobs ORDER BY id DESC LIMIT $2) newest
    WHERE strpos(id, $1) > 0 ORDER BY id DESC LIMIT $3`,
);

function* seqList(c: Connection, s: Statement, values: readonly unknown[]) {
  return (yield* rows<{ seq: number }>(c, s, values)).map((row) => row.seq);
}

const rangeOf = (p: Omit<SeqRange, 'type'>, bound: number) => [p.queue, p.state, p.fromSeq, bound];

/**
 * A list reads the leased jobs of a queue once per type and once per type seek (the engine's
 * job-browse.ts, job-queries.ts), and each read of leased jobs reads every job leased at that
 * moment (`byState`): with 20,000 leased, a list of every queue and state took ~10x its time
 * before (bench/results/pg-index-2026-12-07-s20.md). So a read connection keeps the leased
 * jobs of the last queue it read them of, as of one snapshot, and answers the leased reads of
 * the same queue and snapshot from them: one read of leased jobs per queue and list.
 *
 * A read is a REPEATABLE READ transaction (readers.ts): its statements all see its snapshot,
 * and two transactions whose snapshots are equal see the same rows, so `pg_current_snapshot()`
 * tells whether what is kept still holds; a transaction that wrote (it has an id) may see its
 * own changes, which no snapshot shows, and keeps nothing. A queue with more than
 * `leasedKeptMax` leased jobs is read by the statements each time; nothing is kept on the
 * writer's connection (its units change the rows they read).
 */
const leasedKeptMax = 10_000;
const readSnapshot = statement(
  'SELECT CASE WHEN pg_current_xact_id_if_assigned() IS NULL THEN pg_current_snapshot()::text END AS v',
);
const leasedOfQueue = statement(
  "SELECT type, seq FROM (SELECT type, seq FROM jobs WHERE queue = $1 AND state = 'leased' OFFSET 0) AS leased LIMIT $2",
);

/** The leased jobs of one queue as of one snapshot: their types in code-point order (PostgreSQL's "C"), the seqs of each ascending. */
interface LeasedJobs {
  readonly snapshot: string;
  readonly queue: string;
  /** Undefined: more than `leasedKeptMax`, read by the statements. */
  readonly types?: readonly { type: string; utf8: Buffer }[];
  readonly byType?: ReadonlyMap<string, readonly number[]>;
  readonly seqs?: readonly number[];
}

function keep(snapshot: string, queue: string, found: readonly { type: string; seq: number }[]): LeasedJobs {
  if (found.length > leasedKeptMax) return { snapshot, queue };
  const byType = new Map<string, number[]>();
  for (const { type, seq } of found) {
    const list = byType.get(type);
    if (list === undefined) byType.set(type, [seq]);
    else list.push(seq);
  }
  const ascending = (a: number, b: number) => a - b;
  for (const list of byType.values()) list.sort(ascending);
  // UTF-8 bytes order as code points do, as the "C" collation orders text.
  const types = [...byType.keys()].map((type) => ({ type, utf8: Buffer.from(type) }));
  types.sort((a, b) => Buffer.compare(a.utf8, b.utf8));
  return { snapshot, queue, types, byType, seqs: found.map((row) => row.seq).sort(ascending) };
}

/** The first type after `from` (or from it, `inclusive`) and below `below`. */
function firstType(
  types: readonly { type: string; utf8: Buffer }[],
  from: string,
  inclusive: boolean,
  below: string | undefined,
): string | undefined {
  const fromUtf8 = Buffer.from(from);
  const belowUtf8 = below === undefined ? undefined : Buffer.from(below);
  for (const { type, utf8 } of types) {
    const order = Buffer.compare(utf8, fromUtf8);
    if (order < 0 || (order === 0 && !inclusive)) continue;
    return belowUtf8 === undefined || Buffer.compare(utf8, belowUtf8) < 0 ? type : undefined;
  }
  return undefined;
}

/** At most `limit` of the ascending `seqs` after `fromSeq`, or before it `descending`. */
function pick(seqs: readonly number[], fromSeq: number, descending: boolean, limit: number): number[] {
  if (!descending) return seqs.filter((seq) => seq > fromSeq).slice(0, limit);
  return seqs
    .filter((seq) => seq < fromSeq)
    .reverse()
    .slice(0, limit);
}

export function browseOps(c: Connection): Browse {
  let kept: LeasedJobs | undefined;
  /** The leased jobs of `queue` for this read, kept or read; undefined: read them by the statements. */
  function* leased(queue: string, state: string): Op<LeasedJobs | undefined> {
    if (state !== 'leased' || writing(c)) return undefined;
    const snapshot = yield* value<string | null>(c, readSnapshot, []);
    if (snapshot === null || snapshot === undefined) return undefined;
    if (kept?.snapshot !== snapshot || kept.queue !== queue) {
      kept = undefined;
      const found = yield* rows<{ type: string; seq: number }>(c, leasedOfQueue, [queue, leasedKeptMax + 1]);
      kept = keep(snapshot, queue, found);
    }
    return kept.types === undefined ? undefined : kept;
  }
  /** At most `bound` seqs of a range: kept leased jobs, or the range's statement. */
  function* ofType(p: SeqRange, bound: number): Op<number[]> {
    const jobs = yield* leased(p.queue, p.state);
    if (jobs?.byType !== undefined)
      return pick(jobs.byType.get(p.type) ?? [], p.fromSeq, p.descending, bound);
    return yield* seqList(c, inState(p.descending ? seqsDesc : seqsAsc, p.state), [
      ...rangeOf(p, bound),
      p.type,
    ]);
  }
  return {
    *typeAfter(p) {
      const jobs = yield* leased(p.queue, p.state);
      if (jobs?.types !== undefined) return firstType(jobs.types, p.afterType, false, undefined);
      return yield* value<string>(c, inState(typeAfter, p.state), [p.queue, p.state, p.afterType]);
    },
    *typeFrom(p) {
      const jobs = yield* leased(p.queue, p.state);
      if (jobs?.types !== undefined) {
        const after = p.fromType.endsWith('\u0000');
        return firstType(jobs.types, after ? p.fromType.slice(0, -1) : p.fromType, !after, p.belowType);
      }
      if (p.fromType.endsWith('\u0000')) {
        const after = p.fromType.slice(0, -1);
        return yield* value<string>(c, inState(typeAfterBelow, p.state), [
          p.queue,
          p.state,
          after,
          p.belowType,
        ]);
      }
      return yield* value<string>(c, inState(typeFrom, p.state), [p.queue, p.state, p.fromType, p.belowType]);
    },
    seqs(p) {
      return ofType(p, p.limit);
    },
    *seqsAnyType(p) {
      const jobs = yield* leased(p.queue, p.state);
      if (jobs?.seqs !== undefined) return pick(jobs.seqs, p.fromSeq, p.descending, p.limit);
      return yield* seqList(
        c,
        inState(p.descending ? seqsAnyTypeDesc : seqsAnyTypeAsc, p.state),
        rangeOf(p, p.limit),
      );
    },
    scanSeqs(p) {
      return ofType(p, p.scan);
    },
    *scanDue(p) {
      const scans = p.retries ? dueScans.retries : dueScans.due;
      return yield* rows<DueRow>(c, p.descending ? scans.desc : scans.asc, [
        p.queue,
        p.fromDueMs,
        p.fromSeq,
        p.scan,
      ]);
    },
    *filter({ seqs, errorText, metadata, typePrefix, groupKey, enqueuedBeforeMs, deadReason, keyShapes }) {
      if (seqs.length === 0) return [];
      return yield* seqList(c, residual, [
        seqs,
        errorText,
        metadata?.key ?? null,
        metadata?.value ?? null,
        typePrefix,
        typePrefix === null ? null : `${typePrefix}\u{10ffff}`,
        groupKey,
        enqueuedBeforeMs,
        deadReason,
        ...keyShapeValues(keyShapes),
      ]);
    },
    *idsBetween(p) {
      return (yield* rows<{ id: string }>(c, idsBetween, [p.lo, p.hi, p.limit])).map((row) => row.id);
    },
    *idsContaining(p) {
      return (yield* rows<{ id: string }>(c, idsContaining, [p.fragment, p.scan, p.limit])).map(
        (row) => row.id,
      );
    },
  };
}
