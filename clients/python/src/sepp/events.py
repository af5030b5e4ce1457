"""Job events from the server's Events stream, as an iterator that resumes by
itself: after a disconnect (UNAVAILABLE) it subscribes again from the last
event it saw, so no event is missed or repeated while the server still keeps
it. A resume the server can no longer serve (the backlog moved on, or the
server restarted) ends the iteration with a SeppError whose code is
`out_of_range`: read the state you need with `get_job` and subscribe again.

A reader thread takes messages from the stream into a bounded queue; when the
application does not keep up, the thread stops reading (the server then holds
at most its per-subscriber bound and cuts a subscriber that falls behind its
backlog off with `resource_exhausted`).
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Literal, Sequence

import grpc

from ._connection import backoff_delay_ms
from .errors import SeppError, closed_error, connection_closed_by_server, to_sepp_error
from .jobs import job_state_name
from .models import DeadReason, JobState
from .results import JobProgress, decode_result, progress_from_proto
from .workflows import Batch
from .v1 import events_pb2, job_pb2

if TYPE_CHECKING:
    from ._connection import Connection

JobEventKind = Literal[
    "enqueued", "leased", "progress", "completed", "retry_scheduled", "dead_lettered", "cancelled", "released",
    "batch_ended", "batch_first_death", "lease_undone",
]
"""What happened to a job."""

_KIND_TO_PROTO: dict[JobEventKind, events_pb2.JobEventKind] = {
    "enqueued": events_pb2.JOB_EVENT_KIND_ENQUEUED,
    "leased": events_pb2.JOB_EVENT_KIND_LEASED,
    "progress": events_pb2.JOB_EVENT_KIND_PROGRESS,
    "completed": events_pb2.JOB_EVENT_KIND_COMPLETED,
    "retry_scheduled": events_pb2.JOB_EVENT_KIND_RETRY_SCHEDULED,
    "dead_lettered": events_pb2.JOB_EVENT_KIND_DEAD_LETTERED,
    "cancelled": events_pb2.JOB_EVENT_KIND_CANCELLED,
    "released": events_pb2.JOB_EVENT_KIND_RELEASED,
    "batch_ended": events_pb2.JOB_EVENT_KIND_BATCH_ENDED,
    "batch_first_death": events_pb2.JOB_EVENT_KIND_BATCH_FIRST_DEATH,
    "lease_undone": events_pb2.JOB_EVENT_KIND_LEASE_UNDONE,
}
_KIND_NAMES: dict[int, JobEventKind] = {value: name for name, value in _KIND_TO_PROTO.items()}
_DEAD_REASONS: dict[int, DeadReason] = {
    job_pb2.DEAD_REASON_ATTEMPTS_EXHAUSTED: "attempts_exhausted",
    job_pb2.DEAD_REASON_LEASE_EXPIRED: "lease_expired",
    job_pb2.DEAD_REASON_DEAD_LETTERED: "dead_lettered",
    job_pb2.DEAD_REASON_EXPIRED: "expired",
    job_pb2.DEAD_REASON_TIMEOUT: "timeout",
}

MAX_BUFFERED_MESSAGES = 256
"""Messages read from the stream and not yet taken by the application, before it stops reading."""


@dataclass(frozen=True)
class JobEvent:
    """One thing that happened to one job (events.proto says which fields each kind sets)."""

    sequence: int
    """Position in the server run's event sequence (commit order)."""
    kind: JobEventKind
    at_ms: int
    job_id: str
    queue: str
    type: str
    attempt: int
    """The job's attempt: 0 when enqueued, the lease's from `leased` on."""
    state: JobState | None
    """`enqueued`, `retry_scheduled`, `released`: `ready` or `scheduled`; `lease_undone`: `ready`
    (a lease whose answer never reached a worker, undone: `attempt` is that lease's)."""
    run_at_ms: int | None
    lease_deadline_ms: int | None
    worker_id: str | None
    progress: JobProgress | None
    result: Any
    """`completed`: the result decoded by its content type; None without one."""
    result_data: bytes | None
    result_content_type: str | None
    retained: bool
    """`completed`: whether `get_job` still finds the job (its queue retains completed jobs)."""
    error: str | None
    dead_reason: DeadReason | None
    previous_state: JobState | None
    """`cancelled`: the state it was removed from."""
    batch: Batch | None = None
    """`batch_ended`: the batch as it ended; `batch_first_death`: the batch when its first member died
    (`first_dead_id`); for both, `job_id` is the batch's id."""
    priority: int | None = None
    """`enqueued`: the job's priority, 0 to 9 (9 first); None for the other kinds."""


def _state(value: int) -> JobState | None:
    return None if value == job_pb2.JOB_STATE_UNSPECIFIED else job_state_name(value)


def event_from_proto(e: events_pb2.JobEvent) -> JobEvent:
    has_result = e.HasField("result")
    content_type = (e.result.content_type or "application/octet-stream") if has_result else None
    return JobEvent(
        sequence=e.sequence,
        kind=_KIND_NAMES[e.kind],
        at_ms=e.at_ms,
        job_id=e.job_id,
        queue=e.queue,
        type=e.type,
        attempt=e.attempt,
        state=_state(e.state),
        run_at_ms=e.run_at_ms or None,
        lease_deadline_ms=e.lease_deadline_ms or None,
        worker_id=e.worker_id or None,
        progress=progress_from_proto(e.progress, e.HasField("progress")),
        result=decode_result(e.result.data, content_type) if content_type is not None else None,
        result_data=e.result.data if has_result else None,
        result_content_type=content_type,
        retained=e.retained,
        error=e.error or None,
        dead_reason=_DEAD_REASONS.get(e.dead_reason),
        previous_state=_state(e.previous_state),
        batch=Batch.from_proto(e.batch) if e.HasField("batch") else None,
        # The server sends a priority with `enqueued` only; 0 there is a priority, elsewhere unset.
        priority=e.priority if e.kind == events_pb2.JOB_EVENT_KIND_ENQUEUED else None,
    )


@dataclass(frozen=True)
class EventPosition:
    """Where a subscription is in the server's event sequence: resume from here."""

    stream_id: str
    sequence: int


@dataclass(frozen=True)
class CaughtUp:
    """The stream has sent every matching event up to `position`; live from here."""

    position: EventPosition


class EventStream:
    """A live subscription to job events: iterate it (`for event in stream`), `close()` it
    when done (or use it as a context manager). Resumes by itself after a disconnect once
    it was connected; a first connection that fails ends it with UnavailableError."""

    def __init__(
        self,
        conn: Connection,
        *,
        queues: Sequence[str] = (),
        job_ids: Sequence[str] = (),
        kinds: Sequence[JobEventKind] = (),
        from_oldest: bool = False,
        resume_from: EventPosition | None = None,
        reconnect: bool = True,
    ) -> None:
        for name, value in (("queues", queues), ("job_ids", job_ids), ("kinds", kinds)):
            if isinstance(value, str):
                raise TypeError(f"{name}: give a list, not a string")
        unknown = [k for k in kinds if k not in _KIND_TO_PROTO]
        if unknown:
            raise ValueError(f"kinds: {unknown[0]!r} is not an event kind")
        self._conn = conn
        self._filter = (list(queues), list(job_ids), [_KIND_TO_PROTO[k] for k in kinds])
        self._from_oldest = from_oldest
        self._reconnect = reconnect
        self._position = resume_from
        self._items: queue.Queue[JobEvent | CaughtUp | SeppError | None] = queue.Queue(MAX_BUFFERED_MESSAGES)
        self._closed = threading.Event()
        self._call: Any = None
        self._lock = threading.Lock()
        self.caught_up = threading.Event()
        """Set when the subscription first catches up with the server (or ends before that)."""
        self._thread = threading.Thread(target=self._run, name="sepp-events", daemon=True)
        self._thread.start()

    @property
    def position(self) -> EventPosition | None:
        """The last event seen (or caught-up point): where a later subscription resumes."""
        return self._position

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ends the subscription; iteration stops."""
        self._closed.set()
        self.caught_up.set()
        with self._lock:
            call = self._call
        if call is not None:
            call.cancel()
        try:
            self._items.put_nowait(None)
        except queue.Full:
            pass

    def __iter__(self) -> Iterator[JobEvent]:
        while True:
            item = self.next_item(None)
            if isinstance(item, JobEvent):
                yield item

    def next_item(self, timeout_s: float | None) -> JobEvent | CaughtUp | None:
        """The next event or caught-up marker; None after `timeout_s`. Raises StopIteration once
        closed, or the SeppError that ended the stream."""
        if self._closed.is_set() and self._items.empty():
            raise StopIteration
        try:
            item = self._items.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if item is None:
            raise StopIteration
        if isinstance(item, SeppError):
            raise item
        return item

    def _request(self) -> events_pb2.EventsRequest:
        queues, job_ids, kinds = self._filter
        position = self._position
        return events_pb2.EventsRequest(
            queues=queues, job_ids=job_ids, kinds=kinds,
            # No kinds named: every kind, also those newer than this client (passed over).
            all_kinds=True,
            after_sequence=position.sequence if position else 0,
            stream_id=position.stream_id if position else "",
            from_oldest=position is None and self._from_oldest,
        )

    def _put(self, item: JobEvent | CaughtUp | SeppError) -> bool:
        """Queues an item, blocking while the application is behind; False once closed."""
        while not self._closed.is_set():
            try:
                self._items.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            try:
                call = self._conn.stub.Events(self._request(), metadata=self._conn.metadata)
            except ValueError:  # the client's channel is closed
                self._end(closed_error("events"))
                return
            with self._lock:
                self._call = call
            try:
                for message in call:
                    failures = 0
                    for e in message.events:
                        self._position = EventPosition(message.stream_id, e.sequence)
                        if e.kind not in _KIND_NAMES:
                            continue  # a kind newer than this client (a newer server): passed over
                        if not self._put(event_from_proto(e)):
                            return
                    if message.caught_up:
                        self._position = EventPosition(message.stream_id, message.sequence)
                        self.caught_up.set()
                        if not self._put(CaughtUp(self._position)):
                            return
                error = SeppError(grpc.StatusCode.UNAVAILABLE, "the server ended the Events stream")
            except grpc.RpcError as thrown:
                # The client closed under the subscription: grpc says "Channel closed!".
                error = closed_error("events") if self._conn.closed else to_sepp_error(thrown)
            if self._closed.is_set():
                return
            # Only a subscription that was up resumes: one that never got through says so. A
            # connection the server ended fails its calls with UNAVAILABLE ("Socket closed") or,
            # when its HTTP/2 layer reset them first, INTERNAL (connection_closed_by_server):
            # past the server's bound on cancelled calls the calls open on the connection usually
            # go on after its GOAWAY, but a cancel racing that GOAWAY can end the connection
            # (tests/test_outcomes.py, ...past_the_reset_bound).
            # Nor does one the server refuses until someone changes it (`sepp-retry: operator`: an
            # Events stream reads no storage, so that is events turned off on the server) or for good.
            lost = error.grpc_code == grpc.StatusCode.UNAVAILABLE or connection_closed_by_server(error)
            if lost and error.retry not in ("operator", "never") and self._reconnect and self._position is not None:
                time.sleep(backoff_delay_ms(failures, 200, 10_000) / 1000)
                failures += 1
                continue
            self._end(error)
            return

    def _end(self, error: SeppError) -> None:
        self.caught_up.set()
        self._put(error)
        self._closed.set()
