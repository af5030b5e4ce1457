"""A settlement sent again after its first send may have been applied: its answer was lost (the
connection or the Work stream broke after it left), or the Work stream that carried it was refused
over a bound after it was written (_settlement_recut.py), or it is repeated after UNAVAILABLE.
Settlements are fenced by the attempt, so the repeat changes nothing then; it is answered as for a
lease that already ended. Which answers to a repeat count as "already applied":

- an ack answered `not_found` (the job is not leased, or gone), unless the job read right after
  disproves it: most likely the first send completed it. The job read `completed` on that attempt
  proves it (a job deleted in its ack is read from the outcome the server keeps, `outcome_only`);
  read in any other state, or on a later attempt, it was not applied (the lease ran out first) and
  the refusal is raised. A job that cannot be read (its outcome forgotten, a key without the read
  scope) proves nothing either way: taken as applied.
- a nack answered `not_found`, only when the job read right after proves it: its error history
  holds an entry of that attempt with the nack's own message and class (as the server stores them:
  a message over `max_error_bytes` cut and marked), and the job is either still on that attempt and
  no longer leased, or on a later attempt (the nack's retry was leased again since). A lease that
  ran out writes the server's own note ("lease expired") there instead, so `not_found` alone would
  not do. The nack's result is the job's state as read (a retry may have become due since:
  `ready`); leased again, `ready` with its run time as read.

Both are checked after an answer `lease_lost` too (another attempt holds the lease: a nack's retry
leased again; an ack's is disproved by the job). Any other answer (`job_cancelled`; for a nack, a
job that cannot be read or does not prove it) is the real refusal and is raised. The TypeScript
SDK's repeated-settlement.ts does the same.
"""
from __future__ import annotations

from typing import Callable, Literal, TypeVar

from ._connection import Connection
from ._convert import nack_result_from_proto
from .errors import LeaseLostError, SeppError
from .models import LeaseRef, NackResult
from .v1 import admin_pb2, job_pb2, work_pb2

T = TypeVar("T")

_CUT_MARK = "… [truncated]"
"""The mark the server appends to an error message it cut to `max_error_bytes`."""

_NACKED_STATES: dict[int, Literal["ready", "scheduled", "dead", "cancelled"]] = {
    job_pb2.JOB_STATE_READY: "ready",
    job_pb2.JOB_STATE_SCHEDULED: "scheduled",
    job_pb2.JOB_STATE_DEAD: "dead",
    job_pb2.JOB_STATE_CANCELLED: "cancelled",
}
"""The states a nack leaves a job in, as a nack answers them."""


class RepeatNotLeased(SeppError):
    """An ack or nack sent again on a Work stream after a refusal (_settlement_recut.py), answered
    "not leased": its caller finds out what the first send did (above)."""

    def __init__(self, refusal: SeppError) -> None:
        super().__init__(refusal.grpc_code, refusal.message, refusal.code)
        self.refusal = refusal


def not_leased(error: BaseException) -> bool:
    """A repeat answered "not leased" (NOT_FOUND `not_found`) or "leased under a later attempt"
    (`lease_lost`: a nack's retry leased again since): what its first send did is to be found out."""
    return isinstance(error, LeaseLostError) and error.code in ("not_found", "lease_lost")


def _stored_as(stored: str, sent: str) -> bool:
    """Whether `stored` is `sent` as the server keeps it (cut and marked when over its bound)."""
    if stored == sent:
        return True
    return stored.endswith(_CUT_MARK) and sent.startswith(stored[: -len(_CUT_MARK)])


def _nack_applied(conn: Connection, lease: LeaseRef, request: work_pb2.NackRequest) -> NackResult | None:
    try:
        job = conn.invoke(conn.stub.GetJob, admin_pb2.GetJobRequest(job_id=lease.id), retry_safe=True).job
    except SeppError:
        return None  # Not readable (gone, or a key without the read scope): nothing proves it.
    if job.attempt < lease.attempt:
        return None
    entries = [entry for entry in job.errors if entry.attempt == lease.attempt]
    if not entries:
        return None
    entry = entries[-1]
    if not _stored_as(entry.error, request.error_message) or entry.error_class != request.error_class:
        return None
    if job.attempt > lease.attempt:
        # Leased again under a later attempt: the nack put it back to run, and it was due by then.
        return NackResult("ready", int(job.run_at_ms) or None)
    state = _NACKED_STATES.get(job.state)
    if state is None:
        return None
    return NackResult(state, None if state in ("dead", "cancelled") else int(job.run_at_ms) or None)


def ack_applied(conn: Connection, lease: LeaseRef) -> bool:
    """Whether an ack repeated and answered "not leased" counts as applied: the job does not disprove it."""
    try:
        job = conn.invoke(conn.stub.GetJob, admin_pb2.GetJobRequest(job_id=lease.id), retry_safe=True).job
    except SeppError:
        return True  # Not readable (its outcome forgotten, or a key without the read scope): nothing disproves it.
    return bool(job.state == job_pb2.JOB_STATE_COMPLETED and job.attempt == lease.attempt)


def ack_applied_or(conn: Connection, lease: LeaseRef, refusal: SeppError) -> None:
    """An ack whose repeat was answered "not leased" (`refusal`): returns when the job read right after
    does not disprove that the first send was applied (see the top); else the refusal is raised."""
    if not ack_applied(conn, lease):
        raise refusal


def ack_call(conn: Connection, lease: LeaseRef, request: work_pb2.AckRequest, *, repeated: bool = False,
             deadline_ms: int | None = None) -> None:
    """Acks a lease by a unary call. `repeated`: an earlier send of this ack may have been applied
    (its answer was lost); so may a send this call repeats after UNAVAILABLE. A repeat answered "not
    leased" is a lost lease only where the job disproves the ack (see the top)."""

    def send(on_repeat: Callable[[], None]) -> None:
        conn.invoke(conn.stub.Ack, request, deadline_ms=deadline_ms, retry_safe=True, lease_call=True,
                    on_repeat=on_repeat)

    _settlement(repeated, send, lambda refusal: ack_applied_or(conn, lease, refusal))


def nack_applied_or(conn: Connection, lease: LeaseRef, request: work_pb2.NackRequest,
                    refusal: SeppError) -> NackResult:
    """The result of a nack whose repeat was answered "not leased" (`refusal`), read from the job
    when it proves the first send was applied (see the top); else the refusal is raised."""
    applied = _nack_applied(conn, lease, request)
    if applied is None:
        raise refusal
    return applied


def nack_call(conn: Connection, lease: LeaseRef, request: work_pb2.NackRequest, *, repeated: bool = False,
              deadline_ms: int | None = None) -> NackResult:
    """Nacks a lease by a unary call. `repeated`: an earlier send of this nack may have been applied
    (its answer was lost); so may a send this call repeats after UNAVAILABLE. A repeat answered "not
    leased" is taken as applied only where the job proves it (see the top)."""
    return _settlement(
        repeated,
        lambda on_repeat: nack_result_from_proto(conn.invoke(conn.stub.Nack, request, deadline_ms=deadline_ms,
                                                             retry_safe=True, lease_call=True, on_repeat=on_repeat)),
        lambda refusal: nack_applied_or(conn, lease, request, refusal))


def _settlement(repeated: bool, send: Callable[[Callable[[], None]], T], refused: Callable[[LeaseLostError], T]) -> T:
    """A settlement `send` makes (telling its argument when it sends it again after UNAVAILABLE):
    `repeated` or so sent again, an answer "not leased" goes to `refused`, which finds out what the
    first send did (see the top)."""
    repeat = [repeated]
    try:
        return send(lambda: repeat.__setitem__(0, True))
    except LeaseLostError as error:
        if not (repeat[0] and not_leased(error)):
            raise
        return refused(error)
