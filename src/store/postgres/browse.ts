/**
 * The reads behind the operators' job lists and the admin search box, each a
 * bounded index range read: `scan` caps how many index entries one read may
 * examine, so a filter no index answers costs at most that many row probes.
 * Those of leased jobs are the exception: each reads every job leased at that
 * moment, in every queue (`byState`), whatever `scan` says. So a list reads a
 * list's leased jobs as one range (`scanSeqsAcrossTypes`, `unindexedByType`):
 * one such read per page, every queue and type of the list in it, filtered,
 * sorted and cut to the page by PostgreSQL (only the page's seqs come back),
 * instead of one read per queue, type and type seek.
 */

import type { Browse, KeyShapes, SeqRange } from '../browse.ts';
import type { DueRow } from '../rows.ts';
import { type Connection, rows, type Statement, statement, value } from './sql.ts';

/**
 * A statement on the jobs of one queue (`$1`, or as `queueIs` says) and state (`$2`), in two
 * versions (`inState` picks one); `text` is given where those rows come from, a FROM clause
 * with its WHERE, to which it adds its own conditions with AND. Every state but `leased` is read in
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
export const byState = (text: (from: string) => string, queueIs = 'queue = $1'): ByState => ({
  others: statement(text(`jobs WHERE ${queueIs} AND state = $2 AND state <> 'leased'`)),
  leased: statement(
    text(
      `(SELECT seq, type FROM jobs WHERE ${queueIs} AND state = $2 AND state = 'leased' OFFSET 0) AS leased WHERE true`,
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
 * Seqs of the queues `$1` (an array: every queue of a list in one read) in state `$2`, in seq
 * order, of one type (`$5`) or any, whose type is in [`$6`, `$7`).
 */
const acrossTypes = (op: '>' | '<', dir: 'ASC' | 'DESC') =>
  byState(
    (from) =>
      `SELECT seq FROM ${from} AND ($5::text IS NULL OR type = $5) AND type >= $6 AND type < $7
        AND seq ${op} $3 ORDER BY seq ${dir} LIMIT $4`,
    'queue = ANY($1::text[])',
  );
const acrossTypesAsc = acrossTypes('>', 'ASC');
const acrossTypesDesc = acrossTypes('<', 'DESC');
/** The states a list reads as one range: leased jobs are in no index by type (schema/postgres/0026). */
const unindexedByType: ReadonlySet<string> = new Set(['leased']);

export function browseOps(c: Connection): Browse {
  /** At most `bound` seqs of a range of one type. */
  const ofType = (p: SeqRange, bound: number) =>
    seqList(c, inState(p.descending ? seqsDesc : seqsAsc, p.state), [...rangeOf(p, bound), p.type]);
  return {
    unindexedByType,
    *typeAfter(p) {
      return yield* value<string>(c, inState(typeAfter, p.state), [p.queue, p.state, p.afterType]);
    },
    *typeFrom(p) {
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
    seqsAnyType(p) {
      return seqList(
        c,
        inState(p.descending ? seqsAnyTypeDesc : seqsAnyTypeAsc, p.state),
        rangeOf(p, p.limit),
      );
    },
    scanSeqs(p) {
      return ofType(p, p.scan);
    },
    scanSeqsAcrossTypes(p) {
      return seqList(c, inState(p.descending ? acrossTypesDesc : acrossTypesAsc, p.state), [
        p.queues,
        p.state,
        p.fromSeq,
        p.scan,
        p.type,
        p.typePrefix,
        `${p.typePrefix}\u{10ffff}`,
      ]);
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
