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
 * Cost: one Map insertion and a slot in each of a few columns per job (class
 * comment below), after the commit that ended it; no statement. Eviction happens as outcomes are
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

/** Compact the columns once this many forgotten slots lead them, and they are half of them. */
const compactAfter = 1024;

/** What a few outcomes hold beyond a plain completion's fields (kept by position, only when one is set). */
interface OutcomeExtras {
  result: Uint8Array | null;
  resultContentType: string | null;
  lastError: string | null;
  deadReason: DeadReason | null;
  cancelledBy: string | null;
}

const stateNames = ['completed', 'dead', 'cancelled'] as const;
const stateIndex = { completed: 0, dead: 1, cancelled: 2 } as const;
/** `startedAtMs` in its column: NaN for null, -Infinity for absent. */
const startedNull = Number.NaN;
const startedAbsent = Number.NEGATIVE_INFINITY;

/** Estimated bytes of an outcome with these extras (as `outcomeBytes`). */
function extrasBytes(extras: OutcomeExtras | undefined): number {
  return outcomeOverheadBytes + (extras?.result?.byteLength ?? 0) + 2 * (extras?.lastError?.length ?? 0);
}

/**
 * Outcomes are kept in columns (one array per field, oldest first), not as one object per job:
 * every outcome lives until finished_outcome_ms has passed or 100,000 newer ones came, so each
 * is promoted to V8's old generation, and every full collection marks all of them. As objects,
 * an outcome was ~6 heap objects (the outcome, its two times as numbers, its id, queue and type
 * strings); in columns it is its id string and its slots, and its queue and type are the
 * previous outcome's strings when they are equal (a drain's are). With 100,000 held: ~160 bytes
 * each instead of ~315, and ~9 ms of a full collection instead of 56–77
 * (bench/finished-outcomes-gc.ts; bench/results/pg-drain-cpu-2026-12-07-s20.md).
 */
export class FinishedOutcomes {
  /** Each job's newest kept outcome: its position (`first` + its index in the columns). */
  private readonly byId = new Map<string, number>();
  /** The columns of every outcome added and not yet forgotten, oldest first (a replaced one too: it still counts until its turn). */
  private ids: string[] = [];
  private queues: string[] = [];
  private types: string[] = [];
  private states: number[] = [];
  private attempts: number[] = [];
  private endedAtMs: number[] = [];
  private startedAtMs: number[] = [];
  /** The extras of the outcomes that have any, by position. */
  private readonly extras = new Map<number, OutcomeExtras>();
  /** The index of the oldest outcome not forgotten. */
  private head = 0;
  /** The position of index 0 (positions count every outcome ever added). */
  private first = 0;
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
    return this.ids.length - this.head;
  }

  /** Estimated bytes held now. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Keeps `outcome` (after the commit that ended its job); forgets what the bounds and the time say to. */
  add(outcome: FinishedOutcome, nowMs: number): void {
    const last = this.ids.length - 1;
    const position = this.first + this.ids.length;
    this.byId.set(outcome.id, position);
    this.ids.push(outcome.id);
    // The previous outcome's string when equal: one string for a queue's outcomes, not one each.
    const queue = last >= this.head ? this.queues[last]! : undefined;
    const type = last >= this.head ? this.types[last]! : undefined;
    this.queues.push(queue === outcome.queue ? queue : outcome.queue);
    this.types.push(type === outcome.type ? type : outcome.type);
    this.states.push(stateIndex[outcome.state]);
    this.attempts.push(outcome.attempt);
    this.endedAtMs.push(outcome.endedAtMs);
    const started = outcome.startedAtMs;
    this.startedAtMs.push(started === undefined ? startedAbsent : started === null ? startedNull : started);
    const { result, resultContentType, lastError, deadReason, cancelledBy } = outcome;
    let extras: OutcomeExtras | undefined;
    if (
      result !== null ||
      resultContentType !== null ||
      lastError !== null ||
      deadReason !== null ||
      cancelledBy !== null
    ) {
      extras = { result, resultContentType, lastError, deadReason, cancelledBy };
      this.extras.set(position, extras);
    }
    this.heldBytes += extrasBytes(extras);
    this.prune(nowMs);
  }

  /** The kept outcome of `jobId`, if it ended no longer than finished_outcome_ms before `nowMs`. */
  get(jobId: string, nowMs: number): FinishedOutcome | undefined {
    const position = this.byId.get(jobId);
    if (position === undefined) return undefined;
    const i = position - this.first;
    const endedAtMs = this.endedAtMs[i]!;
    if (this.expired(endedAtMs, nowMs)) return undefined;
    const extras = this.extras.get(position);
    const outcome: FinishedOutcome = {
      id: this.ids[i]!,
      queue: this.queues[i]!,
      type: this.types[i]!,
      state: stateNames[this.states[i]!]!,
      attempt: this.attempts[i]!,
      endedAtMs,
      result: extras?.result ?? null,
      resultContentType: extras?.resultContentType ?? null,
      lastError: extras?.lastError ?? null,
      deadReason: extras?.deadReason ?? null,
      cancelledBy: extras?.cancelledBy ?? null,
    };
    const started = this.startedAtMs[i]!;
    if (started !== startedAbsent) outcome.startedAtMs = Number.isNaN(started) ? null : started;
    return outcome;
  }

  /** Forgets the oldest outcomes while there are too many, they hold too much, or they are too old. */
  prune(nowMs: number): void {
    const { maxOutcomes, maxBytes } = this.bounds;
    while (this.head < this.ids.length) {
      const i = this.head;
      if (this.size <= maxOutcomes && this.heldBytes <= maxBytes && !this.expired(this.endedAtMs[i]!, nowMs))
        break;
      const position = this.first + i;
      const extras = this.extras.get(position);
      if (extras !== undefined) this.extras.delete(position);
      this.heldBytes -= extrasBytes(extras);
      const id = this.ids[i]!;
      if (this.byId.get(id) === position) this.byId.delete(id);
      // Let go of the strings now; the slots go at the next compaction.
      this.ids[i] = '';
      this.queues[i] = '';
      this.types[i] = '';
      this.head++;
    }
    if (this.head === this.ids.length) this.keepFrom(this.head, true);
    else if (this.head >= compactAfter && this.head * 2 >= this.ids.length) this.keepFrom(this.head, false);
  }

  /** Drops the columns' first `index` slots (all of them: `all`). */
  private keepFrom(index: number, all: boolean): void {
    const cut = <T>(column: T[]): T[] => (all ? [] : column.slice(index));
    this.ids = cut(this.ids);
    this.queues = cut(this.queues);
    this.types = cut(this.types);
    this.states = cut(this.states);
    this.attempts = cut(this.attempts);
    this.endedAtMs = cut(this.endedAtMs);
    this.startedAtMs = cut(this.startedAtMs);
    this.first += index;
    this.head = 0;
  }

  private expired(endedAtMs: number, nowMs: number): boolean {
    return nowMs - endedAtMs > this.keepMs();
  }
}
