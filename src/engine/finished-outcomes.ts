/**
 * The outcomes of jobs deleted as they finished: a job acked on a queue that
 * keeps no completed jobs (completed_retention_ms 0, the default) is deleted
 * in its ack, and a dead or cancelled job on a queue whose retention for that
 * state is 0 is swept at the next pass; so that a producer who asks moments
 * later (GetJob, `waitFor`, `sepp job ID --wait`, the HTTP outcome long-poll)
 * still learns how it ended, its outcome is kept here, in memory, for
 * limits.finished_outcome_ms (0: nothing is kept).
 *
 * What is kept is the outcome only: id, queue, type, final state, attempt,
 * when it ended, the result (completed) or the last error and reason (dead),
 * who cancelled it (cancelled). Never the payload or the metadata. GetJob
 * answers with it only once the job's row is gone (`outcomeOnly`).
 *
 * Bounds: at most `maxOutcomes` outcomes and `maxBytes` estimated bytes
 * (results and errors included); past either, and once older than
 * finished_outcome_ms, the oldest are forgotten. Memory only: a restart
 * forgets them all.
 *
 * Cost: one Map insertion (and one array push, for the order) per job, after
 * the commit that ended it; no statement. Eviction happens as outcomes are
 * added, and on each maintenance pass so that an idle server lets go of them.
 */
import type { DeadReason } from './types.ts';

/** How a job deleted as it finished ended. */
export interface FinishedOutcome {
  id: string;
  queue: string;
  type: string;
  state: 'completed' | 'dead' | 'cancelled';
  /** The attempt of the last delivery (0: never delivered). */
  attempt: number;
  /** When it was acked, went dead or was cancelled. */
  endedAtMs: number;
  /** The ack's result (completed); null without one. */
  result: Uint8Array | null;
  resultContentType: string | null;
  /** The last attempt's error (dead; also a cancelled job's, when its worker gave one). */
  lastError: string | null;
  deadReason: DeadReason | null;
  /** Who asked for the cancel (cancelled). */
  cancelledBy: string | null;
  /** When its last attempt started (completed: the job page shows how long it ran); absent: unknown. */
  startedAtMs?: number | null;
}

/** The outcome kept of a dead job its queue does not keep (dead_retention_ms 0). */
export function deadOutcome(
  job: { id: string; queue: string; type: string },
  attempt: number,
  nowMs: number,
  error: string,
  deadReason: DeadReason,
): FinishedOutcome {
  return {
    id: job.id,
    queue: job.queue,
    type: job.type,
    state: 'dead',
    attempt,
    endedAtMs: nowMs,
    result: null,
    resultContentType: null,
    lastError: error,
    deadReason,
    cancelledBy: null,
  };
}

/** The outcome kept of a cancelled job its queue does not keep (cancelled_retention_ms 0). */
export function cancelledOutcome(
  row: { id: string; queue: string; type: string; attempt: number; cancelled_by: string | null },
  nowMs: number,
  error: string | null,
): FinishedOutcome {
  return {
    id: row.id,
    queue: row.queue,
    type: row.type,
    state: 'cancelled',
    attempt: row.attempt,
    endedAtMs: nowMs,
    result: null,
    resultContentType: null,
    lastError: error,
    deadReason: null,
    cancelledBy: row.cancelled_by,
  };
}

export interface FinishedOutcomeBounds {
  maxOutcomes: number;
  maxBytes: number;
}

/** 100,000 outcomes (about 25 MiB without results) and 64 MiB, whichever comes first. */
export const finishedOutcomeBounds: Readonly<FinishedOutcomeBounds> = Object.freeze({
  maxOutcomes: 100_000,
  maxBytes: 64 * 1024 * 1024,
});

/** What an outcome holds besides its result and error: the object, its strings, its Map and array slots. */
const outcomeOverheadBytes = 256;

/** Estimated bytes an outcome holds in memory. */
export function outcomeBytes(outcome: FinishedOutcome): number {
  return outcomeOverheadBytes + (outcome.result?.byteLength ?? 0) + 2 * (outcome.lastError?.length ?? 0);
}

/** Compact the order array once this many forgotten slots lead it, and they are half of it. */
const compactAfter = 1024;

export class FinishedOutcomes {
  private readonly byId = new Map<string, FinishedOutcome>();
  /** Every outcome added and not yet forgotten, oldest first (a replaced one too: it still counts until its turn). */
  private order: (FinishedOutcome | undefined)[] = [];
  private head = 0;
  private heldBytes = 0;

  constructor(
    /** limits.finished_outcome_ms in force (a reload may change it); 0 keeps nothing. */
    private readonly keepMs: () => number,
    private readonly bounds: Readonly<FinishedOutcomeBounds> = finishedOutcomeBounds,
  ) {}

  /** Whether outcomes are kept at all (finished_outcome_ms > 0). */
  get enabled(): boolean {
    return this.keepMs() > 0;
  }

  /** Outcomes held now (the ones replaced by a later one of the same job included). */
  get size(): number {
    return this.order.length - this.head;
  }

  /** Estimated bytes held now. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Keeps `outcome` (after the commit that ended its job); forgets what the bounds and the time say to. */
  add(outcome: FinishedOutcome, nowMs: number): void {
    this.byId.set(outcome.id, outcome);
    this.order.push(outcome);
    this.heldBytes += outcomeBytes(outcome);
    this.prune(nowMs);
  }

  /** The kept outcome of `jobId`, if it ended no longer than finished_outcome_ms before `nowMs`. */
  get(jobId: string, nowMs: number): FinishedOutcome | undefined {
    const outcome = this.byId.get(jobId);
    return outcome === undefined || this.expired(outcome, nowMs) ? undefined : outcome;
  }

  /** Forgets the oldest outcomes while there are too many, they hold too much, or they are too old. */
  prune(nowMs: number): void {
    const { maxOutcomes, maxBytes } = this.bounds;
    while (this.head < this.order.length) {
      const oldest = this.order[this.head]!;
      if (this.size <= maxOutcomes && this.heldBytes <= maxBytes && !this.expired(oldest, nowMs)) break;
      this.order[this.head] = undefined;
      this.head++;
      this.heldBytes -= outcomeBytes(oldest);
      if (this.byId.get(oldest.id) === oldest) this.byId.delete(oldest.id);
    }
    if (this.head === this.order.length) {
      this.order = [];
      this.head = 0;
    } else if (this.head >= compactAfter && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  private expired(outcome: FinishedOutcome, nowMs: number): boolean {
    return nowMs - outcome.endedAtMs > this.keepMs();
  }
}
