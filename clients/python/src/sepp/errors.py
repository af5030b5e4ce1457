"""The client's exceptions.

Every failure of a call is a `SeppError` carrying the gRPC status and sepp's
own code (from the `sepp-error-code` trailer when the server sent one, else
derived from the status). Refused enqueues, a full queue, lost leases and an
unreachable server get their own subclasses, so callers can catch exactly
what they handle. The names follow the TypeScript SDK's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence, cast, get_args

import grpc

SeppErrorCode = Literal[
    "invalid_argument",
    "not_found",
    "lease_lost",
    "job_cancelled",
    "job_timed_out",
    "failed_precondition",
    "already_exists",
    "resource_exhausted",
    "out_of_range",
    "unauthenticated",
    "permission_denied",
    "unavailable",
    "internal",
    "deadline_exceeded",
    "cancelled",
    "unknown",
]
"""sepp's error codes: the server's (its `sepp-error-code` trailer) plus those a call can end with before reaching it
(tests/interop/error-codes.test.ts checks them against the server's and the TypeScript SDK's)."""

RejectionReason = Literal[
    "unknown_queue",
    "payload_too_large",
    "invalid_name",
    "metadata_too_large",
    "scheduled_too_far",
    "queue_full",
    "job_type_not_allowed",
    "invalid_job",
    "unknown_dependency",
    "dependency_failed",
    "dependencies_unsupported",
]
"""Why the server refused to enqueue a job (the protocol's stable strings)."""

_CODES: frozenset[str] = frozenset(get_args(SeppErrorCode))
_REASONS: frozenset[str] = frozenset(get_args(RejectionReason))

_CODE_OF_STATUS: dict[grpc.StatusCode, SeppErrorCode] = {
    grpc.StatusCode.INVALID_ARGUMENT: "invalid_argument",
    grpc.StatusCode.NOT_FOUND: "not_found",
    grpc.StatusCode.FAILED_PRECONDITION: "failed_precondition",
    grpc.StatusCode.ALREADY_EXISTS: "already_exists",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "resource_exhausted",
    grpc.StatusCode.OUT_OF_RANGE: "out_of_range",
    grpc.StatusCode.UNAUTHENTICATED: "unauthenticated",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
    grpc.StatusCode.UNAVAILABLE: "unavailable",
    grpc.StatusCode.INTERNAL: "internal",
    grpc.StatusCode.DEADLINE_EXCEEDED: "deadline_exceeded",
    grpc.StatusCode.CANCELLED: "cancelled",
}

STATUS_OF_REJECTION: dict[RejectionReason, grpc.StatusCode] = {
    "unknown_queue": grpc.StatusCode.NOT_FOUND,
    "payload_too_large": grpc.StatusCode.INVALID_ARGUMENT,
    "invalid_name": grpc.StatusCode.INVALID_ARGUMENT,
    "metadata_too_large": grpc.StatusCode.INVALID_ARGUMENT,
    "scheduled_too_far": grpc.StatusCode.INVALID_ARGUMENT,
    "queue_full": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "job_type_not_allowed": grpc.StatusCode.FAILED_PRECONDITION,
    "invalid_job": grpc.StatusCode.INVALID_ARGUMENT,
    "unknown_dependency": grpc.StatusCode.NOT_FOUND,
    "dependency_failed": grpc.StatusCode.FAILED_PRECONDITION,
    "dependencies_unsupported": grpc.StatusCode.FAILED_PRECONDITION,
}
"""The status a single Enqueue fails with for each rejection reason (job.proto)."""

_STATUS_BY_NUMBER: dict[int, grpc.StatusCode] = {s.value[0]: s for s in grpc.StatusCode}


def status_from_number(number: int) -> grpc.StatusCode:
    """The grpc.StatusCode of a google.rpc.Code number, as stream answers carry it."""
    return _STATUS_BY_NUMBER.get(number, grpc.StatusCode.UNKNOWN)


@dataclass(frozen=True)
class JobRejection:
    """One refused job of an enqueue, by its position in the request."""

    index: int
    """Zero-based index of the job in the request (0 for a single enqueue)."""
    reason: RejectionReason
    """The machine-readable reason."""
    message: str
    """A sentence for people naming the field, the limit and the setting."""


RetryAdvice = Literal["never", "operator", "later"]
"""The server's word on repeating a failed call (its `sepp-retry` trailer, docs/protocol.md):
"never", no repeat of the same call can pass (a call over a per-call bound); "operator", a repeat
passes only once someone fixes the server (its storage refuses the login, a newer sepp migrated
the schema): Workers and retries keep backing off, one-shot tools do not advise repeating;
"later", it may pass after a backoff."""


class SeppError(Exception):
    """The base class of every error a sepp call ends with."""

    code: SeppErrorCode
    """sepp's code: the server's `sepp-error-code` trailer, or derived from the gRPC status."""
    grpc_code: grpc.StatusCode
    """The gRPC status the call ended with."""
    retry: RetryAdvice | None = None
    """The server's `sepp-retry` trailer: "never" when no repeat of the same call can pass (the
    client's retries and Workers do not repeat it), "operator" when it passes once someone fixes
    the server (retried with backoff, as "later"), "later" when it may after a backoff; None when
    the server sent none (the status decides)."""

    def __init__(self, grpc_code: grpc.StatusCode, message: str, code: SeppErrorCode | None = None) -> None:
        super().__init__(message)
        self.grpc_code = grpc_code
        self.code = code if code is not None else _CODE_OF_STATUS.get(grpc_code, "unknown")

    @property
    def message(self) -> str:
        """The error's text."""
        return str(self.args[0]) if self.args else ""

    @property
    def retryable(self) -> bool:
        """True for UNAVAILABLE: the server was not reached, or it stored nothing and asks to try
        again ("later", or "operator": once someone fixes the server) — unless it marked the error
        `retry == "never"`."""
        return bool(self.grpc_code == grpc.StatusCode.UNAVAILABLE) and self.retry != "never"


class UnavailableError(SeppError):
    """The server could not be reached, or is shutting down, or its storage failed: nothing was
    committed and the call is safe to repeat. A Worker raises it from `run()` when the server
    stayed unreachable for longer than its `max_unavailable_ms`."""


class BatchLeftOpenError(SeppError):
    """A `create_batch` or `add_to_batch` with `seal=True` stored its members but the seal that
    follows them failed (with the client's `retry`: the members refused `queue_full` were added
    again first, or the server was older than `seal_if_all_stored`): the batch `batch_id` exists
    and is open. Seal it (`seal_batch(batch_id)`) or add more to it; code, status and advice are
    the failed seal's."""

    batch_id: str
    """The batch that exists, open."""

    def __init__(self, batch_id: str, seal_failed: SeppError) -> None:
        super().__init__(seal_failed.grpc_code,
                         f"batch {batch_id} is stored with its members but left open: sealing it failed: "
                         f"{seal_failed.message} (seal it with seal_batch({batch_id!r}))", seal_failed.code)
        self.batch_id = batch_id
        self.retry = seal_failed.retry


class LeaseLostError(SeppError):
    """The lease is gone: an ack, nack or extend carried an attempt that no longer matches
    (the lease expired and the job was handed out again), or the job is no longer leased at
    all. The job may be running elsewhere; stop working on it."""


class JobCancelledError(SeppError):
    """The job was cancelled (`cancel_job`, `cancel_jobs`, the admin UI) while this lease ran:
    stop working on it. A Worker sets `job.cancelled` with this error as `job.cancel_reason`,
    and the job ends `cancelled`, never retried, whatever the handler does next. It is also
    what an ack or extend of that lease fails with (code `job_cancelled`)."""

    def __init__(self, grpc_code: grpc.StatusCode, message: str) -> None:
        super().__init__(grpc_code, message, "job_cancelled")


class JobTimeoutError(LeaseLostError):
    """The attempt ran past its hard timeout (`execution_timeout_ms` at enqueue, or the queue's
    `default_timeout_ms`): the server refused to extend it and fails it with reason `timeout`
    (the queue's retry policy decides what follows). A Worker sets `job.cancelled` with this
    error as `job.cancel_reason` and settles nothing more of that attempt; it is also what an
    extend of that lease fails with (code `job_timed_out`). A LeaseLostError: the attempt is over."""

    def __init__(self, grpc_code: grpc.StatusCode, message: str) -> None:
        super().__init__(grpc_code, message, "job_timed_out")


class JobRejectedError(SeppError):
    """The server refused to enqueue a job (for an atomic enqueue, one or more jobs: nothing
    was stored). `retry` says what the server's `sepp-retry` trailer says of it: "later" for a
    full queue (`queue_full`: it may pass once workers drain the queue; with the client's `retry`
    set, the SDK repeats it within the call's deadline first), None for a refusal no repeat
    changes."""

    reason: RejectionReason
    """Why the (first) refused job was refused."""
    rejections: tuple[JobRejection, ...]
    """Every refused job with its index; one entry for a single enqueue."""

    def __init__(self, rejections: Sequence[JobRejection]) -> None:
        if not rejections:
            raise ValueError("JobRejectedError needs at least one rejection")
        first = rejections[0]
        more = f" (and {len(rejections) - 1} more refused jobs)" if len(rejections) > 1 else ""
        super().__init__(STATUS_OF_REJECTION[first.reason], f"{first.message}{more}")
        self.reason = first.reason
        self.rejections = tuple(rejections)
        self.retry = rejections_retry(rejections)


class QueueFullError(JobRejectedError):
    """The queue holds its `max_depth` of unfinished jobs: back off and enqueue again later."""


def rejected(rejections: Sequence[JobRejection]) -> JobRejectedError:
    """The JobRejectedError for these refusals: a QueueFullError when the first is `queue_full`."""
    if rejections and rejections[0].reason == "queue_full":
        return QueueFullError(rejections)
    return JobRejectedError(rejections)


def rejections_retry(rejections: Sequence[JobRejection]) -> RetryAdvice | None:
    """The `sepp-retry` advice the server gives refusals of these reasons (a unary Enqueue's
    trailer; a batch's per-job rejections carry none, so the SDK applies the same rule): "later"
    when every one is `queue_full` (a limit reached for now, which a drained queue lifts), None
    otherwise (no repeat of the same job can pass by itself)."""
    return "later" if rejections and all(r.reason == "queue_full" for r in rejections) else None


def retried_by_client(error: SeppError) -> bool:
    """Whether the client's retries (its `retry`) may repeat a call that failed with this error,
    where repeating it is safe: UNAVAILABLE unless marked "never" (SeppError.retryable), or any
    code the server marked "later" (a limit reached for now: a full queue, a rate). Never for
    "never" or, outside UNAVAILABLE, "operator" (a repeat passes only once someone fixes the server)."""
    return error.retryable or error.retry == "later"


def over_call_bound(error: SeppError) -> bool:
    """The call was refused as over a bound of the call itself (more jobs than
    `limits.max_batch_jobs`, a message over `grpc.max_message_bytes`), which no repeat of the same
    call can pass (RESOURCE_EXHAUSTED marked "never") and which stored nothing. The batcher then
    asks the server's bounds again and sends what was refused once more, cut by them, if they went
    down."""
    return error.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry == "never"


def rejection_reason(value: str) -> RejectionReason:
    """A reason string from the server; an unknown one (a newer server) reads as `invalid_job`."""
    return cast(RejectionReason, value) if value in _REASONS else "invalid_job"


def from_status(
    grpc_code: grpc.StatusCode, message: str, lease_call: bool = False, code: SeppErrorCode | None = None,
    retry: str | None = None,
) -> SeppError:
    """The SeppError subclass for a status. `lease_call` marks an ack, nack or extend, where
    NOT_FOUND and FAILED_PRECONDITION mean the lease is lost (unless the job was cancelled);
    `retry` is the server's `sepp-retry` advice in its wire form (a trailer, or a stream
    answer's `retry` field), kept when it is one the client knows."""
    error = _from_status(grpc_code, message, lease_call, code)
    if retry in ("never", "operator", "later"):
        error.retry = cast(RetryAdvice, retry)
    return error


def _from_status(
    grpc_code: grpc.StatusCode, message: str, lease_call: bool, code: SeppErrorCode | None
) -> SeppError:
    if code == "job_cancelled":
        return JobCancelledError(grpc_code, message)
    if code == "job_timed_out":
        return JobTimeoutError(grpc_code, message)
    if lease_call and grpc_code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION):
        if code is None:
            code = "lease_lost" if grpc_code == grpc.StatusCode.FAILED_PRECONDITION else "not_found"
        return LeaseLostError(grpc_code, message, code)
    if grpc_code == grpc.StatusCode.UNAVAILABLE:
        return UnavailableError(grpc_code, message, code)
    if grpc_code == grpc.StatusCode.UNAUTHENTICATED:
        return SeppError(grpc_code, _unauthenticated_message(message), code)
    return SeppError(grpc_code, message, code)


def _unauthenticated_message(message: str) -> str:
    """UNAUTHENTICATED in the client's words: the option that sends a key, not the gRPC
    metadata the server asks for."""
    if "authorization: Bearer" in message:
        return ("the server needs an API key: pass api_key= to sepp.Client(), or set SEPP_API_KEY "
                "(`sepp admin new-api-key` makes one)")
    return f"the server refused the API key ({message}): check api_key= of sepp.Client(), or SEPP_API_KEY"


def _trailer(error: grpc.Call, key: str) -> str | None:
    try:
        trailers = error.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - a call that never started has no trailers
        return None
    for name, value in trailers:
        if name == key:
            return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")
    return None


def to_sepp_error(error: BaseException, lease_call: bool = False) -> SeppError:
    """Normalises anything a call failed with into a SeppError, once."""
    if isinstance(error, SeppError):
        return error
    if not isinstance(error, grpc.RpcError) or not isinstance(error, grpc.Call):
        return SeppError(grpc.StatusCode.INTERNAL, f"sepp client: {error!r}", "internal")
    grpc_code = error.code()
    message = error.details() or grpc_code.name
    reason = _trailer(error, "sepp-rejection-reason")
    retry = _trailer(error, "sepp-retry")
    if reason is not None and reason in _REASONS:
        refused = rejected([JobRejection(0, rejection_reason(reason), message)])
        if retry in ("never", "operator", "later"):
            refused.retry = cast(RetryAdvice, retry)
        return refused
    code = error_code_of(_trailer(error, "sepp-error-code"))
    if retry is None and code is None and too_large_for_transport(grpc_code, message):
        retry = "never"
        message += _TOO_LARGE_HINT
    return from_status(grpc_code, message, lease_call, code, retry)


# What to do about the gRPC library's own size refusal, whose words say only the two sizes.
_TOO_LARGE_HINT = (": a message of this call is larger than the server's grpc.max_message_bytes (the second"
                   " number, in bytes); send fewer jobs or smaller payloads at once, and keep large data in"
                   " storage with a reference in the job")

_TOO_LARGE_FOR_TRANSPORT = re.compile(r"^(Received|Sent) message larger than max\b")


def too_large_for_transport(grpc_code: grpc.StatusCode, message: str) -> bool:
    """The gRPC library's own refusal of a message over its receive or send limit (the server's
    `grpc.max_message_bytes`: "Received message larger than max (N vs. M)"): RESOURCE_EXHAUSTED
    with no sepp trailer, which the client reads as `retry == "never"` (the same message can never
    pass), as the server says it of a call over a per-call bound."""
    return grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED and _TOO_LARGE_FOR_TRANSPORT.search(message) is not None


def error_code_of(text: str | None) -> SeppErrorCode | None:
    """sepp's code from its wire form (a trailer or `Settled.error_code`); None when unknown or empty."""
    return cast(SeppErrorCode, text) if text in _CODES else None


_STREAM_RESET_BY_SERVER = re.compile(r"Received RST_STREAM with error code [1-9]\d*")


def connection_closed_by_server(error: SeppError) -> bool:
    """True when the call failed because the server's HTTP/2 layer reset it with an error code,
    as Node's HTTP/2 server does to the calls open on a connection it ends past its bound of
    cancelled calls (docs/configuration.md, "Cancelled calls per connection"): grpc's C core
    reports INTERNAL, "Received RST_STREAM with error code 2". sepp itself ends a call with a
    status, never with a reset, so this is the connection's end, not the call's answer. A read,
    a call safe to repeat or a subscription may go on over a new connection, as after
    UNAVAILABLE; the error itself stays INTERNAL, since the server may have applied a call it
    had already read."""
    return error.grpc_code == grpc.StatusCode.INTERNAL and _STREAM_RESET_BY_SERVER.search(error.message) is not None


def closed_error(what: str) -> SeppError:
    """The error of calls made after the client (or a stream of it) was closed."""
    return SeppError(grpc.StatusCode.CANCELLED, f"{what}: the sepp client is closed")
