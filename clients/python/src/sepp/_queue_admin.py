"""Queues and their dead letters: list queues with their counts; pause, resume,
purge and delete them; change their settings at run time; page through, requeue
and delete dead letters. Client holds them as `client.queues` and
`client.dlq` (composition, as `client.schedules`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence, overload

from ._arguments import checked_arguments
from ._convert import dead_reason_to_proto, queue_info_from_proto, setting_texts
from ._job_control import BulkResult, change_result, request_key_of
from .jobs import DeadLetterPage, Job
from .models import DeadReason, ErrorGroup, QueueInfo, TopErrors
from .v1 import admin_pb2

if TYPE_CHECKING:
    from ._connection import Connection


Selection = Sequence[str] | Literal["all"]
"""Which dead letters: these ids, or "all" of the queue's."""


def _selection(queue: str, selection: Selection, reason: DeadReason | None,
               error_text: str | None) -> dict[str, Any]:
    # `reason` and `error_text` narrow "all"; with ids the server refuses them (INVALID_ARGUMENT).
    narrowed = {"reason": dead_reason_to_proto(reason, "reason"), "error_text": error_text or ""}
    if selection == "all":
        return {"queue": queue, "all": True, **narrowed}
    if isinstance(selection, str):
        raise TypeError("give a list of job ids, or 'all'")
    return {"queue": queue, "job_ids": list(selection), **narrowed}



def read_call(conn: Connection, method: Any, request: Any, deadline_ms: int | None) -> Any:
    # Calls that change nothing, or whose repeat has no further effect: safe to retry.
    return conn.invoke(method, request, deadline_ms=deadline_ms, retry_safe=True)

@checked_arguments
class Queues:
    """The queue calls of a Client (`client.queues`): every queue with its counts, pause,
    resume, purge and delete, and run-time settings."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def list(self, *, deadline_ms: int | None = None) -> list[QueueInfo]:
        """Every queue with its counts by state, paused flag, oldest ready age and settings, in
        name order: follows the server's pages (at most its `max_queues` queues in all)."""
        queues: list[QueueInfo] = []
        page_token = ""
        while True:
            page, page_token = self.list_page(page_token=page_token, deadline_ms=deadline_ms)
            queues.extend(page)
            if page_token == "":
                return queues

    def list_page(
        self, *, page_size: int = 0, page_token: str = "", deadline_ms: int | None = None
    ) -> tuple[Sequence[QueueInfo], str]:
        """One page of queues in name order (`page_size` 0 means 100, at most the server's
        `max_page_size`) and the token of the next page ("" on the last)."""
        request = admin_pb2.ListQueuesRequest(page_size=page_size, page_token=page_token)
        response = read_call(self._conn, self._conn.stub.ListQueues, request, deadline_ms)
        return [queue_info_from_proto(q) for q in response.queues], response.next_page_token

    def pause(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Pauses a queue: it hands out no jobs until resumed; enqueue still works.
        A queue nobody has used yet raises SeppError `not_found` unless `allow_missing`
        creates it (paused, to fill it before any worker starts)."""
        request = admin_pb2.PauseQueueRequest(queue=queue, allow_missing=allow_missing)
        read_call(self._conn, self._conn.stub.PauseQueue, request, deadline_ms)

    def resume(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Resumes a paused queue; `not_found` for a queue nobody has used, unless `allow_missing`."""
        request = admin_pb2.ResumeQueueRequest(queue=queue, allow_missing=allow_missing)
        read_call(self._conn, self._conn.stub.ResumeQueue, request, deadline_ms)

    def delete(self, queue: str, *, deadline_ms: int | None = None) -> None:
        """Deletes a queue that holds no job in any state (`failed_precondition` while it holds any)."""
        # A repeat after an unknown outcome finds nothing (NOT_FOUND) rather than deleting anything else.
        read_call(self._conn, self._conn.stub.DeleteQueue, admin_pb2.DeleteQueueRequest(queue=queue), deadline_ms)

    @overload
    def purge(self, queue: str, *, background: Literal[False] = False, request_key: str | None = None, deadline_ms: int | None = None) -> int: ...
    @overload
    def purge(self, queue: str, *, background: Literal[True], request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def purge(self, queue: str, *, background: bool, request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult: ...

    def purge(self, queue: str, *, background: bool = False, request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult:
        """Deletes every ready and scheduled job of a queue (admin key) as one bulk operation;
        returns how many. Leased jobs finish; dead letters stay. With `background=True` it
        returns a `BulkResult` as soon as the operation has begun (`changed` 0; follow
        `operation.id` with `client.jobs.bulk_operation`)."""
        request = admin_pb2.PurgeQueueRequest(queue=queue, background=background,
                                              request_key=request_key_of(request_key))
        # A repeat carries the same request key: it answers with the purge the first one started.
        response = self._conn.invoke(self._conn.stub.PurgeQueue, request, deadline_ms=deadline_ms,
                                     retry_safe=True)
        result = change_result(int(response.deleted_count), response)
        return result if background else result.changed

    def set_settings(self, queue: str, settings: Mapping[str, str | int | float | Sequence[str]], *,
                           deadline_ms: int | None = None) -> QueueInfo:
        """Overrides settings of a queue while the server runs (admin key), by their config-file
        names with values as in the file: `{"max_attempts": 10, "backoff_base_ms": "2s"}`. They
        apply from the next lease or enqueue and survive restarts; returns the queue afterwards."""
        request = admin_pb2.SetQueueSettingsRequest(queue=queue, settings=setting_texts(settings))
        return queue_info_from_proto(read_call(self._conn, self._conn.stub.SetQueueSettings, request, deadline_ms).queue)

    def reset_settings(self, queue: str, keys: Sequence[str] | Literal["all"], *,
                             deadline_ms: int | None = None) -> QueueInfo:
        """Removes run-time overrides of a queue (these settings, or "all"): the config file's
        values apply again. Returns the queue afterwards."""
        request = admin_pb2.ResetQueueSettingsRequest(
            queue=queue, keys=[] if keys == "all" else list(keys), all=keys == "all")
        return queue_info_from_proto(read_call(self._conn, self._conn.stub.ResetQueueSettings, request, deadline_ms).queue)


@checked_arguments
class DeadLetters:
    """The dead-letter calls of a Client (`client.dlq`): page through, requeue, delete."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def list(
        self,
        queue: str,
        *,
        reason: DeadReason | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        deadline_ms: int | None = None,
    ) -> DeadLetterPage:
        """One page of a queue's dead letters, oldest first (payloads and error histories left out)."""
        request = admin_pb2.ListDeadLettersRequest(
            queue=queue, page_size=page_size or 0, page_token=page_token or "",
            reason=dead_reason_to_proto(reason, "reason"),
        )
        response = read_call(self._conn, self._conn.stub.ListDeadLetters, request, deadline_ms)
        return DeadLetterPage([Job.from_proto(j) for j in response.jobs], response.next_page_token or None)

    def all(self, queue: str, *, reason: DeadReason | None = None, page_size: int | None = None) -> Iterator[Job]:
        """Every dead letter of a queue, page by page."""
        token: str | None = None
        while True:
            page = self.list(queue, reason=reason, page_size=page_size, page_token=token)
            yield from page.jobs
            token = page.next_page_token
            if token is None:
                return

    def top_errors(self, queue: str, *, limit: int | None = None, deadline_ms: int | None = None) -> TopErrors:
        """The queue's dead letters grouped by last error — the class the worker sent and the
        first line of the message — the most jobs first (`limit` groups: default 20, at most
        100). Act on a group with `client.jobs.requeue_matching(queue, states=["dead"],
        error_group=group)` or `delete_matching`."""
        request = admin_pb2.ListTopErrorsRequest(queue=queue, limit=limit or 0)
        response = read_call(self._conn, self._conn.stub.ListTopErrors, request, deadline_ms)
        return TopErrors(
            groups=tuple(ErrorGroup(g.key.error_class, g.key.first_line, int(g.jobs), int(g.first_failed_at_ms),
                                    int(g.last_failed_at_ms)) for g in response.groups),
            group_count=int(response.group_count), scanned=int(response.scanned),
            dead_total=int(response.dead_total), complete=response.complete)

    @overload
    def requeue(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                error_text: str | None = None, background: Literal[False] = False,
                request_key: str | None = None, deadline_ms: int | None = None) -> int: ...
    @overload
    def requeue(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                error_text: str | None = None, background: Literal[True],
                request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def requeue(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                error_text: str | None = None, background: bool,
                request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult: ...

    def requeue(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                error_text: str | None = None, background: bool = False,
                request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult:
        """Makes dead letters ready again with a fresh attempt budget (these ids, or "all");
        returns how many. With "all", `reason` (only dead letters of that reason) and
        `error_text` (only those whose last error contains it, in any case) narrow it, and the
        server runs it as one bulk operation; with `background=True` too it returns a
        `BulkResult` as soon as that has begun (`changed` 0, `matched`, and the `operation` to
        follow with `client.jobs.bulk_operation`). Chosen ids change at once (then the
        `BulkResult` has `operation` None)."""
        return self._change_dead_letters("requeue", queue, selection, reason, error_text, background, request_key,
                                         deadline_ms)

    @overload
    def delete(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
               error_text: str | None = None, background: Literal[False] = False,
               request_key: str | None = None, deadline_ms: int | None = None) -> int: ...
    @overload
    def delete(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
               error_text: str | None = None, background: Literal[True],
               request_key: str | None = None, deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def delete(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
               error_text: str | None = None, background: bool,
               request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult: ...

    def delete(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
               error_text: str | None = None, background: bool = False,
               request_key: str | None = None, deadline_ms: int | None = None) -> int | BulkResult:
        """Deletes dead letters for good (these ids, or "all"; `reason`, `error_text` and
        `background` as in `requeue`), which frees their idempotency keys and cancels the jobs
        still waiting on them (`on_dependency_failure="wait"`); returns how many."""
        return self._change_dead_letters("delete", queue, selection, reason, error_text, background, request_key,
                                         deadline_ms)

    def _change_dead_letters(self, action: Literal["requeue", "delete"], queue: str, selection: Selection,
                reason: DeadReason | None, error_text: str | None, background: bool,
                request_key: str | None, deadline_ms: int | None) -> int | BulkResult:
        fields = _selection(queue, selection, reason, error_text)
        # Chosen ids change at once (no operation): the key matters only with "all".
        key = request_key_of(request_key) if selection == "all" else ""
        # Requeued or deleted jobs are no longer dead letters, so a repeat changes nothing more.
        if action == "requeue":
            request = admin_pb2.RequeueDeadLettersRequest(**fields, background=background, request_key=key)
            response = read_call(self._conn, self._conn.stub.RequeueDeadLetters, request, deadline_ms)
            result = change_result(int(response.requeued_count), response)
        else:
            delete = admin_pb2.DeleteDeadLettersRequest(**fields, background=background, request_key=key)
            answer = read_call(self._conn, self._conn.stub.DeleteDeadLetters, delete, deadline_ms)
            result = change_result(int(answer.deleted_count), answer)
        return result if background else result.changed
