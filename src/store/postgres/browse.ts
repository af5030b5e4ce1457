/**
 * The reads behind the operators' job lists and the admin search box, each a
 * bounded index range read: `scan` caps how many index entries one read may
 * examine, so a filter no index answers costs at most that many row probes.
 */

import type { Browse, KeyShapes, SeqRange } from '../browse.ts';
import type { DueRow } from '../rows.ts';
import { type Connection, rows, statement, value } from './sql.ts';

const typeAfter = statement(
  'SELECT type AS v FROM jobs WHERE queue = $1 AND state = $2 AND type > $3 ORDER BY type LIMIT 1',
);
const typeFrom = statement(
  'SELECT type AS v FROM jobs WHERE queue = $1 AND state = $2 AND type >= $3 AND type < $4 ORDER BY type LIMIT 1',
);
/**
 * The same, from just after `fromType` (the engine asks from `type + "\0"`, the least string
 * after `type`; PostgreSQL text cannot hold U+0000, so that bound is asked this way).
 */
const typeAfterBelow = statement(
  'SELECT type AS v FROM jobs WHERE queue = $1 AND state = $2 AND type > $3 AND type < $4 ORDER BY type LIMIT 1',
);
const seqsOf = (op: '>' | '<', dir: 'ASC' | 'DESC', byType: boolean) =>
  statement(
    `SELECT seq FROM jobs WHERE queue = $1 AND state = $2 ${byType ? 'AND type = $5' : ''} AND seq ${op} $3
      ORDER BY seq ${dir} LIMIT $4`,
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

function* seqList(c: Connection, s: ReturnType<typeof statement>, values: readonly unknown[]) {
  return (yield* rows<{ seq: number }>(c, s, values)).map((row) => row.seq);
}

const rangeOf = (p: Omit<SeqRange, 'type'>, bound: number) => [p.queue, p.state, p.fromSeq, bound];

export function browseOps(c: Connection): Browse {
  return {
    *typeAfter(p) {
      return yield* value<string>(c, typeAfter, [p.queue, p.state, p.afterType]);
    },
    *typeFrom(p) {
      if (p.fromType.endsWith('\u0000')) {
        const after = p.fromType.slice(0, -1);
        return yield* value<string>(c, typeAfterBelow, [p.queue, p.state, after, p.belowType]);
      }
      return yield* value<string>(c, typeFrom, [p.queue, p.state, p.fromType, p.belowType]);
    },
    *seqs(p) {
      return yield* seqList(c, p.descending ? seqsDesc : seqsAsc, [...rangeOf(p, p.limit), p.type]);
    },
    *seqsAnyType(p) {
      return yield* seqList(c, p.descending ? seqsAnyTypeDesc : seqsAnyTypeAsc, rangeOf(p, p.limit));
    },
    *scanSeqs(p) {
      return yield* seqList(c, p.descending ? seqsDesc : seqsAsc, [...rangeOf(p, p.scan), p.type]);
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
