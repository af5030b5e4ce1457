"""The client's request and result shapes.

They mirror the protocol (proto/sepp/v1) with friendlier types: names of
states and reasons as strings, `None` instead of proto3 zero values for what
is not set. Every time is an integer of milliseconds since the Unix epoch and
every duration an integer of milliseconds; their names end in `_ms`.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Protocol, Sequence

from .errors import RejectionReason

JobState = Literal["scheduled", "ready", "leased", "completed", "dead", "cancelled", "waiting"]
"""Where a job is in its lifecycle; `waiting`: the job waits for the jobs it depends on
(`depends_on`) to complete."""

DependencyPolicy = Literal["cancel", "run", "wait"]
"""What a failed dependency does to the job waiting on it (docs/workflows.md): `cancel` it
(the default), `run` it anyway once all have ended, or keep it waiting (`wait`)."""

DeadReason = Literal["attempts_exhausted", "lease_expired", "dead_lettered", "expired", "timeout"]
"""Why a job is dead."""

Payload = bytes | bytearray | memoryview | str
"""A job's payload: bytes as they are, or a string sent as UTF-8."""

TimeInput = datetime.datetime | int | float
"""A point in time: an aware `datetime`, or milliseconds since the Unix epoch."""


class _Unset:
    """The type of UNSET."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marks an argument as not given where `None` is a meaningful value (a JSON payload of null)."""


class LeaseRef(Protocol):
    """What identifies a lease: the job and the attempt it was given (the fencing token).
    A LeasedJob is one."""

    @property
    def id(self) -> str: ...

    @property
    def attempt(self) -> int: ...


@dataclass(frozen=True)
class Lease:
    """A lease given by its parts, for settling a job whose LeasedJob is not at hand."""

    id: str
    attempt: int


@dataclass
class JobSpec:
    """One job of `enqueue_batch` or `enqueue_atomic`. Give `payload` or `json`, not both."""

    queue: str
    """Queue to put the job on."""
    type: str
    """Job type: which handler runs it."""
    payload: Payload | None = None
    """The job's input as bytes or text."""
    json: Any = UNSET
    """The job's input as a value to send as JSON (content type `application/json`)."""
    content_type: str | None = None
    """MIME type of the payload (default: `application/json` for `json`, `text/plain; charset=utf-8`
    for a str payload, none for bytes)."""
    priority: int = 0
    """0 to 9; higher runs first."""
    run_at: TimeInput | None = None
    """When the job may run (past times mean now). Give this or `delay_ms`, not both."""
    delay_ms: int | None = None
    """Run the job this many ms after the server accepts it."""
    max_attempts: int | None = None
    """Deliveries before the job goes dead; default the queue's (5 unless configured)."""
    idempotency_key: str | None = None
    """Deduplication key; also what makes an enqueue safe to retry."""
    metadata: Mapping[str, str] | None = None
    """String pairs stored with the job and handed to the worker."""
    traceparent: str | None = None
    """W3C trace context to store with the job."""
    tracestate: str | None = None
    """W3C `tracestate` that goes with `traceparent`."""
    ttl_ms: int | None = None
    """Do not start the job later than this many ms after the server accepts it (its TTL); a job
    not started by then is dead-lettered with reason `expired` (or deleted, per the queue's
    `expired_action`). Give this or `expires_at`, not both."""
    expires_at: TimeInput | None = None
    """Do not start the job at or after this time."""
    unique_while_active: bool = False
    """With `idempotency_key`: the key is a duplicate exactly while a job holding it is scheduled,
    ready or leased (whatever the dedup window), and free again once that job has completed,
    died or been cancelled."""
    group: str | None = None
    """The job's group (a tenant, a customer): leases take turns across the groups of a queue, and
    the queue's group limits apply per group. Letters, digits and . _ : -; default no group."""
    execution_timeout_ms: int | None = None
    """Hard execution timeout of each attempt, in ms from its lease (the server's clock): once it
    passes, the server refuses to extend the lease and fails the attempt with reason `timeout`
    (retried per the queue's backoff; dead with reason `timeout` on the last attempt), and a
    Worker sets `job.cancelled` with a JobTimeoutError. None: the queue's `default_timeout_ms`.
    (The protocol's `timeout_ms`; named apart from the `timeout_ms` of the waits.)"""
    depends_on: Sequence[str] | None = None
    """Ids of jobs this job waits for: it is stored `waiting` and becomes ready in the transaction
    that completes the last of them (docs/workflows.md)."""
    on_dependency_failure: DependencyPolicy | None = None
    """What a failed dependency does to this job: `cancel` (default), `run` or `wait`. Only with
    `depends_on` (in a flow, or `after`): without them it raises SeppError (`invalid_argument`)."""
    debounce_key: str | None = None
    """Debounce key (docs/protocol.md, "Debounce"): when the queue holds a job with this key that
    waits and was never leased, that job absorbs this enqueue — it takes this payload, content type
    and metadata, and runs `debounce_ms` from now, never later than its first enqueue + its
    `debounce_max_ms` — and the answer has its id with `debounced` True. Otherwise a new job is
    stored, due in `debounce_ms`. Not with `run_at`/`delay_ms`, `ttl_ms`/`expires_at`,
    `idempotency_key` or `depends_on`, nor in `enqueue_atomic` or a flow."""
    debounce_ms: int | None = None
    """With `debounce_key`: the quiet period in ms (the job runs once no enqueue with its key came
    for this long); default 0."""
    debounce_max_ms: int | None = None
    """With `debounce_key`: the longest the job may be pushed back from its first enqueue, in ms;
    None or 0: no cap."""


@dataclass(frozen=True)
class Enqueued:
    """An enqueued job."""

    id: str
    """The job's id (the original job's id when deduplicated)."""
    deduplicated: bool
    """True when the idempotency key was seen before and nothing new was stored."""
    debounced: bool = False
    """True when a waiting job with the same debounce key absorbed the enqueue: `id` is that job's."""


@dataclass(frozen=True)
class EnqueueOutcome:
    """The outcome of one job of `enqueue_batch`: stored (`ok`), or refused with a reason."""

    ok: bool
    """True when the job was stored (or deduplicated)."""
    id: str | None = None
    """The job's id when ok."""
    deduplicated: bool = False
    """True when ok and the idempotency key was seen before."""
    debounced: bool = False
    """True when ok and a waiting job with the same debounce key absorbed the enqueue."""
    reason: RejectionReason | None = None
    """Why the job was refused, when not ok."""
    message: str = ""
    """A sentence for people, when not ok."""


@dataclass(frozen=True)
class NackResult:
    """Where a nacked job went."""

    state: Literal["ready", "scheduled", "dead", "cancelled"]
    """`ready` (retry at once), `scheduled` (retry at `run_at_ms`), `dead`, or `cancelled` (a cancel was asked for)."""
    run_at_ms: int | None
    """When the job runs again; None when dead."""


@dataclass(frozen=True)
class AckResult:
    """The outcome of one ack of `ack_batch`."""

    outcome: Literal["ok", "not_found", "lease_lost", "cancelled"]
    """`ok`, or why the ack failed: the job is not leased (`not_found`), leased again (`lease_lost`),
    or was cancelled while it ran (`cancelled`: it is cancelled now, not completed)."""
    message: str
    """Why it failed, for people; empty when ok."""


@dataclass(frozen=True)
class AttemptError:
    """The error of one failed attempt: its message, and the class and stack of the exception
    the worker's code raised when the worker sent them (None otherwise)."""

    attempt: int
    at_ms: int
    error: str
    error_class: str | None = None
    stack: str | None = None


@dataclass(frozen=True)
class ErrorGroup:
    """One group of a queue's dead letters (`client.dlq.top_errors`): the last error's class
    ('' when none was sent) and the first line of its message, how many dead letters hold it,
    and when they first and last failed (ms since the epoch)."""

    error_class: str
    first_line: str
    jobs: int
    first_failed_at_ms: int
    last_failed_at_ms: int


@dataclass(frozen=True)
class TopErrors:
    """A queue's dead letters grouped by last error, the most jobs first. Only the newest
    50,000 are read: `complete` says whether that was all of them."""

    groups: tuple[ErrorGroup, ...]
    group_count: int
    scanned: int
    dead_total: int
    complete: bool


@dataclass(frozen=True)
class BackoffSettings:
    """Retry delays for nacks without their own delay: base_ms × factor^(attempt − 1), capped, ± jitter."""

    base_ms: int
    factor: float
    cap_ms: int
    jitter: float


@dataclass(frozen=True)
class RateLimit:
    """A rate limit: `leases` leases per `period_ms`, evenly spread, up to `burst` back to back."""

    leases: int
    period_ms: int
    burst: int


@dataclass(frozen=True)
class QueueSettings:
    """A queue's effective settings (see queue.proto for each one's meaning)."""

    max_attempts: int
    backoff: BackoffSettings
    default_lease_ms: int
    max_lease_ms: int
    max_payload_bytes: int
    max_depth: int
    dedup_window_ms: int
    dead_retention_ms: int
    completed_retention_ms: int
    allowed_types: tuple[str, ...]
    cancelled_retention_ms: int = 0
    """How long cancelled jobs are kept, with who cancelled them and when."""
    expired_action: Literal["dead_letter", "delete"] = "dead_letter"
    """What happens to a job whose expiry passed before it started."""
    max_leased: int = 0
    """Jobs of the queue leased at once, across every worker; 0 = no limit."""
    rate_limit: RateLimit | None = None
    """How fast leases of the queue may start; None = no rate limit."""
    group_max_leased: int = 0
    """Jobs of one group leased at once; 0 = no limit."""
    group_rate_limit: RateLimit | None = None
    """How fast leases of one group may start; None = no rate limit."""
    durability: Literal["server", "full", "relaxed"] = "server"
    """When the queue's writes are answered: after an fsync (`full`), before one
    (`relaxed`: they survive a process crash, not a power cut), or as the server says."""
    default_timeout_ms: int = 0
    """Hard execution timeout of an attempt of a job that gives none, in ms; 0 = none."""
    priority_aging_ms: int = 0
    """Priority aging: a ready job counts one priority higher for every this many ms it has
    waited (jobs without a group); 0 = off, strict priority."""


@dataclass(frozen=True)
class StateCounts:
    """Jobs on a queue by state."""

    scheduled: int
    ready: int
    leased: int
    completed: int
    dead: int
    cancelled: int = 0
    waiting: int = 0
    """Jobs waiting for the jobs they depend on to end (workflows); 0 from a server older
    than this count."""


SettingSource = Literal["default", "queue_defaults", "queue", "override"]
"""Where a queue's setting comes from, lowest precedence first: sepp's built-in default,
the config file's [queue_defaults], its [queues.NAME], or a run-time override
(`set_queue_settings`)."""


@dataclass(frozen=True)
class SettingValue:
    """One setting of a queue, by its config-file name (`max_attempts`, `backoff_base_ms`)."""

    key: str
    value: Any
    """The effective value, in the unit the name says (ms, bytes)."""
    source: SettingSource
    file_value: Any
    """The value without the run-time override: what `reset_queue_settings` gives back."""


@dataclass(frozen=True)
class QueueInfo:
    """One queue as `list_queues` reports it."""

    name: str
    paused: bool
    counts: StateCounts
    oldest_ready_age_ms: int
    """How long the oldest ready job has been due; 0 when none is ready."""
    waiting_workers: int
    """Reserve calls and Work streams waiting on this queue right now."""
    settings: QueueSettings
    throttled_workers: int = 0
    """Of those, the ones a limit (max_leased, a rate limit, group limits) holds back from ready jobs."""
    ready_groups: int = 0
    """Groups with ready jobs, counted up to 1,000 (`ready_groups_capped`: there are more)."""
    ready_groups_capped: bool = False
    setting_values: tuple[SettingValue, ...] = ()
    """Every setting with its value and where the value comes from."""


@dataclass(frozen=True)
class SettingChange:
    """One setting a config reload changes (or, as a dry run, would change): either its two
    values, or a `summary` instead (a secret's value is never sent)."""

    key: str
    """The TOML key, e.g. "server.log_level"; a list ("grpc.api_keys"); a queue ("queues.emails")."""
    old_value: str | None
    """The running value as text in plain units ("30s", "not set"); None when `summary` is given."""
    new_value: str | None
    """The new value, the same way; None when `summary` is given."""
    summary: str | None
    """"changed" for a secret, e.g. "added deploy; removed ci" for a list, "declared" for a queue;
    else None."""
    restart_required: bool
    """True when the new value waits for a restart; False when it is in force now (or would be)."""


@dataclass(frozen=True)
class ReloadReport:
    """What a config reload did or, as a dry run, would do."""

    applied: bool
    """True when the new settings are in force (never for a dry run or a refused file)."""
    changed: tuple[str, ...]
    """Settings that change without a restart, e.g. `server.log_level`."""
    restart_required: tuple[str, ...]
    """Settings that differ in the file but keep their running values until a restart."""
    problems: tuple[tuple[str, str], ...]
    """Why the file was refused, as (setting, message) pairs; then nothing changed."""
    config_file: str | None
    changes: tuple[SettingChange, ...] = ()
    """Every setting of `changed` and then of `restart_required`, with its running and new
    value; empty from a server that predates it. For a refused file that loads (`problems`
    set), what it would have changed, while `changed` and `restart_required` stay empty."""
    security_downgrades: tuple[str, ...] = ()
    """What the file lowers security by, e.g. "grpc.tls", "engine.strict_queues (from true to
    false)", "grpc.api_keys (deploy: its role goes from producer to admin)" (names and roles,
    never a secret): on a reload applied (or dry run) with `allow_security_downgrade`, and on a
    refusal for it. Empty otherwise, and from a server that predates it."""


@dataclass(frozen=True)
class WorkerInfo:
    """One connected worker as `list_workers` reports it."""

    worker_id: str
    """The worker id it gave, or "(none)"."""
    address: str
    """Its address as the server sees it, e.g. "127.0.0.1:53122"."""
    connections: int
    """Its streams (or Reserve callers) from that address with that worker id: an SDK Worker opens two."""
    transport: str
    """"work_stream" (an open Work stream, the Worker) or "reserve" (Reserve calls)."""
    queues: tuple[str, ...]
    connected_at_ms: int
    """When its stream began (Reserve callers: its first listed call), ms since the epoch."""
    last_seen_at_ms: int
    """Its last reserve, settlement or credit, ms since the epoch."""
    jobs_held: int
    """Jobs leased under its worker id now."""
    oldest_lease_at_ms: int | None
    """When the oldest of those leases began, ms since the epoch; None when it holds none."""
    completed_recent: int = 0
    """Attempts of its worker id that completed over the last `recent_window_ms` (15 minutes)."""
    failed_recent: int = 0
    """Attempts of its worker id that failed over the same window."""
    recent_window_ms: int = 0
    """The window of those two counts (counted in memory since the server started)."""


@dataclass(frozen=True)
class WorkerPage:
    """One page of the connected workers (`list_workers_page`), ordered by worker id, transport
    and address."""

    workers: list[WorkerInfo]
    waiting_reserves: int
    """Reserve long-polls and Work streams waiting for jobs now, on every queue (0 for a key
    held to some queues, which may not see the others')."""
    next_page_token: str
    """Pass as `page_token` for the next page; "" on the last page."""


@dataclass(frozen=True)
class ServerLimits:
    """Every server-wide limit in effect (see admin.proto for each one's meaning)."""

    max_name_length: int
    max_metadata_bytes: int
    max_metadata_entries: int
    max_idempotency_key_bytes: int
    max_worker_id_bytes: int
    max_error_bytes: int
    max_error_history: int
    max_batch_jobs: int
    max_reserve_jobs: int
    max_schedule_ahead_ms: int
    max_wait_ms: int
    max_waiters: int
    max_page_size: int
    max_message_bytes: int
    max_reserve_queues: int
    max_schedules: int
    max_connections: int
    max_streams_per_connection: int
    handshake_timeout_ms: int
    idle_timeout_ms: int
    max_result_bytes: int
    max_progress_bytes: int
    max_event_subscribers: int
    event_backlog_events: int
    event_backlog_bytes: int
    event_resume_window_ms: int
    max_event_subscribers_per_key: int
    max_bytes_in_flight_per_connection: int
    max_bytes_in_flight_per_key: int
    finished_outcome_ms: int
    """How long the outcome of a job deleted as it finished is kept for get_job and wait_for
    (`Job.outcome_only`), in ms; 0: none."""
    max_queues: int
    first_message_timeout_ms: int
    """A call must send its first message within this, in ms (grpc.first_message_timeout_ms)."""
    keepalive_ms: int = 0
    """The server pings every connection this long after its last ping was answered, in ms
    (grpc.keepalive_ms; the value it started with: a reload does not change it). A client may
    pick its own `keepalive_ms` from it. 0 from a server that predates the field (it does not
    say): not a value to connect with (`keepalive_ms` is positive), keep your own then."""
    keepalive_timeout_ms: int = 0
    """A server ping unanswered this long closes the connection, in ms (grpc.keepalive_timeout_ms,
    as it started); 0 from a server that predates the field."""
    max_dependencies_per_job: int = 0
    """Jobs one job may name in `depends_on` (limits.max_dependencies_per_job)."""
    max_flow_jobs: int = 0
    """Jobs in one flow (`enqueue_flow`; limits.max_flow_jobs)."""
    max_flow_depth: int = 0
    """The longest chain of jobs in one flow (limits.max_flow_depth)."""
    max_dependency_results_bytes: int = 0
    """Results of its dependencies handed to a leased job (`dependency_results`), in bytes
    together; above it, ids only (`result_omitted`; limits.max_dependency_results_bytes)."""
    max_open_batches_per_key: int = 0
    """Batches not ended (open or sealed) one API key may hold; one more is refused with
    `resource_exhausted` (limits.max_open_batches_per_key)."""
    batch_retention_ms: int = 0
    """How long an ended batch is kept before the server deletes it, in ms
    (limits.batch_retention_ms); `get_batch` of one deleted is `not_found`."""
    max_dependents_per_job: int = 0
    """Jobs that may depend on one job (name it in `depends_on` or run after it in a flow); an
    enqueue that would give it more is refused with `invalid_job` (limits.max_dependents_per_job).
    0 from a server that predates it."""


@dataclass(frozen=True)
class StoreInfo:
    """Which store a server keeps its jobs in and, for PostgreSQL, where; never a password. For a
    key other than an admin key for every queue, the `kind` alone (the rest None and 0, as for
    SQLite: docs/protocol.md)."""

    kind: str = ""
    """`sqlite` (the embedded database of the data directory) or `postgres`; "" from a server
    that predates it."""
    host: str | None = None
    """PostgreSQL: the database server as host:port; None for SQLite."""
    database: str | None = None
    """PostgreSQL: the database; None for SQLite."""
    schema: str | None = None
    """PostgreSQL: the schema of sepp's tables; None for SQLite."""
    signals_connected: bool = False
    """PostgreSQL: whether the server hears the other servers' signals now (LISTEN); False means
    it relies on its once-a-second poll. False for SQLite."""
    replication: str | None = None
    """PostgreSQL: the primary's replication when the server last connected to it:
    `synchronous` (a failover to a standby loses nothing acknowledged), `asynchronous` or `none`
    (docs/replication.md); None for SQLite."""
    standbys: int = 0
    """PostgreSQL: the standbys streaming from the primary then; 0 for SQLite."""
    pool_size: int = 0
    """PostgreSQL: this server's connections, one writer and the rest for reads
    (store.pool_size); 0 for SQLite."""
    max_waiting_reads: int = 0
    """PostgreSQL: reads that may wait for a read connection at once; one more is refused
    with `resource_exhausted` (store.max_waiting_reads); 0 for SQLite."""
    max_waiting_reads_per_key: int = 0
    """PostgreSQL: read calls one API key may have in flight while reads wait for a
    connection (store.max_waiting_reads_per_key); 0 for SQLite."""
    statement_timeout_ms: int = 0
    """PostgreSQL: the longest a statement may run before PostgreSQL cancels it
    (store.statement_timeout_ms); 0 for SQLite."""


@dataclass(frozen=True)
class ServerIdentity:
    """The server process that answered; nothing in it is a secret. Servers sharing one
    PostgreSQL behind a load balancer are told apart by it. "" and 0 from a server that
    predates it, and for a key other than an admin key for every queue (docs/protocol.md)."""

    host_name: str = ""
    """The machine's host name."""
    instance_id: str = ""
    """Made at random when the process started: the same one means the same process."""
    pid: int = 0
    """The process id on that machine."""
    grpc_address: str = ""
    """Where it listens for gRPC, as host:port with the port it bound."""
    admin_address: str = ""
    """Where it serves the admin UI, as host:port."""
    http_address: str | None = None
    """Where it serves the HTTP API, as host:port; None when that is off."""


@dataclass(frozen=True)
class ServerInfo:
    """The server's version, clock, durability and limits."""

    version: str
    git_commit: str
    durability: Literal["full", "relaxed", "unknown"]
    """`full`: every commit fsync'd before any reply; `relaxed`: survives a process crash, not a power cut."""
    server_time_ms: int
    started_at_ms: int
    limits: ServerLimits
    queue_defaults: QueueSettings
    strict_queues: bool
    store: StoreInfo = field(default_factory=StoreInfo)
    """The store the server keeps its jobs in, and (PostgreSQL) where (docs/postgres.md)."""
    identity: ServerIdentity = field(default_factory=ServerIdentity)
    """Which server process answered (with `started_at_ms`)."""
    features: list[str] = field(default_factory=list)
    """Protocol features this server has that older ones lack (`nack_give_back`,
    `work_stop_delivery`; docs/protocol.md, "Features"); empty from an older server."""


@dataclass
class ClientStats:
    """Counters of the enqueue path, for tuning and tests."""

    enqueued_jobs: int = 0
    """Jobs sent (each retry counts again)."""
    batches: int = 0
    """Batches sent: Produce messages plus unary EnqueueBatch/EnqueueAtomic calls."""
    produce_messages: int = 0
    """Messages sent on Produce streams."""
