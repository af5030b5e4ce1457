"""The batch members whose handlers run in this process, the lease each runs under, and the server
that leased it.

The server accepts an add to a sealed batch `from_member` only with the secret token of the
member's current lease (`from_member_token`), which only its worker was handed. A Worker
notes a member while its handler runs, so `add_to_batch(job.batch_id, jobs,
from_member=job.id)` proves itself through any Client of the process connected to the same
target as that Worker (a handler may add through a producer key's Client while a worker
key's Client leases).

The lease's attempt is kept too and sent along (`from_member_attempt`): a server of this
version ignores it, but one older than lease tokens asks for it, so workers upgraded before
their servers still add (docs/upgrading.md, "To schema 31").

Neither goes to another target, never to another server the process also talks to (a staging
server, another deployment, a typo'd address): not the token, a secret, nor the attempt, which
is none but would let an older server of another deployment accept the add. A target is the
address exactly as configured plus how it is reached (plaintext, or TLS and the name its
certificate is checked against). Two spellings of one server (`localhost:50051`,
`127.0.0.1:50051`) are two targets: the add then carries neither and the server refuses it,
which fails closed. No answer of a server decides it: a server could claim another's identity.
"""
from __future__ import annotations

import threading
from typing import NamedTuple


class RunningLease(NamedTuple):
    """The lease a member's handler runs under."""

    token: str
    """Empty from a server older than lease tokens."""
    attempt: int


# job id -> target -> the lease the member's handler runs under.
_running: dict[str, dict[str, RunningLease]] = {}
_lock = threading.Lock()


def target_of(address: str, tls: bool, server_name: str | None) -> str:
    """The target a connection reaches, as a key and for messages: the address as configured, then
    `(plaintext)`, `(TLS)` or `(TLS, server name NAME)`."""
    if not tls:
        return f"{address} (plaintext)"
    if server_name is None:
        return f"{address} (TLS)"
    return f"{address} (TLS, server name {server_name})"


def member_runs(target: str, job_id: str, lease: RunningLease) -> None:
    """Notes that the handler of batch member `job_id`, leased from `target`, runs under `lease`."""
    with _lock:
        _running.setdefault(job_id, {})[target] = lease


def member_done(target: str, job_id: str, lease: RunningLease) -> None:
    """Forgets it once that handler returned (unless a later attempt runs here now)."""
    with _lock:
        leases = _running.get(job_id)
        if leases is not None and leases.get(target) == lease:
            del leases[target]
            if not leases:
                del _running[job_id]


def running_lease(target: str, job_id: str) -> RunningLease | None:
    """The lease a handler of member `job_id` leased from `target` runs under in this process; None when none
    runs."""
    with _lock:
        return _running.get(job_id, {}).get(target)


def running_targets(job_id: str) -> list[str]:
    """The targets whose workers run a handler of member `job_id` in this process now (for messages)."""
    with _lock:
        return list(_running.get(job_id, {}))
