"""One connection to a sepp server: the gRPC channel, its credentials and the
API key, and the unary call helper every RPC method goes through (deadline,
opt-in retry of UNAVAILABLE where repeating is safe)."""
from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, TypeVar

import grpc

from ._running_members import target_of
from .errors import SeppError, closed_error, connection_closed_by_server, from_status, retried_by_client, to_sepp_error
from .v1 import admin_pb2, queue_service_pb2_grpc

Transport = Literal["stream", "unary"]

Response = TypeVar("Response")


DEADLINE_MS_MAX = 365 * 24 * 3600 * 1000
"""The longest deadline a call takes, in ms (a year), as the TypeScript SDK's."""


@dataclass(frozen=True)
class TlsOptions:
    """TLS settings; PEM contents (bytes), not file names."""

    ca: bytes | None = None
    """CA certificate(s) to trust instead of the system's."""
    cert: bytes | None = None
    """Client certificate, for servers that require one."""
    key: bytes | None = None
    """The client certificate's private key."""
    server_name: str | None = None
    """Name to check the server's certificate against, when it differs from the address's host."""


SERVER_BOUNDS_DEADLINE_MS = 5000
"""How long the first batch waits for the server's bounds at most (Connection.learn_server_bounds)."""
SERVER_BOUNDS_AGAIN_S = 30.0
"""When a server could not say its bounds, how long until they are asked again."""


@dataclass(frozen=True)
class RetryOptions:
    """Retries of calls that failed with UNAVAILABLE, or any other answer the server marked
    `sepp-retry: later` (a limit reached for now: RESOURCE_EXHAUSTED; an enqueue refused
    `queue_full`, which stored nothing — a job, a batch's refused jobs, an atomic batch, a flow —
    repeated until the queue has room or the call's deadline nears), where repeating is safe; never an answer marked "never", nor one marked "operator"
    outside UNAVAILABLE. Enqueues are
    repeated only when every job has an idempotency key: with retries on, a job enqueued
    without one gets one from the SDK (`sepp-retry:<uuid>`, remembered by the server for the
    queue's dedup window like any key), so a retry after the server stored the job returns
    that job (its answer says `deduplicated`) instead of a second."""

    max_attempts: int = 3
    """Tries in all, including the first."""
    base_delay_ms: int = 100
    """First retry delay; doubles each time, with jitter."""
    max_delay_ms: int = 2000
    """Longest retry delay."""


def backoff_delay_ms(retry: int, base_delay_ms: float, max_delay_ms: float) -> float:
    """How long to wait before retry number `retry` (0 = the first retry): exponential with
    "equal jitter" (at least half the step, so retries never bunch up at zero, the other half
    random, so many clients do not retry in lockstep)."""
    ceiling_ms = min(float(max_delay_ms), base_delay_ms * float(2 ** min(retry, 30)))
    return ceiling_ms / 2 + random.random() * (ceiling_ms / 2)


def later_retry_delay_s(retry: RetryOptions | None, retries: int, deadline_at: float) -> float | None:
    """How long to wait, in seconds, before sending again something the server refused for now
    ("later") after `retries` repeats already; None when it is not to be sent again: retries are
    off, the tries (`max_attempts`, the first included) are used up, or the wait would reach
    `deadline_at` (a time.monotonic())."""
    if retry is None or retries + 1 >= retry.max_attempts:
        return None
    delay_s = backoff_delay_ms(retries, retry.base_delay_ms, retry.max_delay_ms) / 1000
    return None if time.monotonic() + delay_s >= deadline_at else delay_s


TIMER_MS_MAX = 2_147_483_647
"""The longest keepalive time or timeout, in ms (gRPC keeps them as 32-bit integers)."""


def _timer_ms(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= TIMER_MS_MAX:
        raise ValueError(f"{name} must be a positive integer number of ms, at most {TIMER_MS_MAX}")
    return value


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number")
    return value


class Connection:
    """The channel and the call helper shared by a Client, its Produce stream and its Workers."""

    def __init__(
        self,
        address: str,
        *,
        api_key: str | None,
        tls: bool | TlsOptions,
        default_deadline_ms: int,
        retry: RetryOptions | None,
        transport: Transport,
        max_batch_jobs: int,
        max_message_bytes: int,
        keepalive_ms: int,
        keepalive_timeout_ms: int,
    ) -> None:
        if transport not in ("stream", "unary"):
            raise ValueError("transport must be 'stream' or 'unary'")
        self.address = address
        # The address and how it is reached (_running_members): a member's lease token goes only to its target.
        self.target = target_of(address, tls is not False,
                                tls.server_name if isinstance(tls, TlsOptions) else None)
        self.default_deadline_ms = _positive(default_deadline_ms, "default_deadline_ms")
        self.retry = retry
        if retry is not None:
            _positive(retry.max_attempts, "retry.max_attempts")
            _positive(retry.base_delay_ms, "retry.base_delay_ms")
            _positive(retry.max_delay_ms, "retry.max_delay_ms")
        self.transport: Transport = transport
        self.max_batch_jobs = int(_positive(max_batch_jobs, "max_batch_jobs"))
        self.max_message_bytes = int(_positive(max_message_bytes, "max_message_bytes"))
        # As given: the server's bounds may only lower them (learn_server_bounds).
        self._given_bounds = (self.max_batch_jobs, self.max_message_bytes)
        self.max_reserve_jobs = 0
        """The server's `limits.max_reserve_jobs` (the most jobs a Reserve asks for, and the most
        unused credit a Work stream holds) once learnt (learn_server_bounds); 0 until then, or from
        a server older than the field. `prefetch="auto"` holds jobs only within it."""
        self.server_features: frozenset[str] | None = None
        """GetServerInfo's `features` once learnt (learn_server_bounds): protocol features older
        servers lack (`nack_give_back`, `work_stop_delivery`); None until then, empty from a server
        older than the field or without the call."""
        # Jobs may be as large as a queue allows (up to 64 MiB); the server enforces its own limit.
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", -1),
            # How soon the channel notices a server that is back (until then every call fails at
            # once): grpc re-resolves the address at most every 30 s and backs off its connection
            # attempts from 1 s to 120 s by default. Measured on a restarted server: calls worked
            # again 5-10 s after it was back with the defaults, 0.1 s with these.
            ("grpc.dns_min_time_between_resolutions_ms", 1000),
            ("grpc.initial_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 5000),
            # Pings while calls are open, so a connection gone silent fails its calls with UNAVAILABLE
            # within about keepalive_ms + keepalive_timeout_ms instead of holding them forever. By
            # default the C core holds back every ping after 2 with no data sent: a Work stream
            # waiting for jobs sends none, and its pings stopped after 2 (seen with grpcio 1.51), so
            # that limit is lifted; the least time between pings is keepalive_ms, so no version's
            # default spacing holds them back (1.51 still sends at most one a second). The server
            # answers pings at any interval: docs/configuration.md, "Keepalive pings".
            ("grpc.keepalive_time_ms", _timer_ms(keepalive_ms, "keepalive_ms")),
            ("grpc.keepalive_timeout_ms", _timer_ms(keepalive_timeout_ms, "keepalive_timeout_ms")),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_time_between_pings_ms", keepalive_ms),
        ]
        if tls is False:
            self.channel = grpc.insecure_channel(address, options=options)
        else:
            settings = tls if isinstance(tls, TlsOptions) else TlsOptions()
            if settings.server_name is not None:
                options.append(("grpc.ssl_target_name_override", settings.server_name))
                options.append(("grpc.default_authority", settings.server_name))
            credentials = grpc.ssl_channel_credentials(settings.ca, settings.key, settings.cert)
            self.channel = grpc.secure_channel(address, credentials, options=options)
        # The generated stub has no annotations: every method is Any to the type checker.
        self.stub: Any = queue_service_pb2_grpc.QueueServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {api_key}"),) if api_key is not None else ()
        )
        self._closed = threading.Event()
        self._bounds_lock = threading.Lock()
        self._bounds_known = False
        self._bounds_again_at = 0.0

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def learn_server_bounds(self) -> None:
        """Lowers `max_batch_jobs` and `max_message_bytes` to the server's own bounds
        (GetServerInfo's `limits.max_batch_jobs` and `max_message_bytes`), so the batches this
        client builds are ones the server takes, and learns its `max_reserve_jobs`. Asked once per client, by the first thread that
        needs them (the others wait for its answer), and again only when the server refuses a
        batch as over a bound (relearn_server_bounds); a server that cannot answer (older, a
        stand-in, down) leaves them as they are, and is asked again 30 s later."""
        with self._bounds_lock:
            if self._bounds_known or time.monotonic() < self._bounds_again_at or self.closed:
                return
            self._ask_server_bounds()

    def relearn_server_bounds(self) -> bool:
        """Asks the server's bounds again, after it refused a batch as over a bound: a reload may
        have lowered `limits.max_batch_jobs`, a restart `grpc.max_message_bytes`. True when either
        bound is now lower than before; a server that cannot answer leaves them as they are."""
        before = (self.max_batch_jobs, self.max_message_bytes)
        with self._bounds_lock:
            # A thread that asked while this one waited for the lock may have lowered them already.
            if not self.closed and (self.max_batch_jobs, self.max_message_bytes) == before:
                self._ask_server_bounds()
        return self.max_batch_jobs < before[0] or self.max_message_bytes < before[1]

    def _ask_server_bounds(self) -> None:
        """One GetServerInfo (the bounds lock held); the bounds become the smaller of the option
        given and the server's, so a bound the server raises comes back up to the option."""
        try:
            info = self.stub.GetServerInfo(admin_pb2.GetServerInfoRequest(), metadata=self.metadata,
                                           timeout=min(self.default_deadline_ms, SERVER_BOUNDS_DEADLINE_MS) / 1000)
        except grpc.RpcError as error:
            # A server without the call (UNIMPLEMENTED) never has it: the options stay.
            unimplemented = isinstance(error, grpc.Call) and error.code() == grpc.StatusCode.UNIMPLEMENTED
            self._bounds_known = unimplemented
            if unimplemented:
                self.server_features = frozenset()
            self._bounds_again_at = time.monotonic() + SERVER_BOUNDS_AGAIN_S
            return
        self._bounds_known = True
        self.server_features = frozenset(info.features)
        limits = info.limits
        # 0: a server older than the field.
        if limits.max_batch_jobs > 0:
            self.max_batch_jobs = min(self._given_bounds[0], limits.max_batch_jobs)
        if limits.max_message_bytes > 0:
            self.max_message_bytes = min(self._given_bounds[1], limits.max_message_bytes)
        self.max_reserve_jobs = limits.max_reserve_jobs

    def timeout_s(self, deadline_ms: float | None, name: str = "deadline_ms") -> float:
        """A call's timeout in seconds, from its own deadline or the default; INVALID_ARGUMENT
        for one that is not a number of ms up to a year (NaN read as "already passed", a
        string or an overflow raised from inside the call)."""
        ms = deadline_ms if deadline_ms is not None else self.default_deadline_ms
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms > DEADLINE_MS_MAX:
            raise SeppError(grpc.StatusCode.INVALID_ARGUMENT,
                            f"{name}: {ms!r} is not a number of ms up to {DEADLINE_MS_MAX} (a year)")
        return ms / 1000

    def invoke(
        self,
        method: Callable[..., Response],
        request: Any,
        *,
        deadline_ms: float | None = None,
        retry_safe: bool,
        lease_call: bool = False,
        on_repeat: Callable[[], None] | None = None,
    ) -> Response:
        """One unary call with a deadline and, when enabled and safe, retries of UNAVAILABLE, of any
        answer the server marked `sepp-retry: later` (retried_by_client), and of a connection the
        server closed (connection_closed_by_server). `on_repeat` is told before the call is sent
        again (its first send may have been applied)."""
        if self.closed:
            raise closed_error("call")
        deadline_at = time.monotonic() + self.timeout_s(deadline_ms)
        attempts = self.retry.max_attempts if self.retry is not None and retry_safe else 1
        attempt = 1
        while True:
            try:
                return method(request, metadata=self.metadata, timeout=max(0.0, deadline_at - time.monotonic()))
            except grpc.RpcError as thrown:
                error = to_sepp_error(thrown, lease_call)
            again = retried_by_client(error) or connection_closed_by_server(error)
            if not again or attempt >= attempts or self.closed:
                raise error
            assert self.retry is not None
            delay_s = backoff_delay_ms(attempt - 1, self.retry.base_delay_ms, self.retry.max_delay_ms) / 1000
            if time.monotonic() + delay_s >= deadline_at:
                raise error
            if self._closed.wait(delay_s):
                raise error
            attempt += 1
            if on_repeat is not None:
                on_repeat()

    def wait_ready(self, timeout_ms: float | None) -> None:
        """Waits until the channel is connected, or raises UnavailableError after the timeout."""
        future = grpc.channel_ready_future(self.channel)
        try:
            future.result(timeout=self.timeout_s(timeout_ms, "timeout_ms"))
        except grpc.FutureTimeoutError:
            future.cancel()
            raise from_status(grpc.StatusCode.UNAVAILABLE, f"cannot reach sepp at {self.address}") from None

    def close(self) -> None:
        if self.closed:
            return
        self._closed.set()
        self.channel.close()
