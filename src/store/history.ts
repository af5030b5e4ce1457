/**
 * The job history's minute and hour rows: a capability of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { HistoryRow } from './rows.ts';

/** The job history (src/engine/history/): rows per bucket, written once a minute. */
export interface HistoryReads {
  /** Rows of `resolution` whose bucket starts in [`fromMs`, `toMs`): a primary-key range. */
  between(p: { resolution: 'm' | 'h'; fromMs: number; toMs: number }): Op<HistoryRow[]>;
}

export interface History extends HistoryReads {
  /** Writes `rows`, each replacing the row with its key. */
  put(rows: readonly HistoryRow[]): Op<void>;
  /** Forgets the rows of `resolution` whose bucket starts before `beforeMs`: a primary-key range. */
  forget(p: { resolution: 'm' | 'h'; beforeMs: number }): Op<void>;
}
