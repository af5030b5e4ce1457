"""The batch members whose handlers run in this process, and the token of the lease each runs under.

The server accepts an add to a sealed batch `from_member` only with the secret token of the
member's current lease (`from_member_token`), which only its worker was handed. A Worker
notes a member while its handler runs, so `add_to_batch(job.batch_id, jobs,
from_member=job.id)` proves itself whichever Client of the process makes the call (a
handler may add through a producer key's Client while a worker key's Client leases).
"""
from __future__ import annotations

import threading

_running: dict[str, str] = {}
_lock = threading.Lock()


def member_runs(job_id: str, token: str) -> None:
    """Notes that the handler of batch member `job_id` runs under the lease whose token is `token`."""
    with _lock:
        _running[job_id] = token


def member_done(job_id: str, token: str) -> None:
    """Forgets it once that handler returned (unless a later attempt runs here now)."""
    with _lock:
        if _running.get(job_id) == token:
            del _running[job_id]


def running_token(job_id: str) -> str | None:
    """The lease token a handler of member `job_id` runs under in this process; None when none runs here."""
    with _lock:
        return _running.get(job_id)
