-- 0001: the initial schema.
-- Why: sepp keeps every job in one SQLite table with readable text states and
-- `_ms` time columns, so `sqlite3` on a copy answers forensic questions. Each hot
-- path has a partial index over just the rows in that state, and per-queue counts
-- are kept by triggers in the same transaction, so stats never scan jobs.

CREATE TABLE queues (
  name           TEXT PRIMARY KEY,
  paused         INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  created_at_ms  INTEGER NOT NULL,
  -- The effective settings when the server last started or the queue was created (JSON), for forensics.
  settings_json  TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;

CREATE TABLE jobs (
  seq              INTEGER PRIMARY KEY,        -- enqueue order within the database
  id               TEXT NOT NULL UNIQUE,       -- public id, UUIDv7 (time-ordered)
  queue            TEXT NOT NULL REFERENCES queues (name),
  type             TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('scheduled', 'ready', 'leased', 'completed', 'dead')),
  priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 9),
  payload          BLOB NOT NULL,
  content_type     TEXT NOT NULL,
  metadata_json    TEXT,                       -- {"key": "value"} or NULL when empty
  traceparent      TEXT,
  tracestate       TEXT,
  idempotency_key  TEXT,
  attempt          INTEGER NOT NULL DEFAULT 0, -- deliveries so far; the fencing value of the current lease
  max_attempts     INTEGER NOT NULL,           -- deliveries allowed per budget
  attempt_base     INTEGER NOT NULL DEFAULT 0, -- `attempt` when the current budget began (a requeue starts a new one)
  enqueued_at_ms   INTEGER NOT NULL,
  run_at_ms        INTEGER NOT NULL,           -- when the job is (or was) due
  leased_at_ms     INTEGER,
  lease_deadline_ms INTEGER,
  worker_id        TEXT,
  last_error       TEXT,
  errors_json      TEXT,                       -- [{"attempt":n,"at_ms":t,"error":"..."}], oldest first, bounded
  dead_reason      TEXT CHECK (dead_reason IN ('attempts_exhausted', 'lease_expired', 'dead_lettered')),
  failed_at_ms     INTEGER,
  completed_at_ms  INTEGER
);

-- Reserve: the next ready job of a queue by priority (high first), due time, enqueue order.
CREATE INDEX jobs_ready ON jobs (queue, priority DESC, run_at_ms, seq) WHERE state = 'ready';
-- Promotion of scheduled jobs whose run-at has come.
CREATE INDEX jobs_scheduled ON jobs (run_at_ms) WHERE state = 'scheduled';
-- Lease expiry.
CREATE INDEX jobs_leased ON jobs (lease_deadline_ms) WHERE state = 'leased';
-- Dead letters by queue, oldest failure first; also the retention sweep.
CREATE INDEX jobs_dead ON jobs (queue, failed_at_ms, seq) WHERE state = 'dead';
-- Retention sweep of completed jobs.
CREATE INDEX jobs_completed ON jobs (queue, completed_at_ms) WHERE state = 'completed';

CREATE TABLE idempotency_keys (
  queue          TEXT NOT NULL,
  key            TEXT NOT NULL,
  job_id         TEXT NOT NULL,
  expires_at_ms  INTEGER NOT NULL,
  PRIMARY KEY (queue, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);

-- Jobs per queue and state, maintained by the triggers below.
CREATE TABLE queue_counts (
  queue  TEXT NOT NULL,
  state  TEXT NOT NULL,
  jobs   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, state)
) WITHOUT ROWID;

CREATE TRIGGER queues_counts_init AFTER INSERT ON queues BEGIN
  INSERT INTO queue_counts (queue, state) VALUES
    (new.name, 'scheduled'), (new.name, 'ready'), (new.name, 'leased'), (new.name, 'completed'), (new.name, 'dead');
END;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
  UPDATE queue_counts SET jobs = jobs + 1 WHERE queue = new.queue AND state = new.state;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
  UPDATE queue_counts SET jobs = jobs - 1 WHERE queue = old.queue AND state = old.state;
END;

CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs WHEN old.state <> new.state BEGIN
  UPDATE queue_counts SET jobs = jobs - 1 WHERE queue = old.queue AND state = old.state;
  UPDATE queue_counts SET jobs = jobs + 1 WHERE queue = new.queue AND state = new.state;
END;
