/** The job history's shapes, as the admin API answers them (and the UI reads them: no imports). */

export type HistoryWindow = '1h' | '24h' | '7d';

/** What happened to a job: an attempt that completed or failed, or the job went dead. */
export type HistoryOutcome = 'completed' | 'failed' | 'dead';

export interface HistoryFigures {
  completed: number;
  failed: number;
  dead: number;
  /** failed / (completed + failed), over the attempts that ended; null when none did. */
  failureRate: number | null;
  waitP50Ms: number | null;
  waitP95Ms: number | null;
  runP50Ms: number | null;
  runP95Ms: number | null;
}

export interface HistoryBucket {
  startMs: number;
  /** How much of the bucket a server was running and counting (0: no data). */
  coveredMs: number;
  completed: number;
  failed: number;
  dead: number;
}

export interface HistoryAnswer {
  window: HistoryWindow;
  bucketMs: number;
  /** The figures cover [fromMs, toMs): whole buckets, the last one up to the last flush. */
  fromMs: number;
  toMs: number;
  /** How much of [fromMs, toMs) a server was running and counting. */
  coveredMs: number;
  /** The start of the first bucket with data in the window; null: none. */
  firstDataMs: number | null;
  buckets: HistoryBucket[];
  total: HistoryFigures;
  queues: (HistoryFigures & { queue: string })[];
  types: (HistoryFigures & { queue: string; type: string })[];
  /** The (queue, type) pairs a process keeps apart; past it they count under '(other)'. */
  maxSeries: number;
}
