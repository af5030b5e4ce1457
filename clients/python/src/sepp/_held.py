"""A Worker's held jobs: with `prefetch`, a job delivered while every slot is busy is held
(leased, its lease extended by the timer thread like a running one's, its handler not started)
in a queue, oldest first, until a slot frees; so the queue is empty whenever a slot is free.

A held job leaves the queue in one of four ways, each a method here: it starts in a freed slot
(`take_next`), it is dropped unstarted when its lease is cancelled, timed out or lost
(`remove`), it is given back at close (`take_to_give_back`), or it is abandoned when close
stops waiting (`take_all`). The Worker decides what each way means
for the job (events, settlements, credit); this module decides which jobs go and in what order,
and settles the ones that never run on threads of its own (`settle_in_background`).
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

import grpc

from .errors import LeaseLostError

if TYPE_CHECKING:
    from ._runner import Active

GIVE_BACK_THREADS = 8
"""Threads a worker settles held jobs on (given back at shutdown, nacked as cancelled), each
waiting for its answer."""


class HeldJobs:
    """The held jobs of one Worker. The queue is not locked here: the worker changes it under its
    own lock, together with its count of busy slots."""

    def __init__(self, worker_id: str) -> None:
        self._queue: deque[Active] = deque()
        # Held jobs given back or nacked as cancelled, at most GIVE_BACK_THREADS at once for the
        # worker's whole life (its threads start on demand and end after close()): a mass cancel
        # of held jobs queues here rather than starting a thread each.
        self._settler = ThreadPoolExecutor(GIVE_BACK_THREADS, f"sepp-give-back-{worker_id}")

    def __len__(self) -> int:
        return len(self._queue)

    def hold(self, active: Active, running: bool, keep_last_attempts: bool) -> bool:
        """Holds a job delivered while every slot is busy, and answers True; answers False, holding
        nothing, when the worker is closing (the job goes back to the queue at once) — unless
        `keep_last_attempts` (the server counts an attempt for a job given back) and it is on its
        last attempt: held to run, as given back it would go dead unstarted."""
        if not running and not (keep_last_attempts and active.job.is_last_attempt):
            return False
        self._queue.append(active)
        return True

    def remove(self, active: Active) -> bool:
        """Takes a job out of the queue (cancelled, timed out or lost: it never runs); False if it
        was not held."""
        try:
            self._queue.remove(active)
        except ValueError:
            return False
        return True

    def take_next(self, now: float) -> tuple[Active | None, list[tuple[Active, LeaseLostError]]]:
        """Takes out the oldest held job whose lease is still ours by the worker's reckoning (at
        `now`, monotonic), to start it in a slot just freed. One before it whose lease ran out
        unextended (every extend failed or is still unanswered) may already be leased to another
        worker: it is taken out too but never started, marked lost, and answered with the error
        saying so (the server retries it once the lease has ended)."""
        lapsed: list[tuple[Active, LeaseLostError]] = []
        while self._queue and self._queue[0].lease_ends_at <= now:
            late = self._queue.popleft()
            # Lost from here on: a cancel notice or an extend's late answer leaves it alone.
            late.lost = True
            lapsed.append((late, LeaseLostError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"job {late.job.id} attempt {late.job.attempt}: its lease ran out while it waited for a slot (no "
                "extend got through); not started here, the server retries it", "lease_lost")))
        return (self._queue.popleft() if self._queue else None), lapsed

    def take_to_give_back(self, keep_last_attempts: bool) -> list[Active]:
        """At close: takes out the held jobs to give back to the queue now, for other workers,
        rather than when their leases end: all (a give-back counts no attempt), or with
        `keep_last_attempts` (a server that counts one) all but those on their last attempt, which
        stay to run."""
        if not keep_last_attempts:
            return self.take_all()
        given = [active for active in self._queue if not active.job.is_last_attempt]
        kept = [active for active in self._queue if active.job.is_last_attempt]
        self._queue.clear()
        self._queue.extend(kept)
        return given

    def take_all(self) -> list[Active]:
        """Takes out every held job (to give back at close, or close stopped waiting: they will
        not start now)."""
        left = list(self._queue)
        self._queue.clear()
        return left

    def settle_in_background(self, call: Callable[[Active], None], actives: list[Active]) -> None:
        """Settles jobs that never run here off the transport's and the caller's threads (a
        settlement waits for its answer), on the settler threads. Not under the worker's lock."""
        for active in actives:
            try:
                self._settler.submit(call, active)
            except RuntimeError:  # after close(), when nothing is held any more: settled here then
                call(active)

    def close(self) -> None:
        """Settlements already queued still run; the settler's threads end once they are done."""
        self._settler.shutdown(wait=False)
