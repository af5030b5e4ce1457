/**
 * The statements behind the admin UI's job lists across queues and states,
 * and its search box (src/engine/job-browse.ts). Each read is a bounded index
 * range read: `@scan` caps how many index entries one range read may examine,
 * so a filter the index cannot answer (error text, metadata) costs at most
 * that many row probes per page, never a scan of the table. Prepared once;
 * tests/admin/query-plans.test.ts checks the plans.
 */
import type { Db } from './open.ts';

interface SeqScan {
  queue: string;
  state: string;
  type: string;
  /** Exclusive bound: after it when ascending, before it when descending. */
  from_seq: number;
  scan: number;
}

interface DueScan {
  queue: string;
  /** Exclusive bound on (run_at_ms, seq). */
  from_due_ms: number;
  from_seq: number;
  scan: number;
}

export interface DueRow {
  seq: number;
  run_at_ms: number;
}

export interface ResidualFilter {
  seqs_json: string;
  /** Case-insensitive text the last error must contain; null: any. */
  error_text: string | null;
  /** A JSON path ($."key") into the metadata and the value it must have; null: any. */
  meta_path: string | null;
  meta_value: string | null;
  /** Type range [type_lo, type_hi) for a type prefix; null: any. */
  type_lo: string | null;
  type_hi: string | null;
  /** The group the job must be in; null: any (with a group or without). */
  group_key: string | null;
}

export function prepareBrowseStatements(db: Db) {
  const seqScan = (op: '>' | '<', dir: 'ASC' | 'DESC') =>
    db
      .prepare<[SeqScan], number>(
        `SELECT seq FROM jobs INDEXED BY jobs_by_state_type
          WHERE queue = @queue AND state = @state AND type = @type AND seq ${op} @from_seq
          ORDER BY seq ${dir} LIMIT @scan`,
      )
      .pluck();
  const dueScan = (index: string, extra: string, op: '>' | '<', dir: 'ASC' | 'DESC') =>
    db.prepare<[DueScan], DueRow>(
      `SELECT seq, run_at_ms FROM jobs INDEXED BY ${index}
        WHERE queue = @queue AND state = 'scheduled' ${extra}
          AND (run_at_ms, seq) ${op} (@from_due_ms, @from_seq)
        ORDER BY run_at_ms ${dir}, seq ${dir} LIMIT @scan`,
    );
  return {
    /** The first job type at or after @from_type (and before @below_type) in a queue and state: one index seek. */
    typeAtOrAfter: db
      .prepare<[{ queue: string; state: string; from_type: string; below_type: string }], string>(
        `SELECT type FROM jobs INDEXED BY jobs_by_state_type
          WHERE queue = @queue AND state = @state AND type >= @from_type AND type < @below_type
          ORDER BY type LIMIT 1`,
      )
      .pluck(),
    /** Seqs of one queue, state and type, in enqueue order after (before) @from_seq, at most @scan. */
    seqScanAsc: seqScan('>', 'ASC'),
    seqScanDesc: seqScan('<', 'DESC'),
    /** Scheduled jobs of a queue by due time. */
    dueScanAsc: dueScan('jobs_scheduled_due', '', '>', 'ASC'),
    dueScanDesc: dueScan('jobs_scheduled_due', '', '<', 'DESC'),
    /** Retries (scheduled after a delivery) of a queue by due time. */
    retryScanAsc: dueScan('jobs_retrying_due', 'AND attempt > 0', '>', 'ASC'),
    retryScanDesc: dueScan('jobs_retrying_due', 'AND attempt > 0', '<', 'DESC'),
    /** Which of the jobs in @seqs_json pass the filters the indexes cannot answer: one primary-key probe each. */
    residual: db
      .prepare<[ResidualFilter], number>(
        `SELECT seq FROM jobs WHERE seq IN (SELECT value FROM json_each(@seqs_json))
          AND (@error_text IS NULL OR instr(lower(last_error), lower(@error_text)) > 0)
          AND (@meta_path IS NULL OR json_extract(metadata_json, @meta_path) = @meta_value)
          AND (@type_lo IS NULL OR (type >= @type_lo AND type < @type_hi))
          AND (@group_key IS NULL OR group_key = @group_key)`,
      )
      .pluck(),
    /** Ids starting with @lo (up to @hi, exclusive), newest first: a range of the id index. */
    idsByPrefix: db
      .prepare<[{ lo: string; hi: string; limit: number }], string>(
        'SELECT id FROM jobs WHERE id >= @lo AND id < @hi ORDER BY id DESC LIMIT @limit',
      )
      .pluck(),
    /**
     * Ids containing @fragment among the newest @scan ids (ids are time-ordered, so the
     * id index read backwards is newest first): bounded, and the caller says so.
     */
    idsContaining: db
      .prepare<[{ fragment: string; scan: number; limit: number }], string>(
        `SELECT id FROM (SELECT id FROM jobs ORDER BY id DESC LIMIT @scan)
          WHERE instr(id, @fragment) > 0 LIMIT @limit`,
      )
      .pluck(),
    /**
     * Leases held per worker id: reads the leased jobs only (the jobs_leased partial
     * index), so it costs what is running now, not what is stored.
     */
    leasesByWorker: db.prepare<[], { worker_id: string | null; jobs: number; since_ms: number }>(
      `SELECT worker_id, count(*) AS jobs, min(leased_at_ms) AS since_ms FROM jobs INDEXED BY jobs_leased
        WHERE state = 'leased' GROUP BY worker_id`,
    ),
    /** Stored jobs, how many there are: the sum of the maintained counters (for "searched N of M"). */
    storedJobs: db.prepare<[], number>('SELECT coalesce(sum(jobs), 0) FROM queue_counts').pluck(),
  };
}

export type BrowseStatements = ReturnType<typeof prepareBrowseStatements>;
