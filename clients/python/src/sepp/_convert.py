"""Between the client's shapes (models.py) and the protocol's messages."""
from __future__ import annotations

import datetime
import json as _json
import math
import traceback
from typing import Any, Literal, Mapping, Sequence, TypeGuard

import grpc

from .errors import JobRejection, SeppError, rejection_reason
from .jobs import DEAD_REASON_TO_PROTO
from .models import (
    UNSET,
    BackoffSettings,
    DeadReason,
    EnqueueOutcome,
    JobSpec,
    NackResult,
    Payload,
    QueueInfo,
    QueueSettings,
    RateLimit,
    ReloadReport,
    ServerIdentity,
    ServerInfo,
    SettingChange,
    SettingValue,
    ServerLimits,
    StateCounts,
    StoreInfo,
    TimeInput,
    WorkerInfo,
)
from .v1 import admin_pb2, job_pb2, queue_pb2, work_pb2, workers_pb2

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


def invalid(message: str) -> SeppError:
    """An INVALID_ARGUMENT raised before anything is sent."""
    return SeppError(grpc.StatusCode.INVALID_ARGUMENT, message)


def dead_reason_to_proto(reason: DeadReason | None, name: str) -> job_pb2.DeadReason:
    """The protocol's dead reason (UNSPECIFIED for None: any reason); INVALID_ARGUMENT for an unknown one."""
    if reason is None:
        return job_pb2.DEAD_REASON_UNSPECIFIED
    if not isinstance(reason, str) or reason not in DEAD_REASON_TO_PROTO:
        raise invalid(f"{name}: unknown dead reason {reason!r} (use {', '.join(DEAD_REASON_TO_PROTO)})")
    return DEAD_REASON_TO_PROTO[reason]


def payload_bytes(payload: Payload | None) -> bytes:
    if payload is None:
        return b""
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise invalid("payload: give bytes or a str (or json=... for a value to send as JSON)")


def time_ms(value: TimeInput, name: str) -> int:
    """Milliseconds since the epoch from a datetime (naive means UTC) or a number of ms."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return round(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise invalid(f"{name}: give a datetime or milliseconds since the Unix epoch")
    return round(value)


def is_ms(value: Any) -> TypeGuard[float]:
    """True for a number the protocol carries as ms once rounded: finite, within ±2^53."""
    return (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            and abs(value) <= 2**53)


def _whole_ms(value: Any, name: str) -> int:
    if not is_ms(value):
        raise invalid(f"{name}: not a number of milliseconds")
    return round(value)


def job_from_spec(spec: JobSpec, after: Sequence[str] = ()) -> job_pb2.EnqueueJob:
    """The protocol's job from the client's; raises INVALID_ARGUMENT for what the server could
    not make sense of (the server validates the rest). `after`: in a flow, the names of the
    flow's jobs it runs after."""
    if spec.on_dependency_failure is not None and not spec.depends_on and not after:
        # The server refuses it too: accepted and ignored, it would read as if the job waited on something.
        raise invalid("on_dependency_failure is given but the job has no dependencies: give depends_on "
                      "(in a flow, or after), or leave on_dependency_failure out")
    if spec.json is not UNSET and spec.payload is not None:
        raise invalid("give payload or json, not both")
    if spec.json is not UNSET:
        try:
            data = _json.dumps(spec.json, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise invalid(f"json: the value has no JSON form ({error})") from None
        kind = JSON_TYPE
    else:
        data = payload_bytes(spec.payload)
        kind = TEXT_TYPE if isinstance(spec.payload, str) else ""
    if spec.run_at is not None and spec.delay_ms is not None:
        raise invalid("give run_at or delay_ms, not both")
    job = job_pb2.EnqueueJob(
        queue=spec.queue,
        type=spec.type,
        payload=data,
        content_type=spec.content_type if spec.content_type is not None else kind,
        priority=spec.priority,
        max_attempts=spec.max_attempts or 0,
        idempotency_key=spec.idempotency_key or "",
        metadata=dict(spec.metadata or {}),
        traceparent=spec.traceparent or "",
        tracestate=spec.tracestate or "",
        group=spec.group or "",
    )
    if spec.run_at is not None:
        job.run_at_ms = time_ms(spec.run_at, "run_at")
    elif spec.delay_ms is not None:
        job.delay_ms = _whole_ms(spec.delay_ms, "delay_ms")
    if spec.ttl_ms is not None and spec.expires_at is not None:
        raise invalid("give ttl_ms or expires_at, not both")
    if spec.expires_at is not None:
        job.expires_at_ms = time_ms(spec.expires_at, "expires_at")
    elif spec.ttl_ms is not None:
        job.ttl_ms = _whole_ms(spec.ttl_ms, "ttl_ms")
    if spec.unique_while_active:
        job.unique_while_active = True
    if spec.execution_timeout_ms is not None:
        job.timeout_ms = _whole_ms(spec.execution_timeout_ms, "execution_timeout_ms")
    if spec.debounce_key:
        job.debounce_key = spec.debounce_key
    if spec.debounce_ms is not None:
        job.debounce_ms = _whole_ms(spec.debounce_ms, "debounce_ms")
    if spec.debounce_max_ms is not None:
        job.debounce_max_ms = _whole_ms(spec.debounce_max_ms, "debounce_max_ms")
    if spec.depends_on:
        job.depends_on.extend(spec.depends_on)
    if spec.on_dependency_failure is not None:
        policy = _POLICY_TO_PROTO.get(spec.on_dependency_failure)
        if policy is None:
            raise invalid("on_dependency_failure: give cancel, run or wait")
        job.on_dependency_failure = policy
    return job


_POLICY_TO_PROTO: dict[str, job_pb2.DependencyFailurePolicy] = {
    "cancel": job_pb2.DEPENDENCY_FAILURE_POLICY_CANCEL,
    "run": job_pb2.DEPENDENCY_FAILURE_POLICY_RUN,
    "wait": job_pb2.DEPENDENCY_FAILURE_POLICY_WAIT,
}


def utf8_bytes(text: str) -> int:
    """A string's size on the wire: its UTF-8 bytes, as protobuf encodes it (a character may take
    up to 4); ASCII, the common case, without encoding it."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def approx_encoded_bytes(job: job_pb2.EnqueueJob) -> int:
    """A rough upper bound of a job's encoded size, to keep Produce messages under the server's
    limit: strings count by their UTF-8 bytes, not characters, so metadata or keys in é, 中 or
    emoji do not make a batch the server refuses for its size."""
    size = len(job.payload) + utf8_bytes(job.queue) + utf8_bytes(job.type) + utf8_bytes(job.content_type) + 64
    size += utf8_bytes(job.idempotency_key) + utf8_bytes(job.traceparent) + utf8_bytes(job.tracestate)
    size += utf8_bytes(job.group) + utf8_bytes(job.debounce_key)
    for key, value in job.metadata.items():
        size += utf8_bytes(key) + utf8_bytes(value) + 8
    for job_id in job.depends_on:
        size += utf8_bytes(job_id) + 4
    return size


def rejection_from_proto(index: int, reason: int, message: str) -> JobRejection:
    name = job_pb2.RejectionReason.Name(reason) if reason in job_pb2.RejectionReason.values() else ""
    return JobRejection(index, rejection_reason(name.removeprefix("REJECTION_REASON_").lower()), message)


def outcome_from_proto(result: job_pb2.EnqueueResult | None) -> EnqueueOutcome:
    if result is not None and result.WhichOneof("outcome") == "accepted":
        accepted = result.accepted
        return EnqueueOutcome(ok=True, id=accepted.job_id, deduplicated=accepted.deduplicated,
                              debounced=accepted.debounced)
    if result is not None and result.WhichOneof("outcome") == "rejection":
        rejection = rejection_from_proto(0, result.rejection.reason, result.rejection.message)
        return EnqueueOutcome(ok=False, reason=rejection.reason, message=rejection.message)
    return EnqueueOutcome(ok=False, reason="invalid_job", message="the server sent no result for this job")


def nack_request(
    job_id: str, attempt: int, error: str | BaseException | None, retry_after_ms: float | None, dead_letter: bool,
    raised: BaseException | None = None, *, give_back: bool = False,
) -> work_pb2.NackRequest:
    """The protocol's nack: a give-back wins, then dead-letter, then a delay; none means the queue's
    backoff. The class and stack sent are those of `raised`, else of `error` when it is an exception."""
    message = "" if error is None else error if isinstance(error, str) else error_text(error)
    request = work_pb2.NackRequest(job_id=job_id, attempt=attempt, error_message=message)
    thrown = raised if raised is not None else error if isinstance(error, BaseException) else None
    if thrown is not None:
        request.error_class, request.error_stack = error_class_and_stack(thrown)
    if give_back:
        request.give_back = True
    elif dead_letter:
        request.dead_letter = True
    elif retry_after_ms is not None:
        request.retry_delay_ms = max(0, _whole_ms(retry_after_ms, "retry_after_ms"))
    return request


_MAX_CLASS_CHARS = 256
_MAX_STACK_CHARS = 64 * 1024
_CONTROL = dict.fromkeys([*range(0x20), 0x7F])


def error_class_and_stack(error: BaseException) -> tuple[str, str]:
    """What a nack sends of an exception besides its message: its class, qualified by its
    module unless a builtin (`requests.exceptions.Timeout`, `KeyError`), printable and at
    most 256 characters; and its traceback as Python prints it (chained causes included),
    at most 64 KiB (the server keeps `max_error_bytes` of it). Only what the exception
    itself holds: nothing else of the job."""
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
    stack = "".join(traceback.format_exception(kind, error, error.__traceback__))
    return name.translate(_CONTROL)[:_MAX_CLASS_CHARS], stack[:_MAX_STACK_CHARS]


def error_text(error: BaseException) -> str:
    """What a nack records for an exception: its type and message (`KeyError: 'to'`)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def nack_result_from_proto(response: work_pb2.NackResponse) -> NackResult:
    if response.state == job_pb2.JOB_STATE_DEAD:
        return NackResult("dead", None)
    if response.state == job_pb2.JOB_STATE_CANCELLED:
        return NackResult("cancelled", None)
    if response.state == job_pb2.JOB_STATE_SCHEDULED:
        return NackResult("scheduled", response.run_at_ms or None)
    return NackResult("ready", response.run_at_ms or None)


def _settings(settings: queue_pb2.QueueSettings) -> QueueSettings:
    b = settings.backoff
    return QueueSettings(
        max_attempts=settings.max_attempts,
        backoff=BackoffSettings(b.base_ms, b.factor, b.cap_ms, b.jitter),
        default_lease_ms=settings.default_lease_ms,
        max_lease_ms=settings.max_lease_ms,
        max_payload_bytes=settings.max_payload_bytes,
        max_depth=settings.max_depth,
        dedup_window_ms=settings.dedup_window_ms,
        dead_retention_ms=settings.dead_retention_ms,
        completed_retention_ms=settings.completed_retention_ms,
        allowed_types=tuple(settings.allowed_types),
        cancelled_retention_ms=settings.cancelled_retention_ms,
        expired_action="delete" if settings.expired_action == queue_pb2.EXPIRED_ACTION_DELETE else "dead_letter",
        max_leased=settings.max_leased,
        rate_limit=_rate(settings.rate_limit),
        group_max_leased=settings.group_max_leased,
        group_rate_limit=_rate(settings.group_rate_limit),
        durability=_durability(settings.durability),
        default_timeout_ms=settings.default_timeout_ms,
        priority_aging_ms=settings.priority_aging_ms,
    )


def _durability(value: str) -> Literal["server", "full", "relaxed"]:
    # An older server sends nothing: its queues follow the server's durability.
    if value == "full":
        return "full"
    if value == "relaxed":
        return "relaxed"
    return "server"


def _rate(rate: queue_pb2.RateLimit) -> RateLimit | None:
    return RateLimit(rate.leases, rate.period_ms, rate.burst) if rate.leases > 0 else None


def queue_info_from_proto(queue: queue_pb2.QueueInfo) -> QueueInfo:
    c = queue.counts
    return QueueInfo(
        name=queue.name,
        paused=queue.paused,
        counts=StateCounts(c.scheduled, c.ready, c.leased, c.completed, c.dead, c.cancelled, c.waiting),
        oldest_ready_age_ms=queue.oldest_ready_age_ms,
        waiting_workers=queue.waiting_workers,
        settings=_settings(queue.settings),
        throttled_workers=queue.throttled_workers,
        ready_groups=queue.ready_groups,
        ready_groups_capped=queue.ready_groups_capped,
        setting_values=tuple(
            SettingValue(s.key, _json_value(s.value_json), _SETTING_SOURCES.get(s.source, "default"),
                         _json_value(s.file_value_json))
            for s in queue.setting_values
        ),
    )


_SETTING_SOURCES: dict[int, Any] = {
    queue_pb2.SETTING_SOURCE_DEFAULT: "default",
    queue_pb2.SETTING_SOURCE_QUEUE_DEFAULTS: "queue_defaults",
    queue_pb2.SETTING_SOURCE_QUEUE: "queue",
    queue_pb2.SETTING_SOURCE_OVERRIDE: "override",
}


def _json_value(text: str) -> Any:
    """A setting value the server sent as JSON; text that is not JSON is kept as it is."""
    try:
        return _json.loads(text)
    except ValueError:
        return text


def setting_texts(settings: Mapping[str, str | int | float | Sequence[str]]) -> dict[str, str]:
    """Settings to send: text stays as typed ("30s"); numbers and lists go as JSON, which the
    server reads as TOML values."""
    return {k: v if isinstance(v, str) else _json.dumps(v if not isinstance(v, tuple) else list(v))
            for k, v in settings.items()}


def reload_report_from_proto(response: admin_pb2.ReloadConfigResponse) -> ReloadReport:
    return ReloadReport(
        applied=response.applied,
        changed=tuple(response.changed),
        restart_required=tuple(response.restart_required),
        problems=tuple((p.key, p.message) for p in response.problems),
        config_file=response.config_file or None,
        changes=tuple(
            SettingChange(
                key=c.key,
                old_value=None if c.summary else c.old_value,
                new_value=None if c.summary else c.new_value,
                summary=c.summary or None,
                restart_required=c.restart_required,
            )
            for c in response.changes
        ),
        security_downgrades=tuple(response.security_downgrades),
    )


def worker_info_from_proto(worker: workers_pb2.WorkerInfo) -> WorkerInfo:
    return WorkerInfo(
        worker_id=worker.worker_id,
        address=worker.address,
        connections=worker.connections,
        transport="work_stream" if worker.transport == workers_pb2.WORKER_TRANSPORT_WORK_STREAM else "reserve",
        queues=tuple(worker.queues),
        connected_at_ms=worker.connected_at_ms,
        last_seen_at_ms=worker.last_seen_at_ms,
        jobs_held=worker.jobs_held,
        oldest_lease_at_ms=worker.oldest_lease_at_ms or None,
        completed_recent=worker.completed_recent,
        failed_recent=worker.failed_recent,
        recent_window_ms=worker.recent_window_ms,
    )


def server_info_from_proto(info: admin_pb2.GetServerInfoResponse) -> ServerInfo:
    lim = info.limits
    durability = {admin_pb2.DURABILITY_MODE_FULL: "full", admin_pb2.DURABILITY_MODE_RELAXED: "relaxed"}
    return ServerInfo(
        version=info.version,
        git_commit=info.git_commit,
        durability=durability.get(info.durability, "unknown"),  # type: ignore[arg-type]
        server_time_ms=info.server_time_ms,
        started_at_ms=info.started_at_ms,
        limits=ServerLimits(
            lim.max_name_length, lim.max_metadata_bytes, lim.max_metadata_entries, lim.max_idempotency_key_bytes,
            lim.max_worker_id_bytes, lim.max_error_bytes, lim.max_error_history, lim.max_batch_jobs,
            lim.max_reserve_jobs, lim.max_schedule_ahead_ms, lim.max_wait_ms, lim.max_waiters, lim.max_page_size,
            lim.max_message_bytes, lim.max_reserve_queues, lim.max_schedules, lim.max_connections,
            lim.max_streams_per_connection, lim.handshake_timeout_ms, lim.idle_timeout_ms,
            lim.max_result_bytes, lim.max_progress_bytes,
            lim.max_event_subscribers, lim.event_backlog_events, lim.event_backlog_bytes,
            lim.event_resume_window_ms, lim.max_event_subscribers_per_key,
            lim.max_bytes_in_flight_per_connection, lim.max_bytes_in_flight_per_key,
            lim.finished_outcome_ms, lim.max_queues, lim.first_message_timeout_ms,
            lim.keepalive_ms, lim.keepalive_timeout_ms, lim.max_dependencies_per_job, lim.max_flow_jobs,
            lim.max_flow_depth, lim.max_dependency_results_bytes, lim.max_open_batches_per_key,
            lim.batch_retention_ms,
            lim.max_dependents_per_job,
        ),
        queue_defaults=_settings(info.queue_defaults),
        strict_queues=info.strict_queues,
        store=_store(info.store),
        identity=ServerIdentity(
            host_name=info.identity.host_name,
            instance_id=info.identity.instance_id,
            pid=info.identity.pid,
            grpc_address=info.identity.grpc_address,
            admin_address=info.identity.admin_address,
            http_address=info.identity.http_address or None,
        ),
        features=list(info.features),
    )


def _store(store: admin_pb2.StoreInfo) -> StoreInfo:
    # Empty strings are what does not apply (SQLite), or a server that predates the field.
    return StoreInfo(
        kind=store.kind,
        host=store.host or None,
        database=store.database or None,
        schema=store.schema or None,
        signals_connected=store.signals_connected,
        replication=store.replication or None,
        standbys=store.standbys,
        pool_size=store.pool_size,
        max_waiting_reads=store.max_waiting_reads,
        max_waiting_reads_per_key=store.max_waiting_reads_per_key,
        statement_timeout_ms=store.statement_timeout_ms,
    )
