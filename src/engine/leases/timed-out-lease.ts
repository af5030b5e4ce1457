/**
 * The end of an attempt that ran past its hard timeout (`timeout_ms`, or the
 * queue's `default_timeout_ms`). The lease set `timeout_at_ms` and capped its
 * deadline there, and extend never moves it past, so the lease-expiry sweep
 * (maintenance.ts) meets the attempt at that time: it ends failed with reason
 * `timeout` and the queue's retry policy (backoff) decides what follows. The
 * Work streams are told after the commit (as of a cancel); an extend of the
 * attempt from its timeout on is refused with `job_timed_out` (settle.ts).
 */
import type { Op } from '../../store/op.ts';
import type { AttemptRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import type { TimeoutNotice } from '../control-types.ts';
import type { NackResult } from '../types.ts';

export type TimeoutListener = (notices: readonly TimeoutNotice[]) => void;

/**
 * The listeners told of attempts that timed out (the rpc layer's Work streams), and,
 * on a store other servers share, those servers (their Work streams may hold the lease).
 */
export class TimeoutNotices {
  private readonly listeners = new Set<TimeoutListener>();
  private remote: TimeoutListener | undefined;

  /** Calls `listener` after each commit that ended attempts by their timeout; returns the unsubscribe. */
  onTimedOut(listener: TimeoutListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Also tells `remote` (the store's signals to the other servers) of every timeout committed here. */
  relayTo(remote: TimeoutListener): void {
    this.remote = remote;
  }

  /** Tells the listeners (and the other servers) after the commit of `tx`. */
  notify(tx: StoreTx, notices: readonly TimeoutNotice[]): void {
    if (notices.length === 0 || (this.listeners.size === 0 && this.remote === undefined)) return;
    tx.afterCommit(() => {
      this.deliver(notices);
      this.remote?.(notices);
    });
  }

  /** Tells this server's listeners of timeouts committed here, or by another server sharing the store. */
  deliver(notices: readonly TimeoutNotice[]): void {
    for (const listener of this.listeners) listener(notices);
  }
}

/** Whether the attempt of `row` has passed its hard timeout at `nowMs`. */
export function pastTimeout(row: Pick<AttemptRow, 'timeout_at_ms'>, nowMs: number): boolean {
  return row.timeout_at_ms !== null && row.timeout_at_ms <= nowMs;
}

/** The error an attempt ended by its timeout leaves in the job's history (it starts with `timeout:`). */
export function timeoutError(timeoutAtMs: number): string {
  return `timeout: the attempt ran past its hard timeout at ${new Date(timeoutAtMs).toISOString()} (timeout_ms)`;
}

/** What an extend of an attempt past its timeout is told. */
export function timedOutMessage(jobId: string, attempt: number, timeoutAtMs: number | null): string {
  const at = timeoutAtMs === null ? '' : ` at ${new Date(timeoutAtMs).toISOString()}`;
  return `job ${jobId} attempt ${attempt} ran past its hard timeout${at} (timeout_ms): stop working on it; the queue's retry policy decides what follows`;
}

/**
 * Whether the job's error history says `attempt` ended by its timeout: read only when a
 * settlement is refused anyway (the attempt is over), to name the reason.
 */
export function endedByTimeout(errorsJson: string | null, attempt: number): boolean {
  if (errorsJson === null) return false;
  const list = JSON.parse(errorsJson) as { attempt: number; error: string }[];
  for (let i = list.length - 1; i >= 0; i--) {
    const entry = list[i]!;
    if (entry.attempt === attempt) return entry.error.startsWith('timeout:');
  }
  return false;
}

/** Ends the attempt of `row`, past its timeout: failed, reason `timeout`, then the queue's backoff. Inside a write. */
export function* finishTimedOut(
  ctx: EngineContext,
  tx: StoreTx,
  row: AttemptRow,
  failAttempt: (tx: StoreTx, row: AttemptRow, error: string) => Op<NackResult>,
): Op<TimeoutNotice> {
  const timeoutAtMs = row.timeout_at_ms!;
  ctx.emit(tx, { kind: 'timed_out', queue: row.queue, count: 1 });
  yield* failAttempt(tx, row, timeoutError(timeoutAtMs));
  return { jobId: row.id, queue: row.queue, attempt: row.attempt, workerId: row.worker_id, timeoutAtMs };
}
