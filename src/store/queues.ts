/**
 * Queues, the exact per-state counts of their jobs, and their run-time settings (the
 * operators' overrides of sepp.toml): capabilities of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { OverrideRow, QueueCountRow } from './rows.ts';

// ---------------------------------------------------------------- queues

export interface QueueReads {
  /** Every queue by name, with its paused flag. */
  all(): Op<{ name: string; paused: boolean }[]>;
  /** Whether the queue's row exists, as this transaction sees it. */
  exists(name: string): Op<boolean>;
  /** The queue's row by its name (one primary-key read), or undefined when there is none. */
  find(name: string): Op<{ paused: boolean; has_groups: boolean } | undefined>;
  /** The queues that have had a job with a group (they lease by turns across groups). */
  withGroups(): Op<string[]>;
  /** The earliest due time among the queue's ready jobs without a group, or null: an index probe per priority. */
  oldestUngroupedReadyMs(queue: string): Op<number | null>;
}

export interface Queues extends QueueReads {
  /** Creates the queue's row (and its counters, all 0) unless it exists. */
  create(p: { name: string; createdAtMs: number; settingsJson: string }): Op<void>;
  /** Records the queue's effective settings, for forensics (the engine reads its own). */
  recordSettings(p: { name: string; settingsJson: string }): Op<void>;
  setPaused(p: { name: string; paused: boolean }): Op<void>;
  /** Marks the queue as one that has had a job with a group. */
  markGrouped(name: string): Op<void>;
  /** Removes a queue that holds no job: its counters, its rate-limit buckets and its row. */
  delete(name: string): Op<void>;
}

// ---------------------------------------------------------------- counts

/**
 * Per-queue, per-state counts of jobs. The engine keeps them exact: every
 * operation that adds, removes or moves jobs is followed by `adjust` in the
 * same unit, so nothing ever counts rows to answer (`mismatches` checks it).
 */
export interface CountReads {
  all(): Op<QueueCountRow[]>;
  ofQueue(queue: string): Op<{ state: string; jobs: number }[]>;
  inState(p: { queue: string; state: string }): Op<number>;
  /** Waiting, scheduled, ready and leased jobs of a queue (max_depth). */
  unfinished(queue: string): Op<number>;
  /** Every job stored, from the counts. */
  total(): Op<number>;
  /** One line per count that disagrees with its rows (`queue/state: counter N, rows M`); empty when exact. */
  mismatches(): Op<string[]>;
}

export interface Counts extends CountReads {
  /** `jobs` jobs of `queue` left state `from` (null: they are new) for state `to` (null: they are gone). */
  adjust(p: { queue: string; from: string | null; to: string | null; jobs: number }): Op<void>;
}

// ---------------------------------------------------------------- run-time queue settings

export interface SettingReads {
  /** Every override, by queue and key. */
  all(): Op<OverrideRow[]>;
  ofQueue(queue: string): Op<{ key: string; value_json: string }[]>;
}

export interface Settings extends SettingReads {
  put(p: { queue: string; key: string; valueJson: string; setAtMs: number; setBy: string }): Op<void>;
  delete(p: { queue: string; key: string }): Op<void>;
}
