"""Waiting for a job's outcome: `completed` (with its result), `dead` (with the
dead letter's error) or `cancelled`.

How: subscribe to the job's final events from the oldest the server keeps (so
an outcome that came just before the wait is found too), and once the
subscription has caught up read the job with GetJob, which answers for a job
that ended earlier and is still retained, or, for one deleted as it finished,
with the outcome the server keeps for limits.finished_outcome_ms
(`outcome_only`). Whichever tells first wins. If the
server can no longer serve the subscription's resume (it restarted), the wait
starts over the same way.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

import grpc

from .errors import SeppError, connection_closed_by_server
from .events import CaughtUp, EventStream, JobEvent
from .models import DeadReason

if TYPE_CHECKING:
    from ._connection import Connection
    from .jobs import Job

GRACE_S = 1.0
"""After GetJob says NOT_FOUND, how long to let an outcome event already on its way arrive."""


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended."""

    job_id: str
    state: Literal["completed", "dead", "cancelled"]
    at_ms: int | None
    """When it ended (acked, went dead, was cancelled), if known."""
    result: Any = None
    """`completed`: the result decoded by its content type; None without one."""
    result_data: bytes | None = None
    result_content_type: str | None = None
    error: str | None = None
    """`dead`: the last attempt's error (None when an operator dead-lettered it)."""
    dead_reason: DeadReason | None = None


def _of_event(event: JobEvent) -> JobOutcome | None:
    if event.kind == "completed":
        return JobOutcome(event.job_id, "completed", event.at_ms, event.result, event.result_data,
                          event.result_content_type)
    if event.kind == "dead_lettered":
        return JobOutcome(event.job_id, "dead", event.at_ms, error=event.error, dead_reason=event.dead_reason)
    if event.kind == "cancelled":
        return JobOutcome(event.job_id, "cancelled", event.at_ms)
    return None


def _of_job(job: Job) -> JobOutcome | None:
    if job.state == "completed":
        return JobOutcome(job.id, "completed", job.completed_at_ms, job.result, job.result_data,
                          job.result_content_type)
    if job.state == "dead":
        return JobOutcome(job.id, "dead", job.failed_at_ms, error=job.last_error, dead_reason=job.dead_reason)
    if job.state == "cancelled":
        # Kept for the queue's cancelled_retention_ms; a leased job with a cancel request is not over yet.
        return JobOutcome(job.id, "cancelled", job.cancelled_at_ms)
    return None


LOOK_MS = 1000
"""How long the look at a job when a wait times out may take before the wait fails without it."""


def _last_look(get_job: Callable[..., Job], job_id: str, timeout_ms: int | None, last_state: str | None) -> JobOutcome:
    """At the timeout, a last look at the job, not the state seen when the wait began: it may have
    moved on, or ended without this wait hearing of it (settled through another server sharing a
    PostgreSQL database: events are per server). Returns its outcome if it ended; raises
    DEADLINE_EXCEEDED saying where it is otherwise."""
    now = f"; it was {last_state} when the wait began" if last_state else ""
    try:
        job = get_job(job_id, deadline_ms=LOOK_MS)
    except SeppError as error:
        if error.grpc_code == grpc.StatusCode.NOT_FOUND:
            now = "; the server no longer has it (deleted, or ended and not kept)"
    else:
        outcome = _of_job(job)
        if outcome is not None:
            return outcome
        now = f"; it is {job.state}"
    raise SeppError(grpc.StatusCode.DEADLINE_EXCEEDED, f"job {job_id} did not finish within {timeout_ms} ms{now}")


def wait_for_job(
    conn: Connection,
    get_job: Callable[..., Job],
    job_id: str,
    timeout_ms: int | None,
    on_caught_up: Callable[[], None] | None = None,
) -> JobOutcome:
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    last_state: str | None = None

    def remaining() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    while True:
        stream = EventStream(conn, job_ids=[job_id], kinds=["completed", "dead_lettered", "cancelled"],
                             from_oldest=True)
        not_found_at: float | None = None
        try:
            while True:
                wait_s = remaining()
                if not_found_at is not None:
                    grace = max(0.0, not_found_at + GRACE_S - time.monotonic())
                    wait_s = grace if wait_s is None else min(wait_s, grace)
                item = stream.next_item(wait_s)
                if isinstance(item, JobEvent):
                    outcome = _of_event(item)
                    if outcome is not None:
                        return outcome
                elif isinstance(item, CaughtUp):
                    if on_caught_up is not None:
                        on_caught_up()
                    try:
                        job = get_job(job_id)
                    except SeppError as error:
                        if error.grpc_code == grpc.StatusCode.UNAVAILABLE or connection_closed_by_server(error):
                            # The connection went: the subscription resumes over a new one and,
                            # once caught up again, this looks again.
                            continue
                        if error.grpc_code != grpc.StatusCode.NOT_FOUND:
                            raise
                        # An outcome event committed before this answer is already on the stream.
                        not_found_at = time.monotonic()
                        continue
                    last_state = job.state
                    outcome = _of_job(job)
                    if outcome is not None:
                        return outcome
                elif not_found_at is not None and time.monotonic() >= not_found_at + GRACE_S:
                    raise SeppError(
                        grpc.StatusCode.NOT_FOUND,
                        f"job {job_id} was not found: no such job, or it ended and is no longer kept "
                        "(completed jobs are kept only for their queue's completed_retention_ms, default 0; "
                        "dead letters for dead_retention_ms; the outcome of a job deleted as it finished for "
                        "limits.finished_outcome_ms, default 5 minutes, not across a restart), and its outcome "
                        "is no longer in the event backlog",
                    )
                else:
                    return _last_look(get_job, job_id, timeout_ms, last_state)
        except SeppError as error:
            # The resume cannot be served (restart, backlog moved on): start over from what is kept.
            if error.grpc_code != grpc.StatusCode.OUT_OF_RANGE:
                raise
        except StopIteration:
            raise SeppError(grpc.StatusCode.CANCELLED, f"stopped waiting for job {job_id}") from None
        finally:
            stream.close()


def enqueue_then_wait(
    conn: Connection,
    get_job: Callable[..., Job],
    enqueue: Callable[[], str],
    timeout_ms: int | None,
) -> JobOutcome:
    """Runs `enqueue` with the server's event backlog recording, then waits for the job it made.
    The server records events only while someone subscribes, so a job that finishes between its
    enqueue and the wait's subscription would otherwise leave no trace on a queue that does not
    retain completed jobs: a subscription that matches nothing is held from before the enqueue
    until the wait has caught up."""
    keeper = EventStream(conn, job_ids=["sepp-client-backlog-keeper"], reconnect=False)
    try:
        # Caught up (recording on), or failed (events turned off: the wait still reads GetJob).
        keeper.caught_up.wait(conn.default_deadline_ms / 1000)
        job_id = enqueue()
        return wait_for_job(conn, get_job, job_id, timeout_ms, keeper.close)
    finally:
        keeper.close()
