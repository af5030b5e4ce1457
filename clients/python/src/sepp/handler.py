"""What a Worker hands to a handler — the leased job with its decoded data and
a cancellation flag — and the exceptions a handler raises to steer the nack."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Literal

from .jobs import LeasedJob
from .models import UNSET, NackResult
from .results import progress_fields
from .v1 import job_pb2


class WorkerJob(LeasedJob):
    """A job running in a Worker: the leased job, its decoded `data`, and `cancelled`."""

    data: Any
    """The payload decoded: the parsed JSON value when the content type is `application/json`
    (or `application/*+json`); otherwise the raw bytes."""
    cancelled: threading.Event
    """Set when the job must stop: its lease was lost (another worker may be running it and
    this worker will not settle it), an operator cancelled it (it ends `cancelled` and is not
    retried, whatever the handler returns), or the worker's shutdown timeout passed. A long handler
    checks it between steps (`job.raise_if_cancelled()`), or waits on it instead of sleeping
    (`if job.cancelled.wait(5): return`)."""
    cancel_reason: BaseException | None
    """Why `cancelled` is set: a LeaseLostError, a JobCancelledError (an operator's cancel), or
    a SeppError with code `cancelled` at shutdown; None while it is not set."""
    result: Any
    """What the handler returned: the job's result (see `JobResult`)."""

    def __init__(self, job: job_pb2.LeasedJob, data: Any) -> None:
        super().__init__(job)
        self.data = data
        self.cancelled = threading.Event()
        self.cancel_reason = None
        self.result = None
        self._report: Callable[[dict[str, Any]], None] | None = None

    def progress(self, percent: float | None = None, data: Any = UNSET) -> None:
        """Reports how far along the job is: a percentage (0 to 100), a small JSON document
        (`data`, at most the server's `max_progress_bytes`, default 4 KiB), or both —
        `job.progress(40)`, `job.progress(data={"step": "upload"})`. Each replaces what it
        carries and leaves the rest as reported before. Shown by `get_job`, the admin UI and
        `sepp job`, and sent as a `progress` event.

        It does not wait: reports made while one is on its way are merged into the next, so
        call it as often as you like. A lost lease sets `cancelled` as usual; other failures
        are logged and reported as `error` events. A report still on its way when the handler
        returns, answered NOT_FOUND because the job's ack or nack reached the server first, is
        no lost lease. Raises ValueError at once for a percentage outside 0–100 or a document
        with no JSON form."""
        fields = progress_fields(percent, data, data is not UNSET)
        if self._report is not None:
            self._report(fields)

    def raise_if_cancelled(self) -> None:
        """Raises `cancel_reason` when the job was cancelled; a handler calls it between steps."""
        reason = self.cancel_reason
        if reason is not None:
            raise reason

    def _cancel(self, reason: BaseException) -> None:
        """Cancels the job once (the Worker calls it; the first reason stays)."""
        if self.cancel_reason is None:
            self.cancel_reason = reason
            self.cancelled.set()


Handler = Callable[[WorkerJob], Any]
"""Runs one job. Return to ack it — the return value is the job's result (a `JobResult`, bytes,
a str, or any JSON value; None means none) — or raise to nack it with the exception's message:
RetryAfter and DeadLetter choose what happens next."""


class RetryAfter(Exception):
    """Raise from a handler to retry the job after exactly `delay_ms` instead of the queue's
    backoff. `message` is recorded as the attempt's error (default "retry after N ms")."""

    def __init__(self, delay_ms: int, message: str | None = None) -> None:
        super().__init__(message if message is not None else f"retry after {delay_ms} ms")
        self.delay_ms = delay_ms


class DeadLetter(Exception):
    """Raise from a handler to dead-letter the job now, whatever attempts it has left.
    `reason` is recorded as the attempt's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)


WorkerEventKind = Literal[
    "started", "completed", "failed", "lease_lost", "timed_out", "cancelled", "extended", "error", "closed"
]


@dataclass(frozen=True)
class WorkerEvent:
    """What a Worker reports to its `on_event` callback (it logs the same through `logging`).

    - `started`: a job was delivered and its handler starts (`job`).
    - `completed`: the handler returned and the ack is durable (`job`).
    - `failed`: the handler raised and the nack is durable (`job`, `error`, `nack`: where the job went).
    - `lease_lost`: the lease was lost; `job.cancelled` is set and the job will not be settled
      here (`job`, `error`: a LeaseLostError).
    - `timed_out`: the attempt passed its hard timeout (`timeout_ms`); `job.cancelled` is set, the
      server failed the attempt (reason `timeout`) and the job is not settled here (`job`,
      `error`: a JobTimeoutError).
    - `cancelled`: an operator cancelled the running job; `job.cancelled` is set and the job
      ends `cancelled`, not retried (`job`, `error`: a JobCancelledError).
    - A job held with `prefetch` and dropped before it started gets `lease_lost`, `timed_out` or
      `cancelled` as a running one would, with no `started` before it.
    - `extended`: a lease was extended (`job`, `lease_deadline_ms` on the server's clock).
    - `error`: a connection or settlement problem; the worker keeps going (`error`), unless the
      server refused to hand it jobs with a status asking again cannot change (docs/protocol.md,
      "What stops a Worker") or `max_unavailable_ms` passed: then it closes and `run()` raises it.
    - `closed`: `close()` finished.
    """

    kind: WorkerEventKind
    job: WorkerJob | None = None
    error: BaseException | None = None
    nack: NackResult | None = None
    lease_deadline_ms: int | None = None
