/**
 * Signals between the servers that share one store (PostgreSQL): an optional capability
 * of the Store (store.ts).
 */

/**
 * What one server tells the others that share its store (several sepp servers on
 * one PostgreSQL database): sent after the commit it describes, at most once in
 * flight (what comes meanwhile goes in the next), and lost without harm — the
 * engine also polls the store (`pollIntervalMs`), so a signal is a shortcut, never
 * the only way news arrives. A store that no other server shares has none.
 */
export interface StoreSignals {
  /** How often the engine looks for what a lost signal would have told it (ready jobs, maintenance). */
  readonly pollIntervalMs: number;
  /**
   * `jobs` jobs of `queue` became ready here (after the commit that made them so); `grouped`:
   * the queue has had jobs with a group (queues.has_groups), so that a server that has not
   * seen one there yet leases its grouped jobs at once, not after its next poll.
   */
  readyJobs(queue: string, jobs: number, grouped?: boolean): void;
  /**
   * Cancels of leased jobs were committed here: the workers holding them may be
   * connected to another server. Without the signal they learn at their next
   * extend or settlement (refused with job_cancelled).
   */
  cancelRequested(notices: readonly CancelSignal[]): void;
  /**
   * Attempts ended by their hard timeout here (the expiry sweep of whichever server ran
   * it): the workers holding them may be connected to another server. Without the
   * signal they learn at their next extend (refused with job_timed_out).
   */
  attemptsTimedOut(notices: readonly TimeoutSignal[]): void;
  /**
   * Calls `listener` for what another server said (one listener; a later call replaces it),
   * and with `listening` each time this server starts to hear them (at once when it already does).
   */
  listen(listener: (signal: StoreSignal) => void): void;
}

/** A cancel of one lease, as the servers tell each other of it. */
export interface CancelSignal {
  jobId: string;
  queue: string;
  attempt: number;
  workerId: string | null;
  cancelledBy: string | null;
  cancelledAtMs: number;
}

/** An attempt ended by its hard timeout, as the servers tell each other of it. */
export interface TimeoutSignal {
  jobId: string;
  queue: string;
  attempt: number;
  workerId: string | null;
  timeoutAtMs: number;
}

/**
 * A signal from another server; or `listening`: from now on this server hears the others'
 * signals (its listener connected, at the start or again after it was lost), and did not
 * hear what they sent before — what is in the store now tells it.
 */
export type StoreSignal =
  | { kind: 'listening' }
  | { kind: 'ready'; queue: string; jobs: number; grouped: boolean }
  | { kind: 'cancel'; notices: readonly CancelSignal[] }
  | { kind: 'timeout'; notices: readonly TimeoutSignal[] };
