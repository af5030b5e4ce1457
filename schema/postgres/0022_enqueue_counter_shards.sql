-- 0022: a transaction left open after sepp.enqueue no longer makes the next ones wait.
-- Why: each calling transaction adds to a counter row of its own, under a transaction-level
-- advisory lock on one of 64 shards (0002), kept until it ends; with all 64 held, the next
-- call waited for one of them to end. 64 application transactions left open after their
-- enqueue (idle in transaction, or a long one) blocked every other sepp.enqueue on the
-- database (seen on 2026-12-07, attack6; task pgsmall19; tests/store/postgres-enqueue-function.test.ts).
-- The function's shards are now as many as the backends that can hold a transaction open:
-- max_connections + max_prepared_transactions + max_worker_processes + max_wal_senders. A
-- transaction takes the first free one, and the one it holds is free to it (the lock is
-- reentrant), so it holds one unless a lower one was freed between two of its calls; so while
-- each transaction holds one, a free shard is always there. The wait for a random shard stays
-- for what is left (transactions that took several), as before.
-- Counts stay exact: a counter row is still added to by one transaction at a time, the one that
-- holds its shard's lock, and a queue's count is still the sum of its rows, whatever their
-- shards; a queue has at most one row per state and shard ever used, as before.
-- The shard is picked by `enqueue_counter_shard`, so the choice can change without the
-- function; EXECUTE on it is revoked from PUBLIC as its siblings' is.
-- servers-from: 21 — the enqueue function and a helper only it calls, which the servers never
--   call: servers of schema 21 serve on (they sum a queue's counter rows of any shard, counts.ts).

-- The counter shard of the calling transaction, -1 … -n, the first it can lock (see above).
CREATE FUNCTION enqueue_counter_shard() RETURNS integer
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  shards constant integer := current_setting('max_connections')::integer
    + current_setting('max_prepared_transactions')::integer
    + current_setting('max_worker_processes')::integer
    + current_setting('max_wal_senders')::integer;
  shard integer := 0;
BEGIN
  LOOP
    shard := shard + 1;
    IF pg_try_advisory_xact_lock(24218, -shard) THEN
      RETURN shard;
    END IF;
    EXIT WHEN shard >= shards;
  END LOOP;
  shard := 1 + floor(random() * shards)::integer;
  PERFORM pg_advisory_xact_lock(24218, -shard);
  RETURN shard;
END
$fn$;

CREATE OR REPLACE FUNCTION enqueue(
  queue_name text,
  job_type text,
  payload bytea,
  options jsonb DEFAULT '{}',
  OUT job_id text,
  OUT deduplicated boolean
)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $fn$
#variable_conflict use_column
DECLARE
  now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  day_ms constant bigint := 86400000;
  lim record;
  max_ahead_ms bigint;
  ahead_text text;
  settings jsonb;
  option_name text;
  content_type text;
  priority bigint;
  max_attempts bigint;
  lease_ms bigint;
  timeout_ms bigint;
  run_at_ms bigint;
  delay_ms bigint;
  expires_at_ms bigint;
  ttl_ms bigint;
  idem_key text;
  unique_while_active boolean := false;
  group_key text;
  metadata jsonb;
  metadata_json text;
  metadata_bytes bigint := 0;
  meta record;
  traceparent text;
  tracestate text;
  dedup_window_ms bigint;
  max_depth bigint;
  seen record;
  unfinished bigint;
  new_id text;
  random_hex text;
  state text;
  shard integer;
BEGIN
  -- The limits of the servers running on this schema (the lowest of each), or the defaults.
  SELECT * INTO lim FROM enqueue_limits(now_ms);
  max_ahead_ms := lim.max_schedule_ahead_ms;
  ahead_text := CASE WHEN max_ahead_ms % day_ms = 0 THEN (max_ahead_ms / day_ms) || ' days'
                     ELSE max_ahead_ms || ' ms' END;
  PERFORM enqueue_check_name('queue', queue_name, lim.max_name_length, lim.servers);
  PERFORM enqueue_check_name('type', job_type, lim.max_name_length, lim.servers);
  IF payload IS NULL THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', 'payload must be bytes (give ''''::bytea for none)');
  END IF;
  options := coalesce(options, '{}');
  IF jsonb_typeof(options) <> 'object' THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', format('options must be a JSON object, not %s', options));
  END IF;
  IF options ? 'depends_on' OR options ? 'on_dependency_failure' THEN
    PERFORM enqueue_refuse('0A000', 'invalid_job',
      'depends_on is not supported by sepp.enqueue: enqueue jobs with dependencies over gRPC');
  END IF;
  FOR option_name IN SELECT jsonb_object_keys(options) LOOP
    IF option_name NOT IN ('content_type', 'priority', 'max_attempts', 'lease_ms', 'run_at_ms', 'delay_ms',
                           'expires_at_ms', 'ttl_ms', 'idempotency_key', 'unique_while_active', 'group',
                           'metadata', 'traceparent', 'tracestate', 'timeout_ms') THEN
      PERFORM enqueue_refuse('22023', 'invalid_job', format('unknown option %s', to_jsonb(option_name)));
    END IF;
  END LOOP;

  -- The queue's effective settings as its servers recorded them; KEY SHARE keeps the row
  -- (an empty queue may be deleted) until this transaction ends, and blocks no other update.
  SELECT q.settings_json::jsonb INTO settings FROM queues q WHERE q.name = queue_name FOR KEY SHARE;
  IF NOT FOUND THEN
    PERFORM enqueue_refuse('42704', 'unknown_queue',
      format('queue %s does not exist; declare it as [queues.%s] in the config (sepp.enqueue creates no queue)',
             queue_name, queue_name));
  END IF;
  IF jsonb_array_length(coalesce(settings -> 'allowedTypes', '[]')) > 0
     AND NOT (settings -> 'allowedTypes') ? job_type THEN
    PERFORM enqueue_refuse('22023', 'job_type_not_allowed',
      format('job type %s is not allowed on queue %s (allowed_types)', job_type, queue_name));
  END IF;
  IF octet_length(payload) > coalesce((settings ->> 'maxPayloadBytes')::bigint, 1048576) THEN
    PERFORM enqueue_refuse('54000', 'payload_too_large',
      format('payload is %s bytes, the limit for queue %s is %s bytes (max_payload_bytes)',
             octet_length(payload), queue_name, coalesce((settings ->> 'maxPayloadBytes')::bigint, 1048576)));
  END IF;

  content_type := coalesce(nullif(enqueue_text(options, 'content_type'), ''), 'application/octet-stream');
  IF content_type !~ '^[\x21-\x7e][\x20-\x7e]{0,254}$' THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      'content_type must be 1–255 printable ASCII characters, such as application/json');
  END IF;
  priority := coalesce(enqueue_integer(options, 'priority'), 0);
  IF priority < 0 OR priority > 9 THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      format('priority is %s; it must be an integer from 0 to 9 (9 runs first)', priority));
  END IF;
  max_attempts := coalesce(enqueue_integer(options, 'max_attempts'), (settings ->> 'maxAttempts')::bigint, 5);
  IF max_attempts < 1 OR max_attempts > 1000 THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      format('max_attempts is %s; it must be an integer from 1 to 1000', max_attempts));
  END IF;
  lease_ms := nullif(enqueue_integer(options, 'lease_ms'), 0);
  IF lease_ms < 1000 OR lease_ms > 7 * day_ms THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      format('lease_ms is %s; it must be an integer from 1000 (1 s) to 604800000 (7 days), or 0 for none', lease_ms));
  END IF;

  -- The job's own hard timeout per attempt (0 or absent: its queue's default_timeout_ms at lease).
  timeout_ms := nullif(enqueue_integer(options, 'timeout_ms'), 0);
  IF timeout_ms < 1 OR timeout_ms > 30 * day_ms THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      format('timeout_ms is %s; it must be an integer from 1 to 2592000000 (30 days), or 0 for the queue''s default_timeout_ms',
             timeout_ms));
  END IF;

  run_at_ms := enqueue_integer(options, 'run_at_ms');
  delay_ms := enqueue_integer(options, 'delay_ms');
  IF run_at_ms IS NOT NULL AND delay_ms IS NOT NULL THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', 'give run_at_ms or delay_ms, not both');
  END IF;
  IF delay_ms < 0 THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      format('delay_ms is %s; it must be a non-negative integer', delay_ms));
  END IF;
  run_at_ms := CASE WHEN run_at_ms IS NOT NULL THEN greatest(now_ms, run_at_ms)
                    ELSE now_ms + coalesce(delay_ms, 0) END;
  IF run_at_ms - now_ms > max_ahead_ms THEN
    PERFORM enqueue_refuse('22023', 'scheduled_too_far', enqueue_over_server_limit(
      format('the job is scheduled %s days ahead', ceil((run_at_ms - now_ms) / day_ms::numeric)),
      ahead_text, 'limits.max_schedule_ahead_ms', lim.servers));
  END IF;

  idem_key := nullif(enqueue_text(options, 'idempotency_key'), '');
  IF octet_length(idem_key) > lim.max_idempotency_key_bytes THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', enqueue_over_server_limit(
      format('idempotency_key is %s bytes', octet_length(idem_key)), lim.max_idempotency_key_bytes || ' bytes', 'limits.max_idempotency_key_bytes', lim.servers));
  END IF;
  IF options ? 'unique_while_active' AND jsonb_typeof(options -> 'unique_while_active') <> 'null' THEN
    IF jsonb_typeof(options -> 'unique_while_active') <> 'boolean' THEN
      PERFORM enqueue_refuse('22023', 'invalid_job', 'unique_while_active must be true or false');
    END IF;
    unique_while_active := (options ->> 'unique_while_active')::boolean;
  END IF;
  IF unique_while_active AND idem_key IS NULL THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      'unique_while_active needs an idempotency_key: the key is what stays unique while the job is unfinished');
  END IF;

  expires_at_ms := enqueue_integer(options, 'expires_at_ms');
  ttl_ms := enqueue_integer(options, 'ttl_ms');
  IF expires_at_ms IS NOT NULL AND ttl_ms IS NOT NULL THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', 'give expires_at_ms or ttl_ms, not both');
  END IF;
  IF ttl_ms <= 0 THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', format('ttl_ms is %s; it must be a positive integer', ttl_ms));
  END IF;
  expires_at_ms := coalesce(expires_at_ms, now_ms + ttl_ms);
  IF expires_at_ms <= run_at_ms THEN
    PERFORM enqueue_refuse('22023', 'invalid_job',
      'the job would expire before it is due, so it could never run; give a later expires_at_ms or a longer ttl_ms');
  END IF;
  IF expires_at_ms - now_ms > max_ahead_ms THEN
    PERFORM enqueue_refuse('22023', 'invalid_job', enqueue_over_server_limit(
      format('the job expires %s days ahead', ceil((expires_at_ms - now_ms) / day_ms::numeric)),
      ahead_text, 'limits.max_schedule_ahead_ms', lim.servers));
  END IF;

  group_key := enqueue_text(options, 'group');
  IF group_key IS NOT NULL THEN
    PERFORM enqueue_check_name('group', group_key, lim.max_name_length, lim.servers);
  END IF;

  metadata := options -> 'metadata';
  IF metadata IS NOT NULL AND jsonb_typeof(metadata) <> 'null' THEN
    IF jsonb_typeof(metadata) <> 'object' THEN
      PERFORM enqueue_refuse('22023', 'invalid_job', 'metadata must be a JSON object of strings');
    END IF;
    IF (SELECT count(*) FROM jsonb_object_keys(metadata)) > lim.max_metadata_entries THEN
      PERFORM enqueue_refuse('54000', 'metadata_too_large', enqueue_over_server_limit(
        format('metadata has %s entries', (SELECT count(*) FROM jsonb_object_keys(metadata))),
        lim.max_metadata_entries || ' entries', 'limits.max_metadata_entries', lim.servers));
    END IF;
    FOR meta IN SELECT key, value FROM jsonb_each(metadata) LOOP
      IF meta.key = '' THEN
        PERFORM enqueue_refuse('22023', 'invalid_job', 'metadata keys must not be empty');
      END IF;
      IF jsonb_typeof(meta.value) <> 'string' THEN
        PERFORM enqueue_refuse('22023', 'invalid_job', format('metadata value of %s must be a string', meta.key));
      END IF;
      metadata_bytes := metadata_bytes + octet_length(meta.key) + octet_length(meta.value #>> '{}');
    END LOOP;
    IF metadata_bytes > lim.max_metadata_bytes THEN
      PERFORM enqueue_refuse('54000', 'metadata_too_large', enqueue_over_server_limit(
        format('metadata is %s bytes', metadata_bytes), lim.max_metadata_bytes || ' bytes', 'limits.max_metadata_bytes', lim.servers));
    END IF;
    -- Compact, as the engine's JSON.stringify writes it.
    IF metadata <> '{}' THEN
      SELECT '{' || string_agg(to_json(m.key)::text || ':' || to_json(m.value #>> '{}')::text, ',') || '}'
        INTO metadata_json FROM jsonb_each(metadata) AS m;
    END IF;
  END IF;

  -- Invalid trace context is ignored, as W3C Trace Context asks (and as the engine does).
  traceparent := enqueue_text(options, 'traceparent');
  IF traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN traceparent := NULL; END IF;
  tracestate := enqueue_text(options, 'tracestate');
  IF traceparent IS NULL OR char_length(tracestate) > 512 OR tracestate = '' THEN tracestate := NULL; END IF;

  -- Idempotency (src/engine/jobs/idempotency.ts), serialised per (queue, key) among callers.
  IF idem_key IS NOT NULL THEN
    IF NOT pg_try_advisory_xact_lock(24219, hashtext(queue_name || E'\n' || idem_key)) THEN
      PERFORM pg_advisory_xact_lock(24219, hashtext(queue_name || E'\n' || idem_key));
      IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING ERRCODE = '40001',
          MESSAGE = 'sepp.enqueue: another transaction enqueued with the same idempotency key meanwhile; retry the transaction',
          DETAIL = 'idempotency_key';
      END IF;
    END IF;
    dedup_window_ms := coalesce((settings ->> 'dedupWindowMs')::bigint, day_ms);
    IF unique_while_active OR dedup_window_ms > 0 THEN
      IF NOT unique_while_active THEN
        SELECT k.job_id, k.expires_at_ms INTO seen FROM idempotency_keys k
         WHERE k.queue = queue_name AND k.key = idem_key;
        IF FOUND AND seen.expires_at_ms > now_ms THEN
          job_id := seen.job_id;
          deduplicated := true;
          RETURN;
        END IF;
      END IF;
      SELECT j.id INTO job_id FROM jobs j
       WHERE j.queue = queue_name AND j.idempotency_key = idem_key
         AND j.state IN ('waiting', 'scheduled', 'ready', 'leased') AND j.cancelled_at_ms IS NULL
       ORDER BY j.seq DESC LIMIT 1;
      IF FOUND THEN
        deduplicated := true;
        RETURN;
      END IF;
    END IF;
  END IF;

  max_depth := coalesce((settings ->> 'maxDepth')::bigint, 0);
  IF max_depth > 0 THEN
    SELECT coalesce(sum(c.jobs), 0) INTO unfinished FROM queue_counts c
     WHERE c.queue = queue_name AND c.state IN ('waiting', 'scheduled', 'ready', 'leased');
    IF unfinished + 1 > max_depth THEN
      PERFORM enqueue_refuse('53400', 'queue_full',
        format('queue %s holds %s unfinished jobs, its max_depth is %s; retry later', queue_name, unfinished, max_depth));
    END IF;
  END IF;

  -- A UUIDv7 (RFC 9562), as src/engine/jobs/job-id.ts makes them (without its per-ms counter).
  random_hex := replace(gen_random_uuid()::text, '-', '');
  new_id := lpad(to_hex(now_ms), 12, '0') || '7' || substr(random_hex, 14, 3) || substr(random_hex, 17, 16);
  new_id := substr(new_id, 1, 8) || '-' || substr(new_id, 9, 4) || '-' || substr(new_id, 13, 4) || '-'
            || substr(new_id, 17, 4) || '-' || substr(new_id, 21, 12);
  state := CASE WHEN run_at_ms > now_ms THEN 'scheduled' ELSE 'ready' END;

  INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, metadata_json, traceparent,
                    tracestate, idempotency_key, max_attempts, lease_ms, enqueued_at_ms, run_at_ms,
                    expires_at_ms, group_key, timeout_ms)
  VALUES (new_id, queue_name, job_type, state, priority, payload, content_type, metadata_json, traceparent,
          tracestate, idem_key, max_attempts, lease_ms, now_ms, run_at_ms, expires_at_ms, group_key, timeout_ms);
  IF idem_key IS NOT NULL AND NOT unique_while_active AND dedup_window_ms > 0 THEN
    INSERT INTO idempotency_keys (queue, key, job_id, expires_at_ms)
    VALUES (queue_name, idem_key, new_id, now_ms + dedup_window_ms)
    ON CONFLICT (queue, key) DO UPDATE SET job_id = excluded.job_id, expires_at_ms = excluded.expires_at_ms;
  END IF;
  IF group_key IS NOT NULL THEN
    -- The notification below says so (`g`); a server that missed it reads the mark within a
    -- second (its queue refresh).
    UPDATE queues SET has_groups = true WHERE name = queue_name AND NOT has_groups;
  END IF;

  -- A counter shard of this transaction's own (enqueue_counter_shard).
  shard := enqueue_counter_shard();
  INSERT INTO queue_counts (queue, state, shard, jobs) VALUES (queue_name, state, -shard, 1)
  ON CONFLICT (queue, state, shard) DO UPDATE SET jobs = queue_counts.jobs + 1;

  -- Delivered to the servers' listeners only if this transaction commits (src/store/postgres/signals.ts).
  IF state = 'ready' THEN
    -- `g`: the queue has groups, as the servers' own signals say (a waiting reserve elsewhere
    -- leases a grouped job at once instead of after its next queue refresh).
    PERFORM pg_notify('sepp_' || current_schema(),
                      (json_build_object('s', 'sql', 'q', queue_name, 'n', 1, 'j', new_id)::jsonb
                       || CASE WHEN group_key IS NULL THEN '{}'::jsonb ELSE '{"g": 1}'::jsonb END)::text);
  END IF;
  job_id := new_id;
  deduplicated := false;
END
$fn$;

DO $do$
BEGIN
  EXECUTE format('ALTER FUNCTION enqueue(text, text, bytea, jsonb) SET search_path = %I, pg_temp',
                 current_schema());
END
$do$;

REVOKE EXECUTE ON FUNCTION enqueue_counter_shard() FROM PUBLIC;
