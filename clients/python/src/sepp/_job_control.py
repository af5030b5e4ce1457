"""Job control: cancel jobs (waiting or running), change waiting ones, purge a
queue, and read the audit log. Client holds them as `client.jobs` and
`client.audit` (composition, as `client.schedules`); all changes need an admin API key, and each change
is written to the audit log with the key's name in the same transaction."""
from __future__ import annotations

import json as _json
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Sequence, overload

import grpc

from ._arguments import checked_arguments
from ._convert import dead_reason_to_proto, invalid, time_ms
from .errors import SeppError
from .jobs import Job, job_state_name
from .models import DeadReason, ErrorGroup, JobState, TimeInput
from .v1 import admin_pb2, bulk_operation_pb2, bulk_pb2, job_pb2

if TYPE_CHECKING:
    from ._connection import Connection

_STATE_TO_PROTO: dict[str, job_pb2.JobState] = {
    "scheduled": job_pb2.JOB_STATE_SCHEDULED,
    "ready": job_pb2.JOB_STATE_READY,
    "leased": job_pb2.JOB_STATE_LEASED,
    "completed": job_pb2.JOB_STATE_COMPLETED,
    "dead": job_pb2.JOB_STATE_DEAD,
    "cancelled": job_pb2.JOB_STATE_CANCELLED,
}


@dataclass(frozen=True)
class CancelResult:
    """What a cancel of one job did."""

    previous_state: JobState
    """The state the job was in."""
    state: JobState
    """`cancelled`, or `leased` while the worker holding it has not stopped yet (it has been told)."""


@dataclass(frozen=True)
class CancelJobsResult:
    """What a bulk cancel did (or, with `dry_run`, would do)."""

    cancelled: int
    """Scheduled and ready jobs now cancelled."""
    cancel_requested: int
    """Leased jobs whose workers were told to stop (each ends cancelled)."""
    matched: int
    """With `dry_run`: the jobs it would change now; otherwise the jobs that matched when the
    operation began (what it changed, unless jobs ended in between)."""
    matched_at_least: bool = False
    """True when `matched` is a lower bound (the server's count stopped at its budget)."""
    operation: BulkOperation | None = None
    """The bulk operation that cancelled them (`matched`, `changed`, `examined`, … as it ran;
    with `background`, as it began: then `cancelled` and `cancel_requested` are 0); None for a
    dry run."""
    changed: int = 0
    """Jobs changed: `cancelled` plus `cancel_requested` (0 for a dry run, or while a
    background operation runs), as `BulkResult.changed`."""


_OPERATION_STATES: dict[int, str] = {
    bulk_operation_pb2.BULK_OPERATION_STATE_RUNNING: "running",
    bulk_operation_pb2.BULK_OPERATION_STATE_DONE: "done",
    bulk_operation_pb2.BULK_OPERATION_STATE_CANCELLED: "cancelled",
    bulk_operation_pb2.BULK_OPERATION_STATE_FAILED: "failed",
}


@dataclass(frozen=True)
class BulkOperation:
    """One server-side bulk operation and its progress (the server runs it in bounded
    slices while it keeps serving, keeps it in memory, and audits it once)."""

    id: str
    action: str
    """`cancel`, `update`, `requeue` or `delete`."""
    state: str
    """`running`, `done`, `cancelled` (stopped) or `failed`."""
    details: dict[str, Any]
    """The checked filter and changes, as the audit entry records them."""
    matched: int
    """Jobs that matched when it began (`matched_at_least`: at least that many)."""
    matched_at_least: bool
    changed: int
    """Jobs changed so far (for a cancel: cancelled plus cancel requests)."""
    slices: int
    """Transactions written so far."""
    started_at_ms: int
    finished_at_ms: int | None
    """None while running."""
    error: str | None
    """Why it failed, else None."""
    cancel_requested: int = 0
    """A cancel's leased jobs whose workers were told to stop."""
    examined: int = 0
    """Index entries examined so far."""
    actor: str = ""
    """Who started it, as the audit log names actors (`key:NAME`, an admin UI user)."""

    @staticmethod
    def from_proto(op: bulk_operation_pb2.BulkOperation) -> BulkOperation:
        return BulkOperation(op.id, op.action, _OPERATION_STATES.get(op.state, "failed"), _details(op.details_json),
                             int(op.matched_count), op.matched_at_least, int(op.changed_count), int(op.slices),
                             int(op.started_at_ms), int(op.finished_at_ms) or None, op.error or None,
                             int(op.cancel_requested_count), int(op.examined_count), op.actor)


@dataclass(frozen=True)
class BulkResult:
    """What a bulk call did, or (with `dry_run`) would match."""

    changed: int
    """Jobs changed (0 for a dry run, or while a background operation runs)."""
    matched: int
    """With `dry_run`: the jobs that match now; otherwise what matched when it began."""
    matched_at_least: bool
    """True: `matched` is a lower bound (the server's count stopped at its budget)."""
    operation: BulkOperation | None
    """The operation (None for a dry run)."""


@dataclass(frozen=True)
class AuditEntry:
    """One change an operator made, from the audit log."""

    id: int
    """Increases with every entry."""
    at_ms: int
    """When, in ms since the Unix epoch."""
    actor: str
    """Who: `key:NAME` for an API key, an admin UI user, or `anonymous`."""
    action: str
    """What, e.g. `job.cancel`, `queue.purge`."""
    target: str
    """On what, e.g. `job:<id>`, `queue:emails`."""
    details: dict[str, Any]
    """Parameters and outcome (counts, previous state, `via`: admin, grpc or cli)."""


@dataclass(frozen=True)
class AuditPage:
    """One page of the audit log, newest first."""

    entries: list[AuditEntry]
    next_page_token: str | None
    """Pass as `page_token` for the next page; None on the last page."""


BulkAction = Literal["cancel", "update", "requeue", "delete"]
"""What a bulk operation does to each job it matches."""


@dataclass(frozen=True)
class MatchCount:
    """How many jobs a bulk action would apply to now (`client.jobs.count_matching`)."""

    matched: int
    matched_at_least: bool = False
    """True: `matched` is a lower bound (the server's count stopped at its budget)."""


def _bulk_filter(queue: str | None, all_queues: bool, states: Sequence[JobState] | None, type: str | None,
                 type_prefix: str | None, group: str | None, error_text: str | None,
                 metadata: tuple[str, str] | None, enqueued_from: TimeInput | None,
                 enqueued_before: TimeInput | None, dead_reason: DeadReason | None, retries_only: bool,
                 error_group: ErrorGroup | tuple[str, str] | None) -> admin_pb2.JobFilter:
    """The protocol's filter; raises SeppError `invalid_argument` for what the server would refuse
    anyway (no queue, an unknown state or dead reason), and TypeError for a value of the wrong kind."""
    if (queue is None) == (not all_queues):
        raise invalid("give a queue or all_queues=True (one of them)")
    if isinstance(states, str):
        raise invalid("states: give a list of states, not one string")
    unknown = [s for s in states or () if s not in _STATE_TO_PROTO]
    if unknown:
        raise invalid(f"states: unknown state {unknown[0]!r} (use {', '.join(_STATE_TO_PROTO)})")
    f = admin_pb2.JobFilter(queue=queue or "", all_queues=all_queues, type=type or "",
                            type_prefix=type_prefix or "", states=[_STATE_TO_PROTO[s] for s in states or ()],
                            group=group or "", error_text=error_text or "",
                            dead_reason=dead_reason_to_proto(dead_reason, "dead_reason"),
                            retries_only=retries_only)
    if metadata is not None:
        if not isinstance(metadata, (tuple, list)) or len(metadata) != 2:
            raise TypeError("metadata: give a (key, value) pair")
        f.metadata_key, f.metadata_value = metadata
    if enqueued_from is not None:
        f.enqueued_from_ms = time_ms(enqueued_from, "enqueued_from")
    if enqueued_before is not None:
        f.enqueued_before_ms = time_ms(enqueued_before, "enqueued_before")
    if error_group is not None:
        if isinstance(error_group, ErrorGroup):
            error_class, first_line = error_group.error_class, error_group.first_line
        elif isinstance(error_group, (tuple, list)) and len(error_group) == 2:
            error_class, first_line = error_group
        else:
            raise TypeError("error_group: give a sepp.ErrorGroup or an (error_class, first_line) pair")
        f.error_group.error_class = error_class
        f.error_group.first_line = first_line
        # An empty key is a group too (no class, no message): mark the field as given.
        f.error_group.SetInParent()
    return f


def request_key_of(request_key: str | None) -> str:
    """The request key of a call that can start a bulk operation: the caller's, or 16 random
    bytes (base64url). Made once per call, so the call's retries send the same and the server
    answers them with the operation the first one started (none is started twice)."""
    return secrets.token_urlsafe(16) if request_key is None else request_key


def _bulk_result(changed: int, response: Any, dry_run: bool) -> BulkResult:
    if dry_run:
        return BulkResult(0, int(response.matched_count), response.matched_at_least, None)
    return change_result(changed, response)


def change_result(changed: int, response: Any) -> BulkResult:
    """The answer of a change that has no dry run (a purge, dead letters): its count, and its
    operation when it ran as one."""
    op = BulkOperation.from_proto(response.operation) if response.HasField("operation") else None
    return BulkResult(changed, op.matched if op else changed, op.matched_at_least if op else False, op)


# Each action's call: the stub method's name, its request type, and the answer's count of jobs changed.
_ACTION_CALLS: dict[str, tuple[str, Any, Callable[[Any], int]]] = {
    "cancel": ("CancelJobs", admin_pb2.CancelJobsRequest,
               lambda r: int(r.cancelled_count) + int(r.cancel_requested_count)),
    "update": ("UpdateJobs", admin_pb2.UpdateJobsRequest, lambda r: int(r.updated_count)),
    "requeue": ("RequeueJobs", bulk_pb2.RequeueJobsRequest, lambda r: int(r.requeued_count)),
    "delete": ("DeleteJobs", bulk_pb2.DeleteJobsRequest, lambda r: int(r.deleted_count)),
}


def _action_changes(action: str, priority: int | None, run_now: bool, counting: bool) -> admin_pb2.JobChanges | None:
    """An update's changes (count_matching, start_bulk); None for the other actions."""
    if action not in _ACTION_CALLS:
        raise SeppError(grpc.StatusCode.INVALID_ARGUMENT,
                        f"action: {action!r} is not a bulk action (use {', '.join(_ACTION_CALLS)})")
    if action != "update":
        if priority is not None or run_now:
            raise SeppError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"priority and run_now are changes of an update, not of a {action}")
        return None
    # A count needs no change; without one it counts what run_now would change (as the TypeScript SDK).
    return _changes(priority, None, None, run_now or (counting and priority is None))


def _changes(priority: int | None, run_at: TimeInput | None, delay_ms: int | None,
             run_now: bool, group: str | None = None) -> admin_pb2.JobChanges:
    if sum((run_at is not None, delay_ms is not None, run_now)) > 1:
        raise SeppError(grpc.StatusCode.INVALID_ARGUMENT, "give one of run_at, delay_ms and run_now")
    changes = admin_pb2.JobChanges()
    if priority is not None:
        changes.priority = priority
    if run_now:
        changes.run_now = True
    elif run_at is not None:
        changes.run_at_ms = time_ms(run_at, "run_at")
    elif delay_ms is not None:
        changes.delay_ms = round(delay_ms)
    if group is not None:
        changes.group = group  # "" takes the job out of its group
    return changes


def _details(text: str) -> dict[str, Any]:
    try:
        value = _json.loads(text) if text else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


@checked_arguments
class Jobs:
    """The calls on jobs already enqueued (`client.jobs`): read one; cancel or change (admin
    key) one, or every job of a queue that a filter matches."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def get(self, id: str, *, deadline_ms: int | None = None) -> Job:
        """Reads a job: state, attempts, times, payload, last error and error history.
        Raises SeppError with code `not_found` for an unknown (or acked and deleted) job."""
        response = self._conn.invoke(self._conn.stub.GetJob, admin_pb2.GetJobRequest(job_id=id),
                                     deadline_ms=deadline_ms, retry_safe=True)
        return Job.from_proto(response.job)

    def cancel(self, id: str, *, deadline_ms: int | None = None) -> CancelResult:
        """Cancels a job that has not finished (admin key). A scheduled or ready job is
        `cancelled` at once; for a leased one the worker is told to stop (`state` stays
        `leased` until it does, or its lease ends) and the job ends `cancelled`, never retried.
        Raises SeppError `failed_precondition` for a dead or completed job. Repeating it is
        harmless."""
        response = self._conn.invoke(self._conn.stub.CancelJob, admin_pb2.CancelJobRequest(job_id=id),
                                     deadline_ms=deadline_ms, retry_safe=True)
        return CancelResult(job_state_name(response.previous_state), job_state_name(response.state))

    def cancel_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        dry_run: bool = False, background: bool = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> CancelJobsResult:
        """Cancels every job that matches (default states: scheduled, ready and leased), as
        `cancel` does one (admin key), as one server-side bulk operation. The filter is
        `requeue_matching`'s. With `dry_run` nothing changes and `matched` counts the jobs it
        would change; with `background` it returns once the operation has begun (follow it with
        `bulk_operation`)."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        changed, response = self._bulk("cancel", f, None, dry_run, background, request_key, deadline_ms)
        result = _bulk_result(changed, response, dry_run)
        return CancelJobsResult(int(response.cancelled_count), int(response.cancel_requested_count), result.matched,
                                result.matched_at_least, result.operation, result.changed)

    def update(self, id: str, *, priority: int | None = None, run_at: TimeInput | None = None,
                   delay_ms: int | None = None, run_now: bool = False, group: str | None = None,
                   deadline_ms: int | None = None) -> Job:
        """Changes a scheduled or ready job (admin key): its `priority` (0 to 9), when it runs
        (`run_at`, `delay_ms`), `run_now` (a scheduled or retrying job becomes ready), or its
        `group` (flow control counts it there from now on; `""` takes it out of its group,
        None leaves it); give at least one change. Returns the job as it is now. A leased job is
        refused with SeppError `failed_precondition`; a finished one too."""
        changes = _changes(priority, run_at, delay_ms, run_now, group)
        request = admin_pb2.UpdateJobRequest(job_id=id, changes=changes)
        # A delay counts from the call, so a repeat could move the job again: not retried.
        response = self._conn.invoke(self._conn.stub.UpdateJob, request, deadline_ms=deadline_ms,
                                     retry_safe=delay_ms is None)
        return Job.from_proto(response.job)

    @overload
    def update_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        priority: int | None = None, run_now: bool = False,
                        dry_run: Literal[False] = False, background: Literal[False] = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> int: ...
    @overload
    def update_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        priority: int | None = None, run_now: bool = False,
                        dry_run: Literal[True], background: bool = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def update_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        priority: int | None = None, run_now: bool = False,
                        dry_run: bool = False, background: Literal[True],
                        request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def update_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        priority: int | None = None, run_now: bool = False,
                        dry_run: bool = False, background: bool = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult: ...

    def update_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        priority: int | None = None, run_now: bool = False,
                        dry_run: bool = False, background: bool = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult:
        """Runs now (`run_now`) or sets the `priority` of every waiting job that matches
        (states: scheduled, ready) (admin key), as one server-side bulk operation; returns how
        many changed. The filter is `requeue_matching`'s. With `dry_run=True` nothing changes
        and it returns a `BulkResult` whose `matched` counts the jobs it would change; with
        `background=True`, a `BulkResult` as soon as the operation has begun (`changed` 0:
        follow `operation.id` with `bulk_operation`). Without either, the count, as before
        they existed."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        changes = _changes(priority, None, None, run_now)
        result = _bulk_result(*self._bulk("update", f, changes, dry_run, background, request_key, deadline_ms),
                              dry_run)
        return result if dry_run or background else result.changed

    def requeue_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                         dry_run: bool = False, background: bool = False,
                         request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult:
        """Requeues every finished job that matches — dead, completed or cancelled (`states`
        narrows it) — ready now with a fresh attempt budget (admin key), in `queue` or in every
        queue (`all_queues`), as one server-side bulk operation. `type_prefix` matches the start
        of the type (not with `type`); `error_text` matches the last error in any case;
        `metadata` is a (key, value) pair; `enqueued_from` and `enqueued_before` bound when the
        job was enqueued (a datetime or ms since the epoch); `dead_reason` keeps dead letters of
        that reason only; `retries_only` keeps scheduled jobs waiting for a retry only;
        `error_group` is a group of `client.dlq.top_errors` (or a (class, first line) pair).
        With `dry_run` it only counts; with `background` it returns once the operation has
        begun (follow it with `bulk_operation`)."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        return _bulk_result(*self._bulk("requeue", f, None, dry_run, background, request_key, deadline_ms),
                            dry_run)

    def delete_matching(self, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                        dry_run: bool = False, background: bool = False,
                        request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult:
        """Deletes every job that matches and is not running (admin key), as one bulk
        operation; the filter, `dry_run` and `background` as in `requeue_matching`."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        return _bulk_result(*self._bulk("delete", f, None, dry_run, background, request_key, deadline_ms),
                            dry_run)

    def count_matching(self, action: BulkAction, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                       priority: int | None = None, run_now: bool = False,
                       deadline_ms: int | None = None) -> MatchCount:
        """How many jobs a bulk `action` (`cancel`, `update`, `requeue` or `delete`) would apply
        to now, changing nothing: exact, or at least `matched` when the server's count stopped at
        its budget. The filter is `requeue_matching`'s; for an update, `priority` and `run_now`
        as in `update_matching` (without either it counts what `run_now` would change: the
        scheduled jobs)."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        _, response = self._bulk(action, f, _action_changes(action, priority, run_now, True), True, False,
                                 None, deadline_ms)
        return MatchCount(int(response.matched_count), response.matched_at_least)

    def start_bulk(self, action: BulkAction, queue: str | None = None, *, all_queues: bool = False,
                        states: Sequence[JobState] | None = None, type: str | None = None,
                        type_prefix: str | None = None, group: str | None = None, error_text: str | None = None,
                        metadata: tuple[str, str] | None = None, enqueued_from: TimeInput | None = None,
                        enqueued_before: TimeInput | None = None, dead_reason: DeadReason | None = None,
                        retries_only: bool = False, error_group: ErrorGroup | tuple[str, str] | None = None,
                   priority: int | None = None, run_now: bool = False,
                   request_key: str | None = None, deadline_ms: int | None = None) -> BulkOperation:
        """Starts a bulk `action` (`cancel`, `update`, `requeue` or `delete`) on every job that
        matches and returns the operation as soon as it has begun (admin key); follow it with
        `bulk_operation`, stop it with `stop_bulk_operation`. The filter is `requeue_matching`'s;
        for an update give `priority`, `run_now` or both. `request_key` (as on every call that
        can start one; default: random per call, sent on its retries) makes a repeat answer with
        the operation the first call started instead of starting another."""
        f = _bulk_filter(queue, all_queues, states, type, type_prefix, group, error_text, metadata, enqueued_from,
                         enqueued_before, dead_reason, retries_only, error_group)
        _, response = self._bulk(action, f, _action_changes(action, priority, run_now, False), False, True,
                                 request_key, deadline_ms)
        if not response.HasField("operation"):
            raise SeppError(grpc.StatusCode.INTERNAL, "the server sent no operation")
        return BulkOperation.from_proto(response.operation)

    def bulk_operation(self, id: str, *, deadline_ms: int | None = None) -> BulkOperation:
        """A bulk operation's progress (admin key); SeppError `not_found` once no longer kept."""
        response = self._conn.invoke(self._conn.stub.GetBulkOperation, bulk_pb2.GetBulkOperationRequest(id=id),
                                     deadline_ms=deadline_ms, retry_safe=True)
        return BulkOperation.from_proto(response.operation)

    def bulk_operations(self, *, deadline_ms: int | None = None) -> list[BulkOperation]:
        """The bulk operations running now and the last ones finished (admin key)."""
        response = self._conn.invoke(self._conn.stub.ListBulkOperations, bulk_pb2.ListBulkOperationsRequest(),
                                     deadline_ms=deadline_ms, retry_safe=True)
        return [BulkOperation.from_proto(op) for op in response.operations]

    def stop_bulk_operation(self, id: str, *, deadline_ms: int | None = None) -> BulkOperation:
        """Stops a running bulk operation after its current slice; returns it once stopped."""
        response = self._conn.invoke(self._conn.stub.CancelBulkOperation,
                                     bulk_pb2.CancelBulkOperationRequest(id=id),
                                     deadline_ms=deadline_ms, retry_safe=True)
        return BulkOperation.from_proto(response.operation)


    def _bulk(self, action: str, f: admin_pb2.JobFilter, changes: admin_pb2.JobChanges | None, dry_run: bool,
              background: bool, request_key: str | None, deadline_ms: int | None) -> tuple[int, Any]:
        """One bulk call; returns the jobs it changed and the server's answer."""
        method, request_type, changed = _ACTION_CALLS[action]
        # A dry run starts nothing, so it needs no key.
        key = "" if dry_run else request_key_of(request_key)
        request = request_type(filter=f, dry_run=dry_run, background=background, request_key=key)
        if changes is not None:
            request.changes.CopyFrom(changes)
        # A dry run repeats harmlessly; a change carries its request key, so a repeat answers with
        # the operation the first one started: both are retried.
        response = self._conn.invoke(getattr(self._conn.stub, method), request, deadline_ms=deadline_ms,
                                     retry_safe=True)
        return changed(response), response


@checked_arguments
class AuditLog:
    """The audit log (`client.audit`, admin key): every change made over gRPC, the CLI or the
    admin UI, newest first."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def list(self, *, actor: str | None = None, action: str | None = None, target: str | None = None,
                           page_size: int | None = None, page_token: str | None = None,
                           deadline_ms: int | None = None) -> AuditPage:
        """One page of the audit log, newest first (admin key): every change made over gRPC, the
        CLI or the admin UI, optionally only this `actor`, `action` or `target`."""
        request = admin_pb2.ListAuditEntriesRequest(actor=actor or "", action=action or "", target=target or "",
                                                    page_size=page_size or 0, page_token=page_token or "")
        response = self._conn.invoke(self._conn.stub.ListAuditEntries, request, deadline_ms=deadline_ms,
                                     retry_safe=True)
        entries = [AuditEntry(int(e.id), int(e.at_ms), e.actor, e.action, e.target, _details(e.details_json))
                   for e in response.entries]
        return AuditPage(entries, response.next_page_token or None)

    def entries(self, *, actor: str | None = None, action: str | None = None, target: str | None = None,
                      page_size: int | None = None) -> Iterator[AuditEntry]:
        """Every matching entry of the audit log, newest first, page by page."""
        token: str | None = None
        while True:
            page = self.list(actor=actor, action=action, target=target, page_size=page_size,
                                           page_token=token)
            yield from page.entries
            token = page.next_page_token
            if token is None:
                return
