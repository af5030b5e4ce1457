"""Jobs as the client hands them out: a leased job (from `reserve` or a Worker)
and a job's full record (from `get_job` and dead-letter listings). Both keep
the payload as bytes and decode it on request."""
from __future__ import annotations

import json as _json
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from .models import AttemptError, DeadReason, JobState
from .results import JobProgress, decode_result, is_json_content_type, progress_from_proto
from .v1 import job_pb2

_STATE_NAMES: dict[int, JobState] = {
    job_pb2.JOB_STATE_SCHEDULED: "scheduled",
    job_pb2.JOB_STATE_READY: "ready",
    job_pb2.JOB_STATE_LEASED: "leased",
    job_pb2.JOB_STATE_COMPLETED: "completed",
    job_pb2.JOB_STATE_DEAD: "dead",
    job_pb2.JOB_STATE_CANCELLED: "cancelled",
    job_pb2.JOB_STATE_WAITING: "waiting",
}

_DEAD_REASON_NAMES: dict[int, DeadReason] = {
    job_pb2.DEAD_REASON_ATTEMPTS_EXHAUSTED: "attempts_exhausted",
    job_pb2.DEAD_REASON_LEASE_EXPIRED: "lease_expired",
    job_pb2.DEAD_REASON_DEAD_LETTERED: "dead_lettered",
    job_pb2.DEAD_REASON_EXPIRED: "expired",
    job_pb2.DEAD_REASON_TIMEOUT: "timeout",
}

DEAD_REASON_TO_PROTO: dict[DeadReason, job_pb2.DeadReason] = {
    "attempts_exhausted": job_pb2.DEAD_REASON_ATTEMPTS_EXHAUSTED,
    "lease_expired": job_pb2.DEAD_REASON_LEASE_EXPIRED,
    "dead_lettered": job_pb2.DEAD_REASON_DEAD_LETTERED,
    "expired": job_pb2.DEAD_REASON_EXPIRED,
    "timeout": job_pb2.DEAD_REASON_TIMEOUT,
}


def job_state_name(state: int) -> JobState:
    """A job state from the protocol; an unknown one is a protocol error."""
    name = _STATE_NAMES.get(state)
    if name is None:
        raise ValueError(f"the server sent an unknown job state {state}")
    return name


def _text_or_none(text: str) -> str | None:
    return None if text == "" else text


def _ms_or_none(ms: int) -> int | None:
    return None if ms == 0 else ms


class _Payload:
    payload: bytes

    def json(self) -> Any:
        """The payload parsed as JSON (raises ValueError when it is not JSON)."""
        return _json.loads(self.payload.decode("utf-8"))

    def text(self) -> str:
        """The payload as UTF-8 text."""
        return self.payload.decode("utf-8")


EdgeState = Literal["pending", "completed", "failed"]
"""A dependency edge: `pending` until the depended-on job ends, then `completed`, or `failed`
(it failed and the edge counted that, under the `run` or `cancel` policy)."""

_EDGE_NAMES: dict[int, EdgeState] = {
    job_pb2.DEPENDENCY_EDGE_STATE_PENDING: "pending",
    job_pb2.DEPENDENCY_EDGE_STATE_COMPLETED: "completed",
    job_pb2.DEPENDENCY_EDGE_STATE_FAILED: "failed",
}


def edge_state_name(state: int) -> EdgeState:
    """An edge state from the protocol (an unknown one reads as pending)."""
    return _EDGE_NAMES.get(state, "pending")


@dataclass(frozen=True)
class DependencyResult:
    """What a job this job depends on ended with (`LeasedJob.dependency_results`)."""

    job_id: str
    """The dependency's id."""
    name: str | None
    """Its name in the flow that made the dependency; None when it was named by id."""
    state: JobState | None
    """Its state now (`completed`, or `dead` / `cancelled` under the `run` policy); None once swept,
    or (then without result) when of a queue the worker's key may not see."""
    result: Any
    """Its result decoded by its content type (JSON parsed, `text/*` a str, else bytes); None
    without one, or when `result_omitted`."""
    result_omitted: bool
    """True when the results together were above `limits.max_dependency_results_bytes`: read
    this one with `client.get_job(job_id)`."""
    result_data: bytes | None = None
    """The result's bytes; None without one, or when `result_omitted`."""
    result_content_type: str | None = None
    """The result's MIME type (`application/octet-stream` when the worker gave none); None
    without a result."""

    @staticmethod
    def from_proto(d: job_pb2.DependencyResult) -> DependencyResult:
        """Wraps a protocol message."""
        has_result = len(d.result) > 0 or d.result_content_type != ""
        content_type = (d.result_content_type or "application/octet-stream") if has_result else None
        return DependencyResult(
            job_id=d.job_id,
            name=_text_or_none(d.name),
            state=_STATE_NAMES.get(d.state),
            result=decode_result(d.result, content_type) if content_type is not None else None,
            result_omitted=d.result_omitted,
            result_data=d.result if has_result else None,
            result_content_type=content_type,
        )


@dataclass(frozen=True)
class JobLink:
    """A job at the other end of a dependency (`Job.dependencies`, `Job.dependents`)."""

    id: str
    queue: str | None
    """None once that job was swept (the edge outlives it)."""
    type: str | None
    state: JobState | None
    edge: EdgeState
    """The edge's state."""
    name: str | None
    """The dependency's name in its flow; None when named by id (and for dependents)."""

    @staticmethod
    def from_proto(link: job_pb2.JobLink) -> JobLink:
        """Wraps a protocol message."""
        return JobLink(
            id=link.job_id,
            queue=_text_or_none(link.queue),
            type=_text_or_none(link.type),
            state=_STATE_NAMES.get(link.state),
            edge=edge_state_name(link.edge),
            name=_text_or_none(link.name),
        )


class LeasedJob(_Payload):
    """A job leased to this worker: run it, then ack or nack it (with its `attempt`)
    before `lease_deadline_ms`."""

    id: str
    """The job's id."""
    queue: str
    """The queue it came from."""
    type: str
    """The job type: which handler should run it."""
    content_type: str
    """MIME type of the payload (`application/octet-stream` when the producer gave none)."""
    priority: int
    """0 to 9, 9 first."""
    attempt: int
    """The lease's fencing token: 1 on first delivery, one more on each redelivery."""
    max_attempts: int
    """Deliveries allowed before the job goes dead; `attempt == max_attempts` is the last try."""
    lease_deadline_ms: int
    """When the lease ends (server clock)."""
    enqueued_at_ms: int
    """When the job was enqueued."""
    run_at_ms: int
    """When the job became due."""
    metadata: Mapping[str, str]
    """The metadata given at enqueue."""
    traceparent: str | None
    """The producer's W3C traceparent, or None."""
    tracestate: str | None
    """The producer's W3C tracestate, or None."""
    idempotency_key: str | None
    """The idempotency key given at enqueue, or None."""
    last_error: str | None
    """The previous attempt's error, or None."""
    group: str | None
    """The group given at enqueue, or None."""
    timeout_at_ms: int | None
    """When this attempt must end (its hard timeout: `timeout_ms` at enqueue, or the queue's
    `default_timeout_ms`), on the server's clock; None without one. The lease never passes it."""
    dependency_results: Sequence[DependencyResult]
    """What each job it depends on ended with, in enqueue order (empty for a job without
    dependencies): docs/workflows.md, "Results passed on"."""
    batch_id: str | None
    """The batch the job is a member of, or None outside batches: its handler adds to it with
    `client.add_to_batch(job.batch_id, jobs, from_member=job.id)` (the SDK passes the lease's token)."""

    def __init__(self, job: job_pb2.LeasedJob) -> None:
        self.id = job.job_id
        self.queue = job.queue
        self.type = job.type
        self.payload = job.payload
        self.content_type = job.content_type
        self.priority = job.priority
        self.attempt = job.attempt
        self.max_attempts = job.max_attempts
        self.lease_deadline_ms = job.lease_deadline_ms
        self.enqueued_at_ms = job.enqueued_at_ms
        self.run_at_ms = job.run_at_ms
        self.metadata = dict(job.metadata)
        self.traceparent = _text_or_none(job.traceparent)
        self.tracestate = _text_or_none(job.tracestate)
        self.idempotency_key = _text_or_none(job.idempotency_key)
        self.last_error = _text_or_none(job.last_error)
        self.group = _text_or_none(job.group)
        self.timeout_at_ms = _ms_or_none(job.timeout_at_ms)
        self.dependency_results = tuple(DependencyResult.from_proto(d) for d in job.dependency_results)
        self.batch_id = _text_or_none(job.batch_id)
        # Kept behind a property (and out of repr) so that printing the job leaves it out.
        self._lease_token = None if self.batch_id is None else _text_or_none(job.lease_token)

    @property
    def lease_token(self) -> str | None:
        """Only for a batch member: the secret token of this lease, which proves the member when it
        adds to its sealed batch (`from_member_token`; the SDK passes it itself while the handler
        runs in this process). None outside batches. Keep it as secret as an API key: whoever
        holds it may add jobs to the batch while this lease lasts."""
        return self._lease_token

    @property
    def is_last_attempt(self) -> bool:
        """True on the last allowed attempt: failing now makes the job dead."""
        return self.attempt >= self.max_attempts

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.queue}/{self.type} attempt {self.attempt}/{self.max_attempts}>"


def _result_fields(job: job_pb2.Job) -> dict[str, Any]:
    if not job.HasField("result"):
        return {"result": None, "result_data": None, "result_bytes": 0, "result_content_type": None}
    content_type = job.result.content_type or "application/octet-stream"
    return {
        "result": decode_result(job.result.data, content_type),
        "result_data": job.result.data,
        "result_bytes": job.result_bytes,
        "result_content_type": content_type,
    }


@dataclass(frozen=True, repr=False)
class Job(_Payload):
    """Everything the server knows about a job."""

    id: str
    """The job's id (UUIDv7, time-ordered)."""
    queue: str
    type: str
    state: JobState
    """Where the job is in its lifecycle."""
    priority: int
    payload: bytes
    """The job's input (empty in dead-letter listings; see `payload_bytes`)."""
    payload_bytes: int
    """Size of the payload in bytes (also set in listings)."""
    content_type: str
    attempt: int
    """Deliveries so far (0 before the first)."""
    max_attempts: int
    idempotency_key: str | None
    metadata: Mapping[str, str]
    traceparent: str | None
    tracestate: str | None
    enqueued_at_ms: int
    run_at_ms: int
    """When the job is (or was) due."""
    leased_at_ms: int | None
    """When the current lease began; None unless leased."""
    lease_deadline_ms: int | None
    """When the current lease ends; None unless leased."""
    worker_id: str | None
    """The worker id of the current lease, or None."""
    last_error: str | None
    """The most recent attempt's error, or None."""
    errors: Sequence[AttemptError]
    """The error of every failed attempt, oldest first (bounded; empty in listings)."""
    dead_reason: DeadReason | None
    """Why the job is dead; None unless dead."""
    failed_at_ms: int | None
    """When the job went dead; None unless dead."""
    completed_at_ms: int | None
    """When the job was acked; None unless completed."""
    result: Any
    """What the job returned (a completed job's ack result) decoded by its content type: JSON
    parsed, `text/*` a str, anything else bytes; None without one. Kept while the queue retains
    completed jobs."""
    result_data: bytes | None
    """The result's bytes, or None (empty in listings; see `result_bytes`)."""
    result_bytes: int
    """The result's size in bytes (also in listings); 0 without a result."""
    result_content_type: str | None
    """The result's MIME type, or None without a result."""
    progress: JobProgress | None
    """How far along the job is, as its worker last reported; None when it never did."""
    expires_at_ms: int | None = None
    """When the job stops being handed out (its TTL); None when it never expires."""
    cancelled_at_ms: int | None = None
    """When a cancel was asked for (set on cancelled jobs, and on leased ones being stopped)."""
    cancelled_by: str | None = None
    """Who asked for the cancel: `key:NAME`, an admin UI user, or `anonymous`."""
    group: str | None = None
    """The group given at enqueue, or None."""
    timeout_ms: int | None = None
    """The job's own hard timeout per attempt, in ms; None when it takes its queue's
    `default_timeout_ms`."""
    timeout_at_ms: int | None = None
    """When the current attempt must end (its hard timeout); None unless leased with one."""
    debounce_key: str | None = None
    """The debounce key given at enqueue, or None."""
    debounce_until_ms: int | None = None
    """The latest run time a debounced enqueue may push the job to (its first enqueue +
    `debounce_max_ms`); None without a cap."""
    outcome_only: bool = False
    """True when the job was deleted as it finished (acked on a queue that keeps no completed
    jobs, or dead or cancelled where that retention is 0) and the server answered with its
    outcome only, which it keeps in memory for `limits.finished_outcome_ms` (default 5 minutes;
    not across a restart): then only id, queue, type, state, attempt, when it ended, the result,
    last_error and dead_reason, and cancelled_by are set; the payload is empty and the metadata,
    error history and enqueue times are not kept."""

    dependencies: Sequence[JobLink] = ()
    """The jobs it depends on (`depends_on`, a flow's `after`), in enqueue order."""
    dependents: Sequence[JobLink] = ()
    """Up to 100 jobs that depend on it, oldest first (`client.get_flow` has them all)."""
    batch_id: str | None = None
    """The batch it is a member of, or None."""

    @staticmethod
    def from_proto(job: job_pb2.Job) -> Job:
        """Wraps a protocol message; the client builds these, applications receive them."""
        return Job(
            id=job.job_id,
            queue=job.queue,
            type=job.type,
            state=job_state_name(job.state),
            priority=job.priority,
            payload=job.payload,
            payload_bytes=job.payload_bytes,
            content_type=job.content_type,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            idempotency_key=_text_or_none(job.idempotency_key),
            metadata=dict(job.metadata),
            traceparent=_text_or_none(job.traceparent),
            tracestate=_text_or_none(job.tracestate),
            enqueued_at_ms=job.enqueued_at_ms,
            run_at_ms=job.run_at_ms,
            leased_at_ms=_ms_or_none(job.leased_at_ms),
            lease_deadline_ms=_ms_or_none(job.lease_deadline_ms),
            worker_id=_text_or_none(job.worker_id),
            last_error=_text_or_none(job.last_error),
            errors=tuple(AttemptError(e.attempt, e.at_ms, e.error, e.error_class or None, e.error_stack or None)
                         for e in job.errors),
            dead_reason=_DEAD_REASON_NAMES.get(job.dead_reason),
            failed_at_ms=_ms_or_none(job.failed_at_ms),
            completed_at_ms=_ms_or_none(job.completed_at_ms),
            **_result_fields(job),
            progress=progress_from_proto(job.progress, job.HasField("progress")),
            expires_at_ms=_ms_or_none(job.expires_at_ms),
            cancelled_at_ms=_ms_or_none(job.cancelled_at_ms),
            cancelled_by=_text_or_none(job.cancelled_by),
            group=_text_or_none(job.group),
            timeout_ms=_ms_or_none(job.timeout_ms),
            timeout_at_ms=_ms_or_none(job.timeout_at_ms),
            debounce_key=_text_or_none(job.debounce_key),
            debounce_until_ms=_ms_or_none(job.debounce_until_ms),
            outcome_only=job.outcome_only,
            dependencies=tuple(JobLink.from_proto(link) for link in job.dependencies),
            dependents=tuple(JobLink.from_proto(link) for link in job.dependents),
            batch_id=_text_or_none(job.batch_id),
        )

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.queue}/{self.type} {self.state} attempt {self.attempt}/{self.max_attempts}>"


@dataclass(frozen=True)
class DeadLetterPage:
    """One page of a queue's dead letters."""

    jobs: Sequence[Job]
    """The dead jobs, oldest first, without payloads and error histories (use `get_job`)."""
    next_page_token: str | None
    """Pass as `page_token` for the next page; None on the last page."""
