/**
 * The admin UI's reads of jobs by state, page by page: a capability of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { DueRow } from './rows.ts';

/** A range of one queue, state and job type in enqueue order (seq), from `fromSeq` exclusive. */
export interface SeqRange {
  queue: string;
  state: string;
  type: string;
  fromSeq: number;
  descending: boolean;
}

/**
 * Idempotency keys of one shape: those that start with `prefix` and are `length`
 * characters long. A schedule's jobs have keys of two shapes, its ticks' and its
 * manual runs' (src/engine/schedules/validate.ts scheduleKeyShapes).
 */
export interface KeyShape {
  prefix: string;
  length: number;
}
/** A key of either shape matches. */
export type KeyShapes = readonly [KeyShape, KeyShape];

export interface Browse {
  /**
   * The states whose jobs this store keeps in no index by type (PostgreSQL: `leased`,
   * schema/postgres/0026). A list reads each of them as one range (`scanSeqsAcrossTypes`),
   * every type and queue of the list in it: a read of such a state costs as many rows as
   * are in it, in every queue, so one read per queue, type and type seek would cost that
   * many times over.
   */
  readonly unindexedByType: ReadonlySet<string>;
  /** The next job type after `afterType` present in a queue and state: one seek (a loose index scan step). */
  typeAfter(p: { queue: string; state: string; afterType: string }): Op<string | undefined>;
  /** The first job type in [`fromType`, `belowType`) present in a queue and state. */
  typeFrom(p: { queue: string; state: string; fromType: string; belowType: string }): Op<string | undefined>;
  /** Seqs of a range, at most `limit`. */
  seqs(p: SeqRange & { limit: number }): Op<number[]>;
  /** Seqs of a queue and state of any type (sorts them: for queues with very many types only). */
  seqsAnyType(p: Omit<SeqRange, 'type'> & { limit: number }): Op<number[]>;
  /** Seqs of a range as the browse list reads it: at most `scan` index entries. */
  scanSeqs(p: SeqRange & { scan: number }): Op<number[]>;
  /**
   * Seqs of some queues' jobs in one state, in enqueue order, of every type that starts
   * with `typePrefix` (or of `type` alone), at most `scan`: the one range of a state of
   * `unindexedByType`.
   */
  scanSeqsAcrossTypes(
    p: Omit<SeqRange, 'type' | 'queue'> & {
      queues: readonly string[];
      type: string | null;
      typePrefix: string;
      scan: number;
    },
  ): Op<number[]>;
  /** A queue's scheduled jobs (`retries`: only those scheduled after a delivery) by due time, from a position. */
  scanDue(p: {
    queue: string;
    retries: boolean;
    fromDueMs: number;
    fromSeq: number;
    descending: boolean;
    scan: number;
  }): Op<DueRow[]>;
  /** Which of `seqs` pass the filters no index answers (null: any); one primary-key probe each. */
  filter(p: {
    seqs: readonly number[];
    errorText: string | null;
    metadata: { key: string; value: string } | null;
    typePrefix: string | null;
    groupKey: string | null;
    /** Only jobs enqueued before this time (ms since the epoch). */
    enqueuedBeforeMs: number | null;
    /** Only dead letters of this reason. */
    deadReason: string | null;
    /** Only jobs whose idempotency key has one of these shapes (a schedule's jobs). */
    keyShapes: KeyShapes | null;
  }): Op<number[]>;
  /** Ids in [`lo`, `hi`), newest first. */
  idsBetween(p: { lo: string; hi: string; limit: number }): Op<string[]>;
  /** Ids containing `fragment` among the newest `scan` ids. */
  idsContaining(p: { fragment: string; scan: number; limit: number }): Op<string[]>;
}
