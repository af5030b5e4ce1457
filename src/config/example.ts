/**
 * The complete commented example that `sepp config example` prints. Every
 * setting appears with its default; tests check that it parses, that it
 * validates with every commented-out setting switched on, that those values
 * are the true defaults, and that no setting is missing from it — so it
 * cannot drift from the loader.
 *
 * Conventions the tests rely on: a line `# key = value` or `# [table]` (one
 * space after #) is a setting ready to uncomment; prose never looks like
 * that. The sample key hash and password hash are of random values nobody
 * knows, so uncommenting them grants no one access. A plain-text `key` is
 * shown only indented in prose, never as a setting, because a key printed in
 * an example is a key everyone knows.
 */
import { adminRolesComment } from './admin-roles.ts';

export const exampleConfig = `# sepp.toml — configuration for sepp, the durable job queue.
#
# sepp reads ./sepp.toml, or the file named by --config or $SEPP_CONFIG.
# Precedence, highest first: command-line flags > SEPP_* environment
# variables > this file > built-in defaults. Every setting below is shown
# commented out at its default: uncomment a line to change it.
#
# Units are part of the names. A setting ending in _ms takes an integer of
# milliseconds or a string with one unit: "250ms", "30s", "5m", "12h", "7d".
# One ending in _bytes takes an integer of bytes or a string with a binary
# unit: "512B", "64KiB", "4MiB", "1GiB". Relative paths are relative to the
# directory of this file. Unknown settings are errors, not ignored.
#
# Check a file with: sepp config check sepp.toml

[server]
# Directory of the SQLite database (created if missing). Env SEPP_DATA_DIR,
# flag --data-dir.
# data_dir = "./sepp-data"

# Where the gRPC API listens, host:port. A non-loopback address needs API
# keys (or grpc.insecure_allow_unauthenticated = true).
# Env SEPP_GRPC_LISTEN, flag --grpc-listen.
# grpc_listen = "127.0.0.1:50051"

# Where the admin UI, its JSON API and /metrics listen. A non-loopback address
# needs admin users (or admin.insecure_allow_unauthenticated = true).
# Env SEPP_ADMIN_LISTEN, flag --admin-listen.
# admin_listen = "127.0.0.1:9465"

# Where the HTTP/JSON API for applications listens (docs/http.md): the same
# API keys and roles as gRPC, as "Authorization: Bearer <key>". Off unless
# set. A non-loopback address needs API keys (or
# http.insecure_allow_unauthenticated = true).
# Env SEPP_HTTP_LISTEN, flag --http-listen.
# http_listen = "127.0.0.1:8080"

# "full": every commit is fsync'd before it is acknowledged; nothing
# acknowledged is lost, even on power loss. "relaxed": no fsync per commit;
# survives a process crash but not a power cut or kernel crash. A queue may
# say otherwise for its own jobs (durability in [queues.NAME]).
# Env SEPP_DURABILITY, flag --durability.
# durability = "full"

# Who checkpoints the SQLite WAL into the database file. "auto": sepp does,
# as the WAL grows and at shutdown. "external": sepp never does; Litestream
# (docs/replication.md) does, and the WAL grows without bound while nothing
# checkpoints it. Env SEPP_WAL_CHECKPOINTS.
# wal_checkpoints = "auto"

# "debug", "info", "warn" or "error". Env SEPP_LOG_LEVEL, flag --log-level.
# log_level = "info"

# "text" (for people) or "json" (one object per line, for log collectors).
# Env SEPP_LOG_FORMAT, flag --log-format.
# log_format = "text"

# On SIGTERM/SIGINT, how long to finish in-flight work before exiting anyway.
# Env SEPP_SHUTDOWN_TIMEOUT_MS.
# shutdown_timeout_ms = "10s"

# Room kept in the data directory as the file sepp.reserve. When the disk
# fills up, sepp frees it so that workers can still lease, ack and nack and
# drain the queues, and refuses enqueues until the file system has twice this
# free again. 0 keeps none. Env SEPP_DISK_RESERVE_BYTES.
# disk_reserve_bytes = "32MiB"

[store]
# Where the jobs are kept: "sqlite" (the default: the embedded database in
# data_dir, nothing else to install) or "postgres" (a PostgreSQL 15+ database,
# which several sepp servers can share; docs/postgres.md). The settings below
# are PostgreSQL's and are refused while kind is "sqlite".
# Env SEPP_STORE_KIND.
# kind = "postgres"

# The database, without a password. Env SEPP_STORE_URL. Not set by default.
# url = "postgres://sepp@db.example:5432/sepp"

# The password: a file holding it (a trailing newline is ignored)...
# password_file = "/etc/sepp/postgres-password"
# ...or the name of an environment variable holding it, instead:
#     password_env = "SEPP_POSTGRES_PASSWORD"

# Connections each sepp server opens (one writes, the others read), besides
# one that listens for the other servers' wake-ups; 2 to 100.
# pool_size = 10

# Reads that may wait for a read connection at once when all are busy; one
# more is refused at once (RESOURCE_EXHAUSTED, 429), not queued; 1 to 100000.
# max_waiting_reads = 1000

# While reads wait, the read calls one API key may have in flight (callers
# without a key count as one); one more is refused at once, so one key's
# flood leaves room for the others' reads; 1 to max_waiting_reads.
# max_waiting_reads_per_key = 100

# A statement running longer than this is cancelled, and a transaction idle
# longer, but at least 10s (a frozen server), is ended by PostgreSQL (100ms to 1h).
# statement_timeout_ms = "30s"

# The PostgreSQL schema of sepp's tables, created and migrated at start.
# schema = "sepp"

[grpc]
# Serve without API keys on a non-loopback address: anyone who can reach the
# port can enqueue, lease and delete jobs. Only for trusted networks.
# insecure_allow_unauthenticated = false

# Largest gRPC message, in or out. Must leave room for the largest
# max_payload_bytes of any queue plus limits.max_metadata_bytes plus 64KiB;
# when not set it is 4MiB + 64KiB, or larger if a payload limit needs more.
# max_message_bytes = 4259840

# Connections open at once (each a client process, usually); one more is
# closed as it arrives. sepp_grpc_connections_rejected_total counts them.
# max_connections = 4096

# Calls open at once on one connection (HTTP/2 concurrent streams): each
# Reserve long-poll, Work or Produce stream and unary call in flight is one.
# max_streams_per_connection = 1000

# A new connection must finish TLS and open its first call within this, or
# it is closed: connections that never send anything cannot pile up.
# handshake_timeout_ms = "10s"

# A connection with no call open for this long is closed (gRPC clients
# reconnect on their next call). Open streams and long-polls keep it open.
# idle_timeout_ms = "5m"

# The server pings every connection this long after its last ping was
# answered (1s to 1h), and closes it when an answer takes longer than
# keepalive_timeout_ms (1s to 10m). A client gone without closing its
# connection (machine lost, a NAT that dropped the flow) is dropped within
# their sum; until then its Work streams count as waiting and are leased jobs.
# keepalive_ms = "30s"
# keepalive_timeout_ms = "20s"

# A call must send its first message within this after it opens (a Work
# stream its subscribe, a Produce stream its first batch, Events and unary
# calls their request), or it ends with RESOURCE_EXHAUSTED: a stream that
# never says what it wants cannot hold a slot until its connection closes.
# first_message_timeout_ms = "10s"

# Event subscriptions one API key may hold at once (Events streams, and the HTTP
# API's event streams and outcome waits), of limits.max_event_subscribers: one key
# cannot take every slot. Each waitFor / wait_for of the SDKs holds one while it
# waits. Not applied without API keys.
# max_event_subscribers_per_key = 250

# Request bytes one connection, and all connections of one API key (of all
# callers, without keys), may have in flight. A message is read only once
# the bytes its prefix declares fit; until then the call waits, and HTTP/2
# flow control holds the client back. The same sizes bound, apart, the unary
# answers not yet sent (a client that does not read them): a call runs only
# once its answer has room. At least max_message_bytes.
# max_bytes_in_flight_per_connection = "16MiB"
# max_bytes_in_flight_per_key = "64MiB"

# TLS for gRPC: both files in PEM form, or leave [grpc.tls] out.
# [grpc.tls]
# cert_file = "/etc/sepp/tls/server.crt"
# key_file = "/etc/sepp/tls/server.key"

# API keys. Clients send "authorization: Bearer <key>". With none, gRPC needs
# no authentication (allowed only on a loopback address). Roles: "producer"
# (enqueue and read), "worker" (reserve, ack, nack, extend and read), "admin"
# (everything). Give each key as key_sha256, the hex SHA-256 of the key, so
# this file holds no secret. "sepp admin new-api-key --name NAME --role ROLE"
# makes a key, prints it once and prints the table to paste here; by hand:
#     KEY=$(openssl rand -hex 32); printf %s "$KEY" | sha256sum
# [[grpc.api_keys]]
# name = "billing-producer"
# role = "producer"
# key_sha256 = "8058493ffb7083ad0fd0efd997edfed5ff9456979a1b21f8acfde1334de24d09"
# ...or, if you must, the key itself instead of key_sha256 (names and keys
# must be unique; a key has at least 16 visible ASCII characters):
#     key = "the key itself"
# A key may be limited to some queues, whatever its role: names, or patterns
# where * stands for any run of characters. Without queues, every queue.
# queues = ["billing-*", "invoices"]

[admin]
# A login session ends this long after it began.
# session_ttl_ms = "12h"

# Serve the admin UI without users on a non-loopback address: anyone who can
# reach the port can pause queues and delete jobs. Only for trusted networks.
# insecure_allow_unauthenticated = false

# Sessions one user may hold at once; a login beyond that ends the user's
# oldest session (never another user's).
# max_sessions_per_user = 10

# Behind a reverse proxy every client seems to come from the proxy, so login
# throttling would treat them all as one. List the proxies (addresses or CIDR
# ranges) to take the client's address from their X-Forwarded-For header: the
# right-most address in it that is not a listed proxy. From any other address
# the header is ignored. e.g. ["10.0.0.5", "fd00::/8"]
# trusted_proxies = []

# TLS for the admin UI: both files in PEM form, or leave [admin.tls] out.
# [admin.tls]
# cert_file = "/etc/sepp/tls/server.crt"
# key_file = "/etc/sepp/tls/server.key"

# Admin users. With none, the UI needs no login (allowed only on a loopback
# address). password_hash is the output of "sepp admin hash-password"; the
# password itself is never stored.
${adminRolesComment()}
# [[admin.users]]
# name = "alice"
# role = "admin"
# password_hash = "$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA"

[http]
# The HTTP/JSON API (server.http_listen). Serve it without API keys on a
# non-loopback address: anyone who can reach the port can enqueue and take
# jobs. Only for trusted networks.
# insecure_allow_unauthenticated = false

# Largest request body; larger ones are refused (413) before they are read.
# Not set: 6 MiB, or more when a queue's max_payload_bytes needs it as base64.
# max_request_bytes = "6MiB"

# Request bytes held at once (bodies being read and handled), over all
# callers and per API key (all callers without a key count as one). A request
# beyond either waits for nothing: it is refused with 429 and Retry-After.
# max_in_flight_bytes = "256MiB"
# max_in_flight_bytes_per_key = "64MiB"

# Connections open at once; one more is closed as it arrives.
# max_connections = 4096

# A client must send a request's headers within headers_timeout_ms and the
# whole request within request_timeout_ms (long-polls and event streams wait
# after that, on the server's side); an idle keep-alive connection is closed
# after idle_timeout_ms.
# headers_timeout_ms = "10s"
# request_timeout_ms = "30s"
# idle_timeout_ms = "1m"

# A connection whose client takes nothing of an answer for write_timeout_ms
# (reads none of it) is closed; one that reads slowly keeps it. A reload
# changes it.
# write_timeout_ms = "30s"

# TLS for the HTTP API: both files in PEM form, or leave [http.tls] out.
# [http.tls]
# cert_file = "/etc/sepp/tls/server.crt"
# key_file = "/etc/sepp/tls/server.key"

[telemetry]
# Metrics are always served in Prometheus format at /metrics on admin_listen.
# Set an OTLP/HTTP collector to also push metrics and export traces there.
# Env SEPP_OTLP_ENDPOINT. Not set by default.
# otlp_endpoint = "http://localhost:4318"

# service.name of everything exported.
# service_name = "sepp"

# Share of traces exported, 0.0 to 1.0. Env SEPP_TRACES_SAMPLE_RATIO.
# traces_sample_ratio = 1.0

# How often metrics are pushed to otlp_endpoint.
# metrics_export_interval_ms = "1m"

# /metrics answers anyone who can reach admin_listen, unless a token is set:
# then it needs "Authorization: Bearer <token>" (Prometheus:
# authorization.credentials_file). Give the token as its hex SHA-256, so this
# file holds no secret:
#     TOKEN=$(openssl rand -hex 32); printf %s "$TOKEN" | sha256sum
# metrics_token_sha256 = "52273996ba4fff87c129fc4dd581716258daafab16379717d1615750f329b5b5"
# ...or, if you must, the token itself instead (at least 16 visible ASCII
# characters):
#     metrics_token = "the token itself"

[engine]
# Accept jobs only for queues declared below as [queues.NAME]; otherwise a
# queue is created the first time a job is enqueued to it.
# strict_queues = false

[limits]
# Server-wide limits. Clients can read them all with GetServerInfo. A reload
# (systemctl reload sepp) changes them from the next call, but max_metadata_bytes
# and max_result_bytes, which take a restart.

# Longest queue name and job type, in characters (letters, digits, . _ : -).
# max_name_length = 128

# Largest metadata map of a job: total bytes of keys and values, and entries.
# max_metadata_bytes = "16KiB"
# max_metadata_entries = 64

# Longest idempotency key and worker id, in bytes.
# max_idempotency_key_bytes = 256
# max_worker_id_bytes = 256

# Error messages from nacks are cut to this size; this many are kept per job.
# max_error_bytes = "8KiB"
# max_error_history = 20

# Most jobs in one enqueue batch, and in one reserve or ack batch.
# max_batch_jobs = 1000
# max_reserve_jobs = 1000

# Most jobs one job may wait for (depends_on).
# max_dependencies_per_job = 100

# Most jobs that may wait for one job (name it in depends_on or run after it in a flow);
# its end releases them all in one transaction.
# max_dependents_per_job = 10000

# Most jobs in one flow (EnqueueFlow), and its longest chain of jobs.
# max_flow_jobs = 1000
# max_flow_depth = 100

# Results of its dependencies handed to a leased job, together; above it, ids only.
# max_dependency_results_bytes = "256KiB"

# Batches not ended (open or sealed) one API key may hold.
# max_open_batches_per_key = 1000

# How long an ended batch (and its member rows) is kept before the sweep deletes it.
# batch_retention_ms = "7d"

# Queues one reserve (or Work subscription) may name.
# max_reserve_queues = 64

# Furthest ahead a job may be scheduled.
# max_schedule_ahead_ms = "365d"

# Longest long-poll wait of a reserve; longer requests are shortened.
# max_wait_ms = "1m"

# Long-polls waiting at once, across all clients; more are refused.
# max_waiters = 10000

# Largest page of a listing call.
# max_page_size = 1000

# Schedules the server keeps, from [[schedules]] and the API together.
# max_schedules = 1000

# Queues that may exist at once, declared ones included. A job for a new queue
# beyond it is refused (reason unknown_queue, naming this limit); delete unused
# queues or raise it. It bounds what every queue listing, the dashboard and
# /metrics must read (docs/configuration.md says why 1000).
# max_queues = 1000

# Largest result an ack may carry (kept with completed jobs, sent in events),
# and largest progress document (JSON) a worker may report.
# max_result_bytes = "64KiB"
# max_progress_bytes = "4KiB"

# Events streams open at once, across all clients; more are refused.
# max_event_subscribers = 1000

# The event backlog: the newest events kept in memory (never on disk) so a
# subscriber can catch up or resume after a disconnect. It holds at most this
# many events and bytes; a subscriber that falls further behind is cut off.
# It records only while someone subscribes, and for
# event_resume_window_ms after the last one leaves. Not kept across restarts.
# event_backlog_events = 50000
# event_backlog_bytes = "32MiB"
# event_resume_window_ms = "5m"

# The outcome of a job deleted as it finished (acked on a queue that keeps no
# completed jobs, or dead or cancelled where that retention is 0) is kept in
# memory this long, so GetJob and a wait begun moments later still find it:
# state, attempt, end time, result or last error, never the payload. At most
# 100,000 outcomes and 64 MiB, the oldest forgotten first. Not kept across
# restarts. 0 keeps none.
# finished_outcome_ms = "5m"

[queue_defaults]
# Settings every queue starts from. Each can be changed for one queue in a
# [queues.NAME] table, which takes the same keys.

# Deliveries before a job is dead-lettered.
# max_attempts = 5

# Retry delay after a failed attempt: backoff_base_ms, times backoff_factor
# for each further attempt, at most backoff_cap_ms, spread randomly by
# +/- backoff_jitter (a fraction: 0.2 is 20 %).
# backoff_base_ms = "1s"
# backoff_factor = 2.0
# backoff_cap_ms = "1h"
# backoff_jitter = 0.2

# Lease length when a worker does not ask for one, and the longest it may ask for.
# default_lease_ms = "30s"
# max_lease_ms = "12h"

# Hard execution timeout of an attempt, from its lease, for jobs enqueued
# without their own timeout_ms: once it passes the attempt fails (reason
# timeout) whatever its extends, and the backoff decides what follows.
# 0 means none.
# default_timeout_ms = 0

# Priority aging: a ready job counts one priority level higher for every
# this long it has waited, so high-priority work cannot starve low priorities.
# 0 means off (strict priority). Not applied to jobs with a group.
# priority_aging_ms = 0

# Largest payload accepted.
# max_payload_bytes = "1MiB"

# Jobs waiting or running (scheduled + ready + leased) above which enqueues
# are refused with RESOURCE_EXHAUSTED; 0 means no limit.
# max_depth = 0

# How long an idempotency key is remembered (at most 30 days).
# dedup_window_ms = "1d"

# How long dead letters are kept before they are deleted.
# dead_retention_ms = "14d"

# How long acknowledged jobs are kept as "completed"; 0 deletes them on ack.
# completed_retention_ms = 0

# How long cancelled jobs are kept (with who cancelled them and when).
# cancelled_retention_ms = "14d"

# What happens to a job that carries an expiry (ttl_ms or expires_at_ms) and
# has not started by then: "dead_letter" (reason expired) or "delete".
# expired_action = "dead_letter"

# Job types this queue accepts; empty accepts any.
# allowed_types = []

# When the queue's enqueues, leases and settlements are answered: "full",
# after an fsync (they survive a power cut); "relaxed", before one (they survive
# a crash of the sepp process, not a power cut); "server", as server.durability.
# durability = "server"

# Flow control (docs/flow-control.md). Jobs of the queue leased at once,
# across every worker; a reserve beyond it waits. 0 means no limit.
# max_leased = 0

# Rate limit: at most rate_limit_leases leases start per rate_limit_period_ms,
# spread evenly, with up to rate_limit_burst at once after a quiet spell
# (0 = rate_limit_leases). rate_limit_leases = 0 means no rate limit.
# rate_limit_leases = 0
# rate_limit_period_ms = "1s"
# rate_limit_burst = 0

# The same two limits per group, for jobs enqueued with a group (a tenant, a
# customer); groups take turns either way. 0 means no limit.
# group_max_leased = 0
# group_rate_limit_leases = 0
# group_rate_limit_period_ms = "1s"
# group_rate_limit_burst = 0

# One table per queue that differs from [queue_defaults]. Quote names that
# contain . or : as in [queues."emails.v2"].
# [queues.emails]
# max_attempts = 10
# max_payload_bytes = "256KiB"
# allowed_types = ["send", "send-digest"]
# rate_limit_leases = 100
# group_max_leased = 2

# Push delivery (docs/http.md): the server POSTs each job of the queue to
# this URL instead of waiting for workers; a 2xx answer acks the job, any
# other answer, a timeout or a connection error is a failed attempt, retried
# with the queue's backoff (Retry-After honoured). Every request is signed
# with HMAC-SHA256 (header Sepp-Signature) under a secret read from
# secret_file, or from the environment variable named by secret_env.
# Deliveries run max_in_flight at once at most; max_leased and the rate
# limits above may allow fewer. Targets on loopback, private, link-local and
# other non-public addresses are refused unless allow_private_targets = true.
# [queues.emails.push]
# url = "https://mailer.example.com/sepp/jobs"
# secret_file = "/etc/sepp/push-secret"
# ...or the name of an environment variable holding it, instead:
#     secret_env = "SEPP_PUSH_SECRET"
# timeout_ms = "30s"
# max_in_flight = 64
# allow_private_targets = false

# Schedules: jobs the server enqueues itself, on a cron expression (5 fields,
# or 6 with seconds first, read in an IANA timezone) or every interval_ms.
# Each tick's job is enqueued exactly once, even across crashes. Schedules
# are reconciled at every start and reload: new ones added, changed ones
# updated, ones no longer listed removed (schedules made over the API stay).
# docs/schedules.md explains every setting.
# [[schedules]]
# name = "nightly-report"
# cron = "30 2 * * *"
# timezone = "Europe/Berlin"
# queue = "reports"
# type = "nightly"
# payload = '{"kind": "daily"}'
# content_type = "application/json"
# priority = 5
# metadata = { team = "billing" }
# max_attempts = 3
# lease_ms = "2h"
# Hard execution timeout of each attempt of its jobs (default: the queue's
# default_timeout_ms).
# timeout_ms = "3h"
# Ticks missed while the server was down or the schedule paused: "run_latest"
# runs the latest once, "skip" runs none, "catch_up" runs up to catch_up_max.
# misfire = "catch_up"
# catch_up_max = 3
# "skip": no new job while the last one is still scheduled, ready or leased.
# overlap = "skip"
# jitter_ms = "30s"
# start_at = 2026-01-01T00:00:00Z
# end_at = 2099-01-01T00:00:00Z

# [[schedules]]
# name = "sync"
# interval_ms = "15m"
# queue = "sync"
# type = "pull"
`;
