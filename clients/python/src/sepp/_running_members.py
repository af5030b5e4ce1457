"""The batch members whose handlers run in this process, and the lease each runs under.

The server accepts an add to a sealed batch `from_member` only with the secret token of the
member's current lease (`from_member_token`), which only its worker was handed. A Worker
notes a member while its handler runs, so `add_to_batch(job.batch_id, jobs,
from_member=job.id)` proves itself whichever Client of the process makes the call (a
handler may add through a producer key's Client while a worker key's Client leases).

The lease's attempt is kept too and sent along (`from_member_attempt`): a server of this
version ignores it, but one older than lease tokens asks for it, so workers upgraded before
their servers still add (docs/upgrading.md, "To schema 31").
"""
from __future__ import annotations

import threading
from typing import NamedTuple


class RunningLease(NamedTuple):
    """The lease a member's handler runs under."""

    token: str
    """Empty from a server older than lease tokens."""
    attempt: int


_running: dict[str, RunningLease] = {}
_lock = threading.Lock()


def member_runs(job_id: str, lease: RunningLease) -> None:
    """Notes that the handler of batch member `job_id` runs under `lease`."""
    with _lock:
        _running[job_id] = lease


def member_done(job_id: str, lease: RunningLease) -> None:
    """Forgets it once that handler returned (unless a later attempt runs here now)."""
    with _lock:
        if _running.get(job_id) == lease:
            del _running[job_id]


def running_lease(job_id: str) -> RunningLease | None:
    """The lease a handler of member `job_id` runs under in this process; None when none runs here."""
    with _lock:
        return _running.get(job_id)
