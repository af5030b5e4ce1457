"""How a Worker gets jobs and settles them. Two implementations with the same
behaviour: the Work stream (_work_stream.py, the fast path) and unary Reserve
long polls with Ack/Nack/Extend calls (ReserveTransport, below).

Settlements are called from handler threads and block; extensions are called
from the timer thread and return futures."""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Protocol, TypeVar

import grpc

from ._connection import Connection, backoff_delay_ms
from .errors import JobCancelledError, JobTimeoutError, SeppError, to_sepp_error, too_large_for_transport
from .models import LeaseRef, NackResult
from ._repeated_settlement import ack_call, nack_call
from .v1 import job_pb2, work_pb2

LONG_POLL_MARGIN_S = 5.0

T = TypeVar("T")


class TransportHost(Protocol):
    """What a transport needs from its Worker."""

    def free_slots(self) -> int:
        """Slots not taken by running jobs, plus prefetch not taken by held ones: the most jobs the
        transport may ask for now."""

    def idle_slots(self) -> int:
        """Slots with no job running: jobs wanted now (no job is held while one is free)."""

    @property
    def refill_jobs(self) -> int:
        """While no slot is idle, credit waits until it is worth this many jobs: with prefetch, half
        of it, so held jobs are refilled by a few large leases instead of one per settled job;
        without, 1 (every free slot at once)."""

    def deliver(self, job: job_pb2.LeasedJob, unasked: bool = False) -> None:
        """A job was leased to this worker; it takes one slot. `unasked`: the server sent it past
        what was asked (the stream's credit, the Reserve's max_jobs): it is given back, never held,
        so a server that ignores the credit cannot make the worker hold (and extend) jobs without
        bound."""

    def report(self, error: SeppError, retry_in_s: float | None) -> None:
        """A connection-level problem; the transport retries by itself in `retry_in_s`."""

    def connected(self) -> None:
        """The server answered: any outage is over."""

    def fatal(self, error: SeppError) -> None:
        """A refusal stops_worker says no retry changes (a bad API key, a bad queue name): stop the worker."""

    def cancel(self, job_id: str, attempt: int, error: JobCancelledError) -> None:
        """The server says this lease's job was cancelled: stop it if it runs here."""

    def timed_out(self, job_id: str, attempt: int, error: JobTimeoutError) -> None:
        """The server ended this attempt by its hard timeout: stop it if it runs here."""


@dataclass(frozen=True)
class TransportConfig:
    queues: tuple[str, ...]
    lease_ms: int
    worker_id: str
    poll_wait_ms: int
    reconnect_base_delay_ms: int
    reconnect_max_delay_ms: int


FATAL_STATUSES = frozenset({
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
})
"""The statuses of a refused Work stream or Reserve that stop the Worker: the server refused the
request itself (its key, its key's role or queues, its queue names or its credit), or does not know
the call, and asking again gets the same answer. Every other status — UNAVAILABLE (shutting down,
storage), RESOURCE_EXHAUSTED (a limit: back off), INTERNAL (a connection the server closed), a
stream the server ended — is reported and retried with backoff. The table, with when the server
answers each, is in docs/protocol.md ("What stops a Worker"); the TypeScript SDK's `fatalStatuses`
(work-transport.ts) is the same set."""


def stops_worker(error: SeppError) -> bool:
    """Whether a refused Work stream or Reserve stops the Worker: one of FATAL_STATUSES, or an error
    the server marked `sepp-retry: never` (a settlements batch over its max_batch_jobs, a first job
    larger than the answer), which a retry would only send again, forever. "operator" (a storage
    failure someone must fix) does not stop it: the Worker backs off and reconnects, to a newer
    server or to this one once fixed. The TypeScript SDK's `stopsWorker` (work-transport.ts) is
    the same. A stream the server's gRPC library ended for a message over its size is not refused:
    the settlements in it go again one by one (unary), and the next stream is served."""
    return error.grpc_code in FATAL_STATUSES or (
        error.retry == "never" and not too_large_for_transport(error.grpc_code, error.message))



class WorkTransport(Protocol):
    """Settlements take `freed`, which frees the job's slot: the stream calls it as soon as
    the settlement is queued, so the settlement and the credit for the slot leave in one
    message, in that order, and the server settles before it leases again; unary calls free
    the slot only once the settlement is answered (a separate Reserve could overtake it)."""

    def start(self) -> None: ...

    def release(self) -> None:
        """Slots were freed: ask for as many more jobs as `free_slots()` allows."""

    def ack(self, lease: LeaseRef, result: job_pb2.JobResult | None, freed: Callable[[], None]) -> None:
        """Completes a job with its (encoded) result, if any."""

    def nack(self, lease: LeaseRef, request: work_pb2.NackRequest, freed: Callable[[], None],
             repeated: bool = False) -> NackResult:
        """Nacks. `repeated`: an earlier send of this nack failed and may have been applied, so an
        answer "not leased" is checked against the job (_repeated_settlement.py)."""

    def extend(self, lease: LeaseRef, lease_ms: int) -> Future[int]: ...

    def progress(self, lease: LeaseRef, fields: dict[str, Any]) -> Future[None]:
        """Reports progress (fenced like extend) without blocking."""

    def stop_taking(self) -> None:
        """Asks for no more jobs (shutdown); settlements still work."""

    def finish(self, timeout_s: float) -> None:
        """Ends gracefully once everything is settled (or cancels after `timeout_s`)."""


class UnaryCalls:
    """Ack, Nack and Extend as unary calls, shared by both transports."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._extends = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sepp-extend")

    def ack(self, lease: LeaseRef, result: job_pb2.JobResult | None, repeated: bool = False) -> None:
        """Acks. `repeated`: an earlier send of this ack failed and may have been applied, so an answer
        "not leased" is checked against the job (_repeated_settlement.py)."""
        request = work_pb2.AckRequest(job_id=lease.id, attempt=lease.attempt, result=result)
        ack_call(self.conn, lease, request, repeated=repeated)

    def progress(self, lease: LeaseRef, fields: dict[str, Any]) -> Future[None]:
        request = work_pb2.ReportProgressRequest(job_id=lease.id, attempt=lease.attempt, **fields)

        def call() -> None:
            # Reporting the same progress twice stores the same thing.
            self.conn.invoke(self.conn.stub.ReportProgress, request, retry_safe=True, lease_call=True)

        return self._submit(call)

    def nack(self, lease: LeaseRef, request: work_pb2.NackRequest, repeated: bool = False) -> NackResult:
        return nack_call(self.conn, lease, request, repeated=repeated)

    def extend(self, lease: LeaseRef, lease_ms: int) -> Future[int]:
        request = work_pb2.ExtendRequest(job_id=lease.id, attempt=lease.attempt, lease_duration_ms=lease_ms)

        def call() -> int:
            # Extending twice is harmless: the lease simply ends `lease_ms` from the later one.
            response = self.conn.invoke(self.conn.stub.Extend, request, retry_safe=True, lease_call=True)
            return int(response.lease_deadline_ms)

        return self._submit(call)

    def _submit(self, call: Callable[[], T]) -> Future[T]:
        try:
            return self._extends.submit(call)
        except RuntimeError:  # shut down
            failed: Future[T] = Future()
            failed.set_exception(SeppError(grpc.StatusCode.CANCELLED, "the worker is closed"))
            return failed

    def shutdown(self) -> None:
        self._extends.shutdown(wait=False)


class ReserveTransport:
    """The Worker over unary calls, for where a stream cannot be used: a Reserve long poll for
    as many jobs as there are free slots (one poll at a time, so never more than the free
    slots), and Ack/Nack/Extend calls. A slot frees only when its settlement is answered."""

    def __init__(self, conn: Connection, config: TransportConfig, host: TransportHost) -> None:
        self._conn = conn
        self._config = config
        self._host = host
        self._calls = UnaryCalls(conn)
        self._taking = True
        self._wake = threading.Condition()
        self._poll: grpc.Future | None = None
        self._thread = threading.Thread(target=self._loop, name="sepp-reserve", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def release(self) -> None:
        with self._wake:
            self._wake.notify()

    def _loop(self) -> None:
        # The server's max_reserve_jobs bounds what prefetch="auto" asks for.
        self._conn.learn_server_bounds()
        failures = 0
        config = self._config
        while True:
            with self._wake:
                while self._taking and self._host.free_slots() <= 0:
                    self._wake.wait()
                if not self._taking:
                    return
                free = self._host.free_slots()
                request = work_pb2.ReserveRequest(
                    queues=config.queues, max_jobs=free, lease_duration_ms=config.lease_ms,
                    wait_timeout_ms=config.poll_wait_ms, worker_id=config.worker_id,
                )
                poll = self._conn.stub.Reserve.future(
                    request, metadata=self._conn.metadata, timeout=config.poll_wait_ms / 1000 + LONG_POLL_MARGIN_S)
                self._poll = poll
            try:
                jobs = poll.result().jobs
            except grpc.FutureCancelledError:
                return
            except grpc.RpcError as thrown:
                error = to_sepp_error(thrown)
                if not self._taking:
                    return
                if stops_worker(error):
                    self._host.fatal(error)
                    return
                delay_s = backoff_delay_ms(failures, config.reconnect_base_delay_ms, config.reconnect_max_delay_ms) / 1000
                failures += 1
                self._host.report(error, delay_s)
                with self._wake:
                    if self._taking:
                        self._wake.wait(delay_s)
                continue
            finally:
                self._poll = None
            failures = 0
            self._host.connected()
            # Jobs that arrive as the worker stops are still run: they are leased to it.
            # Past `free` (a server that ignores max_jobs): given back, never held.
            for i, job in enumerate(jobs):
                self._host.deliver(job, i >= free)

    def ack(self, lease: LeaseRef, result: job_pb2.JobResult | None, freed: Callable[[], None]) -> None:
        try:
            self._calls.ack(lease, result)
        finally:
            freed()

    def progress(self, lease: LeaseRef, fields: dict[str, Any]) -> Future[None]:
        return self._calls.progress(lease, fields)

    def nack(self, lease: LeaseRef, request: work_pb2.NackRequest, freed: Callable[[], None],
             repeated: bool = False) -> NackResult:
        try:
            return self._calls.nack(lease, request, repeated)
        finally:
            freed()

    def extend(self, lease: LeaseRef, lease_ms: int) -> Future[int]:
        return self._calls.extend(lease, lease_ms)

    def stop_taking(self) -> None:
        with self._wake:
            self._taking = False
            self._wake.notify_all()
            poll = self._poll
        if poll is not None:
            # A poll cancelled while waiting leases nothing.
            poll.cancel()

    def finish(self, timeout_s: float) -> None:
        self.stop_taking()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._calls.shutdown()
