"""Inspection and management: read jobs, queues, workers and the server; pause,
resume and delete queues; page through, requeue and delete dead letters; change
a queue's settings at run time and reload the config file. Client's methods of
the same names come from here (Client inherits QueueAdmin)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

from ._convert import (
    queue_info_from_proto,
    reload_report_from_proto,
    server_info_from_proto,
    setting_texts,
    worker_info_from_proto,
)
from .jobs import DEAD_REASON_TO_PROTO, DeadLetterPage, Job
from .models import DeadReason, QueueInfo, ReloadReport, ServerInfo, WorkerInfo
from .v1 import admin_pb2, job_pb2, workers_pb2

if TYPE_CHECKING:
    from ._connection import Connection


def _selection(queue: str, selection: Sequence[str] | Literal["all"]) -> dict[str, Any]:
    if selection == "all":
        return {"queue": queue, "all": True}
    if isinstance(selection, str):
        raise TypeError("give a list of job ids, or 'all'")
    return {"queue": queue, "job_ids": list(selection)}


class QueueAdmin:
    """Client's inspection and management calls (see the module's docstring)."""

    _conn: Connection

    def _read(self, method: Any, request: Any, deadline_ms: int | None) -> Any:
        # Calls that change nothing, or whose repeat has no further effect: safe to retry.
        return self._conn.invoke(method, request, deadline_ms=deadline_ms, retry_safe=True)

    def get_job(self, id: str, *, deadline_ms: int | None = None) -> Job:
        """Reads a job: state, attempts, times, payload, last error and error history.
        Raises SeppError with code `not_found` for an unknown (or acked and deleted) job."""
        response = self._read(self._conn.stub.GetJob, admin_pb2.GetJobRequest(job_id=id), deadline_ms)
        return Job.from_proto(response.job)

    def list_queues(self, *, deadline_ms: int | None = None) -> list[QueueInfo]:
        """Every queue with its counts by state, paused flag, oldest ready age and settings."""
        response = self._read(self._conn.stub.ListQueues, admin_pb2.ListQueuesRequest(), deadline_ms)
        return [queue_info_from_proto(q) for q in response.queues]

    def list_workers(self, *, deadline_ms: int | None = None) -> list[WorkerInfo]:
        """The workers connected now: id, address, transport, queues, when last seen, leases held."""
        response = self._read(self._conn.stub.ListWorkers, workers_pb2.ListWorkersRequest(), deadline_ms)
        return [worker_info_from_proto(w) for w in response.workers]

    def pause_queue(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Pauses a queue: it hands out no jobs until resumed; enqueue still works.
        A queue nobody has used yet raises SeppError `not_found` unless `allow_missing`
        creates it (paused, to fill it before any worker starts)."""
        request = admin_pb2.PauseQueueRequest(queue=queue, allow_missing=allow_missing)
        self._read(self._conn.stub.PauseQueue, request, deadline_ms)

    def resume_queue(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Resumes a paused queue; `not_found` for a queue nobody has used, unless `allow_missing`."""
        request = admin_pb2.ResumeQueueRequest(queue=queue, allow_missing=allow_missing)
        self._read(self._conn.stub.ResumeQueue, request, deadline_ms)

    def delete_queue(self, queue: str, *, deadline_ms: int | None = None) -> None:
        """Deletes a queue that holds no job in any state (`failed_precondition` while it holds any)."""
        # A repeat after an unknown outcome finds nothing (NOT_FOUND) rather than deleting anything else.
        self._read(self._conn.stub.DeleteQueue, admin_pb2.DeleteQueueRequest(queue=queue), deadline_ms)

    def list_dead_letters(
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
            reason=DEAD_REASON_TO_PROTO[reason] if reason is not None else job_pb2.DEAD_REASON_UNSPECIFIED,
        )
        response = self._read(self._conn.stub.ListDeadLetters, request, deadline_ms)
        return DeadLetterPage([Job.from_proto(j) for j in response.jobs], response.next_page_token or None)

    def dead_letters(self, queue: str, *, reason: DeadReason | None = None, page_size: int | None = None) -> Iterator[Job]:
        """Every dead letter of a queue, page by page."""
        token: str | None = None
        while True:
            page = self.list_dead_letters(queue, reason=reason, page_size=page_size, page_token=token)
            yield from page.jobs
            token = page.next_page_token
            if token is None:
                return

    def requeue_dead_letters(self, queue: str, selection: Sequence[str] | Literal["all"], *,
                             deadline_ms: int | None = None) -> int:
        """Makes dead letters ready again with a fresh attempt budget (these ids, or "all");
        returns how many."""
        request = admin_pb2.RequeueDeadLettersRequest(**_selection(queue, selection))
        # Requeued jobs are no longer dead letters, so a repeat requeues nothing more.
        return int(self._read(self._conn.stub.RequeueDeadLetters, request, deadline_ms).requeued_count)

    def delete_dead_letters(self, queue: str, selection: Sequence[str] | Literal["all"], *,
                            deadline_ms: int | None = None) -> int:
        """Deletes dead letters for good (these ids, or "all"); returns how many."""
        request = admin_pb2.DeleteDeadLettersRequest(**_selection(queue, selection))
        return int(self._read(self._conn.stub.DeleteDeadLetters, request, deadline_ms).deleted_count)

    def get_server_info(self, *, deadline_ms: int | None = None) -> ServerInfo:
        """The server's version, durability mode, clock and every effective limit."""
        response = self._read(self._conn.stub.GetServerInfo, admin_pb2.GetServerInfoRequest(), deadline_ms)
        return server_info_from_proto(response)

    def set_queue_settings(self, queue: str, settings: Mapping[str, str | int | float | Sequence[str]], *,
                           deadline_ms: int | None = None) -> QueueInfo:
        """Overrides settings of a queue while the server runs (admin key), by their config-file
        names with values as in the file: `{"max_attempts": 10, "backoff_base_ms": "2s"}`. They
        apply from the next lease or enqueue and survive restarts; returns the queue afterwards."""
        request = admin_pb2.SetQueueSettingsRequest(queue=queue, settings=setting_texts(settings))
        return queue_info_from_proto(self._read(self._conn.stub.SetQueueSettings, request, deadline_ms).queue)

    def reset_queue_settings(self, queue: str, keys: Sequence[str] | Literal["all"], *,
                             deadline_ms: int | None = None) -> QueueInfo:
        """Removes run-time overrides of a queue (these settings, or "all"): the config file's
        values apply again. Returns the queue afterwards."""
        request = admin_pb2.ResetQueueSettingsRequest(
            queue=queue, keys=[] if keys == "all" else list(keys), all=keys == "all")
        return queue_info_from_proto(self._read(self._conn.stub.ResetQueueSettings, request, deadline_ms).queue)

    def reload_config(
        self,
        *,
        dry_run: bool = False,
        allow_security_downgrade: bool = False,
        deadline_ms: int | None = None,
    ) -> ReloadReport:
        """Makes the server read its config file again, as SIGHUP does (admin key); with
        `dry_run`, only reports what would change. A file that lowers security (no API
        keys, admin users, TLS or /metrics token where the running configuration has
        them) is refused unless `allow_security_downgrade` is set."""
        request = admin_pb2.ReloadConfigRequest(
            dry_run=dry_run, allow_security_downgrade=allow_security_downgrade
        )
        return reload_report_from_proto(self._read(self._conn.stub.ReloadConfig, request, deadline_ms))
