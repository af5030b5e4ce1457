-- 0001: the PostgreSQL store's schema (issue 37; docs/decisions/0100-postgres-store-design.md).
-- Why: the same tables, columns and units as the SQLite store (schema/0001..0011, as they
-- stand after 0011), so both stores answer the Store interface with the same rows, with
-- what PostgreSQL needs besides:
-- - every text column that is compared or ordered uses the "C" collation, so group turns,
--   type ranges and id prefixes order by code point as in SQLite, whatever the database's
--   default collation;
-- - partial indexes per state, as in SQLite; a lease or an ack changes `state`, so it is
--   never a HOT update, and every index it meets gets an entry: only the primary key, the
--   public id and the admin's (queue, state, type) index are on every row;
-- - `lease_deadline_ms` is set exactly while a job is leased (a CHECK): the ack says
--   `lease_deadline_ms IS NOT NULL`, not `state = 'leased'`, so the planner cannot pick a
--   leased-only partial index for an ack by id (design note, section 2);
-- - per-queue counts are rows per (queue, state, shard): each sepp server adds its deltas to
--   its own shard (an advisory lock gives it one), so no two servers wait on a counter row,
--   and a count is the sum over the shards (design note, section 5);
-- - autovacuum follows the churn of the jobs table (fixed thresholds, no scale factor).
-- The migration runs under an advisory lock (src/store/postgres/migrate.ts).
-- servers-from: 1 — the first schema.

CREATE TABLE queues (
  name           text COLLATE "C" PRIMARY KEY,
  paused         boolean NOT NULL DEFAULT false,
  created_at_ms  bigint NOT NULL,
  settings_json  text NOT NULL DEFAULT '{}',
  has_groups     boolean NOT NULL DEFAULT false
);

CREATE TABLE jobs (
  seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id                  text COLLATE "C" NOT NULL UNIQUE,
  queue               text COLLATE "C" NOT NULL,
  type                text COLLATE "C" NOT NULL,
  state               text NOT NULL
                        CHECK (state IN ('scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled')),
  priority            smallint NOT NULL CHECK (priority BETWEEN 0 AND 9),
  payload             bytea NOT NULL,
  content_type        text NOT NULL,
  metadata_json       text,
  traceparent         text,
  tracestate          text,
  idempotency_key     text COLLATE "C",
  attempt             integer NOT NULL DEFAULT 0,
  max_attempts        integer NOT NULL,
  attempt_base        integer NOT NULL DEFAULT 0,
  enqueued_at_ms      bigint NOT NULL,
  run_at_ms           bigint NOT NULL,
  leased_at_ms        bigint,
  lease_deadline_ms   bigint,
  worker_id           text,
  last_error          text,
  errors_json         text,
  dead_reason         text CHECK (dead_reason IN ('attempts_exhausted', 'lease_expired', 'dead_lettered', 'expired')),
  failed_at_ms        bigint,
  completed_at_ms     bigint,
  lease_ms            bigint,
  group_key           text COLLATE "C",
  result              bytea,
  result_content_type text,
  progress_percent    double precision,
  progress_json       text,
  progress_at_ms      bigint,
  expires_at_ms       bigint,
  cancelled_at_ms     bigint,
  cancelled_by        text,
  CHECK ((state = 'leased') = (lease_deadline_ms IS NOT NULL))
) WITH (
  fillfactor = 90,
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_insert_scale_factor = 0,
  autovacuum_vacuum_insert_threshold = 20000,
  autovacuum_analyze_scale_factor = 0,
  autovacuum_analyze_threshold = 20000
);

-- The lease: ready jobs without a group by priority (high first), due time, enqueue order…
CREATE INDEX jobs_ready ON jobs (queue, priority DESC, run_at_ms, seq)
  WHERE state = 'ready' AND group_key IS NULL;
-- …and grouped ones by group within a priority (group turns: one seek per member).
CREATE INDEX jobs_group_ready ON jobs (queue, priority DESC, group_key, run_at_ms, seq)
  WHERE state = 'ready' AND group_key IS NOT NULL;
-- Promotion of due scheduled jobs, and the admin's lists of them by due time.
CREATE INDEX jobs_scheduled ON jobs (run_at_ms) WHERE state = 'scheduled';
CREATE INDEX jobs_scheduled_due ON jobs (queue, run_at_ms, seq) WHERE state = 'scheduled';
CREATE INDEX jobs_retrying_due ON jobs (queue, run_at_ms, seq) WHERE state = 'scheduled' AND attempt > 0;
-- Lease expiry and the leases per worker; leased jobs of a group (group_max_leased).
CREATE INDEX jobs_leased ON jobs (lease_deadline_ms) WHERE state = 'leased';
CREATE INDEX jobs_group_leased ON jobs (queue, group_key) WHERE state = 'leased' AND group_key IS NOT NULL;
-- Dead letters (by failure time, optionally by reason) and the retention sweeps.
CREATE INDEX jobs_dead ON jobs (queue, failed_at_ms, seq) WHERE state = 'dead';
CREATE INDEX jobs_dead_reason ON jobs (queue, dead_reason, failed_at_ms, seq) WHERE state = 'dead';
CREATE INDEX jobs_completed ON jobs (queue, completed_at_ms) WHERE state = 'completed';
CREATE INDEX jobs_cancelled ON jobs (queue, cancelled_at_ms) WHERE state = 'cancelled';
-- Keyed jobs (idempotency, unique while active, find by key).
CREATE INDEX jobs_idempotency ON jobs (queue, idempotency_key, seq) WHERE idempotency_key IS NOT NULL;
-- Waiting jobs with an expiry, soonest first.
CREATE INDEX jobs_expiry ON jobs (expires_at_ms)
  WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready');
-- The admin's lists of a queue's jobs in one state (and type), in enqueue order.
CREATE INDEX jobs_by_state_type ON jobs (queue, state, type, seq);

CREATE TABLE idempotency_keys (
  queue          text COLLATE "C" NOT NULL,
  key            text COLLATE "C" NOT NULL,
  job_id         text COLLATE "C" NOT NULL,
  expires_at_ms  bigint NOT NULL,
  PRIMARY KEY (queue, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);

-- Jobs per queue and state, as deltas per shard (a sepp server's writer): a count is a sum.
-- `jobs` is not indexed, so the updates stay HOT with room left on the page.
CREATE TABLE queue_counts (
  queue  text COLLATE "C" NOT NULL,
  state  text NOT NULL,
  shard  integer NOT NULL,
  jobs   bigint NOT NULL,
  PRIMARY KEY (queue, state, shard)
) WITH (fillfactor = 50);

CREATE TABLE audit_log (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at_ms         bigint NOT NULL,
  actor         text COLLATE "C" NOT NULL,
  action        text COLLATE "C" NOT NULL,
  target        text COLLATE "C" NOT NULL,
  details_json  text NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_target ON audit_log (target, id);

CREATE TABLE schedules (
  name               text COLLATE "C" PRIMARY KEY,
  source             text NOT NULL CHECK (source IN ('config', 'api')),
  cron               text,
  interval_ms        bigint CHECK (interval_ms IS NULL OR interval_ms > 0),
  timezone           text NOT NULL,
  anchor_ms          bigint NOT NULL,
  start_at_ms        bigint,
  end_at_ms          bigint,
  misfire            text NOT NULL CHECK (misfire IN ('run_latest', 'skip', 'catch_up')),
  catch_up_max       integer NOT NULL DEFAULT 0,
  overlap            text NOT NULL CHECK (overlap IN ('allow', 'skip')),
  jitter_ms          bigint NOT NULL DEFAULT 0,
  queue              text COLLATE "C" NOT NULL,
  type               text COLLATE "C" NOT NULL,
  payload            bytea NOT NULL,
  content_type       text NOT NULL,
  priority           smallint NOT NULL,
  metadata_json      text,
  max_attempts       integer,
  lease_ms           bigint,
  paused             smallint NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  next_tick_ms       bigint,
  last_tick_ms       bigint,
  last_run_at_ms     bigint,
  last_outcome       text,
  last_detail        text,
  last_job_id        text,
  ticks_enqueued     bigint NOT NULL DEFAULT 0,
  ticks_skipped      bigint NOT NULL DEFAULT 0,
  created_at_ms      bigint NOT NULL,
  updated_at_ms      bigint NOT NULL,
  CHECK ((cron IS NULL) <> (interval_ms IS NULL))
);
CREATE INDEX schedules_due ON schedules (next_tick_ms) WHERE paused = 0 AND next_tick_ms IS NOT NULL;

CREATE TABLE queue_setting_overrides (
  queue       text COLLATE "C" NOT NULL,
  key         text COLLATE "C" NOT NULL,
  value_json  text NOT NULL,
  set_at_ms   bigint NOT NULL,
  set_by      text NOT NULL,
  PRIMARY KEY (queue, key)
);

CREATE TABLE admin_sessions (
  id_sha256      text COLLATE "C" PRIMARY KEY,
  "user"         text NOT NULL,
  role           text NOT NULL,
  csrf_sha256    text NOT NULL,   -- base64url SHA-256 of the session's CSRF token
  password_tag   text NOT NULL,   -- fingerprint of the user's password hash at login
  created_at_ms  bigint NOT NULL,
  expires_at_ms  bigint NOT NULL
);
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at_ms);

CREATE TABLE flow_buckets (
  queue           text COLLATE "C" NOT NULL,
  group_key       text COLLATE "C" NOT NULL,
  tokens          bigint NOT NULL,
  carry_units     bigint NOT NULL,
  refilled_at_ms  bigint NOT NULL,
  PRIMARY KEY (queue, group_key)
);
CREATE INDEX flow_buckets_refilled ON flow_buckets (queue, refilled_at_ms);
