"""How many jobs a Worker leases ahead of its free slots (held, `_held.py`): a fixed `prefetch`,
or with `prefetch="auto"` (the default) a limit it sets itself from how long its handlers run.

The automatic rule, the same as the TypeScript SDK's: a Worker leases ahead only as much work as
its slots finish in about one second (or a tenth of the lease, if shorter), and none until its
first `concurrency` jobs have run. So long jobs are never held, and a worker never hoards more than
about a second of other workers' work. The limit is recomputed each time a handler finishes (no
timers); when it drops, jobs already held beyond it stay and run, and credit just stops being asked.
Slots plus held jobs also stay within the server's `limits.max_reserve_jobs`, as the TypeScript SDK's
worker-auto-prefetch.ts does.

Queues with flow limits: once the worker is handed a job whose queue had one (`max_leased`,
`group_max_leased`, a rate limit or a group rate limit: the job's `flow_limited`), the limit is 0 for
the rest of the worker's life. Jobs it held would take the limit's allowance from workers with free
slots, and jobs leased at a rate limit's pace would start back to back as slots free. Its first job
from such a queue already says so, before any run of it could raise the limit. A worker that also
serves a queue without limits may have raised it on that queue's jobs first: the credit it granted
for held jobs is already outstanding at the server, which fills it (with jobs of any of its queues)
once before the stop shows; no credit for held jobs follows.
"""
from __future__ import annotations

import math
from typing import Literal

MAX_PREFETCH = 1000
"""The most jobs a Worker leases ahead; slots plus prefetch at most this too (the server's default
`limits.max_reserve_jobs`, the most unused credit it lets one Work stream hold)."""

AUTO_CAP = 500
"""The most jobs `prefetch="auto"` holds, whatever the handlers' speed."""

HELD_BUDGET_MAX_MS = 1000
"""`prefetch="auto"` holds about this much work, in ms of the slots' time (or a tenth of the lease,
if shorter)."""

RUN_WEIGHT = 0.1
"""The weight of each new run in the moving average of handler run time."""

MIN_RUN_MS = 0.05
"""Runs are taken as at least this long, so the limit of instant handlers is the cap, not a
division by zero."""


def auto_held_limit(concurrency: int, lease_ms: int, avg_run_ms: float,
                    max_reserve_jobs: int = MAX_PREFETCH) -> int:
    """The most jobs held ahead by `prefetch="auto"`, for handlers that run `avg_run_ms` on average:
    as many as `concurrency` slots finish in the held budget (`min(1000, lease_ms / 10)` ms), at
    most `min(500, 1000 - concurrency)`; and slots plus held jobs at most the server's
    `limits.max_reserve_jobs` (credit beyond it is refused, which stops the worker), nothing held
    while that is not known (0)."""
    cap = min(AUTO_CAP, min(MAX_PREFETCH, max_reserve_jobs) - concurrency)
    if cap <= 0:
        return 0
    budget_ms = min(HELD_BUDGET_MAX_MS, lease_ms / 10)
    return min(cap, math.floor(concurrency * budget_ms / max(avg_run_ms, MIN_RUN_MS)))


class Prefetch:
    """A Worker's held-ahead limit (`limit`), fixed or automatic. `ran` is told each handler's run
    time, from its start to its settlement being queued, and the server's `max_reserve_jobs` as
    the client knows it; it is called under the worker's lock."""

    def __init__(self, setting: int | Literal["auto"], concurrency: int, lease_ms: int) -> None:
        self.auto = setting == "auto"
        self.limit = 0 if setting == "auto" else setting
        """Jobs this worker may hold now, beyond its slots."""
        self._concurrency = concurrency
        self._lease_ms = lease_ms
        self._runs = 0
        self.avg_run_ms: float | None = None
        """The moving average of handler run time (auto only; None before the first run)."""
        self.stopped_by: str | None = None
        """The queue of the first job that said its queue had flow limits (auto only): nothing is
        held from then on."""

    def flow_limited(self, queue: str) -> bool:
        """A job of `queue` came with `flow_limited`: with `prefetch="auto"` nothing is held from now
        on. True the first time only, so the worker says it once."""
        if not self.auto or self.stopped_by is not None:
            return False
        self.stopped_by = queue
        self.limit = 0
        return True

    def ran(self, run_ms: float, max_reserve_jobs: int = MAX_PREFETCH) -> None:
        if not self.auto:
            return
        avg = self.avg_run_ms
        # The first run starts the average; each later one moves it by a tenth of the difference.
        self.avg_run_ms = run_ms if avg is None else avg + RUN_WEIGHT * (run_ms - avg)
        self._runs += 1
        if self._runs >= self._concurrency and self.stopped_by is None:
            self.limit = auto_held_limit(self._concurrency, self._lease_ms, self.avg_run_ms, max_reserve_jobs)
