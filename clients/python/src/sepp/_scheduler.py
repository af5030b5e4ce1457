"""One timer thread per Worker for everything that happens later: lease
extensions, reconnect backoff, health checks. Callbacks run on that thread, so
they must be quick and never block on the network (they hand work to futures)."""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger("sepp.worker")


class Timer:
    """A scheduled callback; `cancel()` stops it if it has not run yet."""

    __slots__ = ("at", "fn", "cancelled")

    def __init__(self, at: float, fn: Callable[[], None]) -> None:
        self.at = at
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """Runs callbacks at monotonic times on one daemon thread."""

    def __init__(self, name: str) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._lock = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(time.monotonic() + max(0.0, delay_s), fn)
        with self._lock:
            heapq.heappush(self._heap, (timer.at, next(self._order), timer))
            self._lock.notify()
        return timer

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._lock.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                if self._stopped:
                    return
                _, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            try:
                timer.fn()
            except Exception:  # noqa: BLE001 - one failing callback must not stop the others
                log.exception("sepp worker: a timer callback failed")

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._heap.clear()
            self._lock.notify()
