"""The batch members whose handlers run in this process, and the attempt each runs under.

The server accepts an add to a sealed batch `from_member` only with the attempt of the
member's current lease (`from_member_attempt`), which only its worker was handed. A
Worker notes a member while its handler runs, so `add_to_batch(job.batch_id, jobs,
from_member=job.id)` proves itself whichever Client of the process makes the call (a
handler may add through a producer key's Client while a worker key's Client leases).
"""
from __future__ import annotations

import threading

_running: dict[str, int] = {}
_lock = threading.Lock()


def member_runs(job_id: str, attempt: int) -> None:
    """Notes that the handler of batch member `job_id`'s attempt `attempt` runs."""
    with _lock:
        _running[job_id] = attempt


def member_done(job_id: str, attempt: int) -> None:
    """Forgets it once that handler returned (unless a later attempt runs here now)."""
    with _lock:
        if _running.get(job_id) == attempt:
            del _running[job_id]


def running_attempt(job_id: str) -> int | None:
    """The attempt a handler of member `job_id` runs under in this process; None when none runs here."""
    with _lock:
        return _running.get(job_id)
