"""One running job's progress reports. A handler may report as often as it likes:
at most one report is on its way at a time, and reports made meanwhile are merged
into the next one (a later percentage or document replaces an earlier one), so a
tight loop costs one report per round trip. Once the handler returned (`close()`),
nothing more is sent; a report already on its way is still answered, and its failure
goes to `on_error` like any other (an ack may overtake it, which the Worker knows)."""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable


class ProgressReporter:
    def __init__(
        self,
        send: Callable[[dict[str, Any]], Future[None]],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self._send = send
        self._on_error = on_error
        self._lock = threading.Lock()
        self._pending: dict[str, Any] | None = None
        self._sending = False
        self._closed = False

    def report(self, fields: dict[str, Any]) -> None:
        with self._lock:
            if self._closed:
                return
            before = self._pending
            if before is not None:
                fields = {
                    "percent": fields["percent"] if fields["has_percent"] else before["percent"],
                    "has_percent": fields["has_percent"] or before["has_percent"],
                    "json": fields["json"] or before["json"],
                }
            self._pending = fields
            if self._sending:
                return
        self._pump()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pending = None

    def _pump(self) -> None:
        with self._lock:
            if self._sending or self._closed or self._pending is None:
                return
            fields, self._pending = self._pending, None
            self._sending = True
        # Outside the lock: the future may already be done and call back at once.
        self._send(fields).add_done_callback(self._sent)

    def _sent(self, done: Future[None]) -> None:
        error = done.exception()
        with self._lock:
            self._sending = False
        if error is not None:
            self._on_error(error)
        self._pump()
