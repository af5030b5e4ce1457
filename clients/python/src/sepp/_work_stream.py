"""The Worker's fast path: one Work stream. The worker subscribes, grants
credit for its free slots, and sends acks, nacks and extends; the server pushes
leased jobs (never more than the credit) and answers each settlement by
request id.

Credit: `outstanding` is credit granted on the current stream and not yet used
by a pushed job. The free slots (and free prefetch) minus `outstanding` is what
may still be granted, so running and held jobs + outstanding credit never
exceed the concurrency + prefetch. With prefetch, credit for held jobs waits
until it is worth `refill_jobs` (idle slots get theirs at once). A new stream
starts with no credit (the server forgets it). A pushed job is
handed to the Worker under the same lock that lowers `outstanding`, so the
grant never sees the slot as both free and promised. Once the worker stops
taking jobs, the next message (a batch, empty if need be) says `stop_delivery`
before the settlements it carries: the server drops the unused credit, so a job
given back at close is not pushed here again (a server older than the field
ignores it and spends the credit: each job it pushes then is given back too).

Batching: grpc pulls the request generator from its own thread whenever it can
send; each pull takes every settlement made since the last one and the credit
their jobs freed, as one `batch` message (settlements first), so the server
commits those acks and leases the next jobs in one transaction, and answers
with `batch` messages too.

States: open (a stream exists) → broken (no stream: settlements go over unary
calls, and a new stream opens after a backoff while the worker still takes
jobs, unless the server refused the stream with an error that stops the worker (stops_worker): then
the worker stops) → half-closed by finish() (the server answers what is in flight, then
ends the stream) → done.

Re-cut: a stream ended as over a bound of the call (over_call_bound) while the worker takes jobs
keeps its settlements not answered and, if the server's bounds went down, the next stream sends
them again cut by them (_settlement_recut.py); else it takes the broken path above. A settlement
sent again whose first send may have been applied is answered as _repeated_settlement.py says. The
TypeScript SDK's work-stream-transport.ts does the same.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Iterator, TypeVar

import grpc

from ._connection import Connection, backoff_delay_ms
from ._convert import nack_result_from_proto
from ._repeated_settlement import RepeatNotLeased, ack_applied_or, nack_applied_or, not_leased
from ._scheduler import Scheduler
from ._settlement_recut import SettlementRecut
from ._work_transport import TransportConfig, TransportHost, UnaryCalls, stops_worker
from .errors import (
    JobCancelledError,
    JobTimeoutError,
    SeppError,
    error_code_of,
    from_status,
    over_call_bound,
    status_from_number,
    to_sepp_error,
)
from .models import LeaseRef, NackResult
from .v1 import job_pb2, work_pb2

T = TypeVar("T")

Settled = work_pb2.WorkResponse.Settled

log = logging.getLogger("sepp.worker")

HEALTHY_AFTER_S = 1.0
"""A stream open this long without failing, on a channel that is connected, reached the server: the
outage (if any) is over. (A stream waiting for a connection that hangs is not open on a ready channel,
however long it waits.) The TypeScript SDK's `healthyAfterMs` (work-transport.ts) is the same."""


def _forward(source: Future[T], target: Future[T]) -> None:
    """Settles `target` as `source` settled."""
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


class _AnswerLost(SeppError):
    """A settlement got no answer on the stream: there was none (`sent` False), or it broke
    after the message was handed to grpc (`sent` True: it may or may not have been applied)."""

    def __init__(self, sent: bool, message: str) -> None:
        super().__init__(grpc.StatusCode.UNAVAILABLE, message)
        self.sent = sent


def _settle_error(settled: Settled) -> SeppError:
    return from_status(status_from_number(settled.code), settled.message, lease_call=True,
                       code=error_code_of(settled.error_code), retry=settled.retry)


def _timed_out(notice: work_pb2.WorkResponse.TimeoutNotice) -> JobTimeoutError:
    at = ""
    if notice.timeout_at_ms:
        at = " at " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(notice.timeout_at_ms / 1000))
    return JobTimeoutError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"job {notice.job_id} attempt {notice.attempt} ran past its hard timeout{at} "
                           "(timeout_ms): stop working on it; the queue's retry policy decides what follows")


def _cancelled(notice: work_pb2.WorkResponse.CancelNotice) -> JobCancelledError:
    by = f" by {notice.cancelled_by}" if notice.cancelled_by else ""
    at = ""
    if notice.cancelled_at_ms:
        at = " at " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(notice.cancelled_at_ms / 1000))
    return JobCancelledError(grpc.StatusCode.FAILED_PRECONDITION,
                             f"job {notice.job_id} was cancelled{by}{at}: stop working on it; it will not be retried")


class _Stream:
    def __init__(self) -> None:
        self.ended = False
        self.half_close = False
        # Told `stop_delivery` (see the top).
        self.delivery_stopped = False
        self.healthy = False
        self.call: Any = None
        self.pending: dict[int, Future[Settled]] = {}
        self.unsent: list[work_pb2.WorkRequest.Settlement] = []
        # Every settlement not answered, by request id, to send it again after a refusal (Re-cut).
        self.settlements: dict[int, work_pb2.WorkRequest.Settlement] = {}
        # The bounds its batches are cut by (max_batch_jobs, max_message_bytes).
        self.cut_by = (0, 0)


class WorkStreamTransport:
    def __init__(self, conn: Connection, config: TransportConfig, host: TransportHost, scheduler: Scheduler) -> None:
        self._conn = conn
        self._config = config
        self._host = host
        self._scheduler = scheduler
        self._calls = UnaryCalls(conn)
        self._lock = threading.Condition()
        self._stream: _Stream | None = None
        self._outstanding = 0
        self._taking = True
        self._finishing = False
        self._next_id = 1
        # The stream to open next, carrying settlements to send again (Re-cut).
        self._carried: _Stream | None = None
        self._recut = SettlementRecut(conn)
        self._thread = threading.Thread(target=self._run, name="sepp-work", daemon=True)
        self._channel_state: grpc.ChannelConnectivity | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        # Its settlement batches are bounded by the server's own bounds once the client knows them.
        self._conn.learn_server_bounds()
        # The channel's state, for `_healthy`, while this transport may open streams.
        self._conn.channel.subscribe(self._on_channel_state)
        try:
            self._loop()
        finally:
            self._conn.channel.unsubscribe(self._on_channel_state)

    def _on_channel_state(self, state: grpc.ChannelConnectivity) -> None:
        self._channel_state = state

    # ------------------------------------------------------------------ the stream

    def _loop(self) -> None:
        failures = 0
        config = self._config
        while True:
            with self._lock:
                carried, self._carried = self._carried, None
                closing = not self._taking or self._finishing
                if not closing:
                    stream = carried or _Stream()
                    self._stream = stream
                    self._outstanding = 0
            if closing:
                if carried is not None:
                    # Handed on as the worker stopped taking jobs: settled by unary calls instead.
                    self._on_broken(carried, from_status(grpc.StatusCode.CANCELLED, "the worker is closing"))
                return
            check = self._scheduler.call_later(HEALTHY_AFTER_S, lambda: self._healthy(stream))
            error: SeppError | None = None
            try:
                call = self._conn.stub.Work(self._requests(stream), metadata=self._conn.metadata)
                stream.call = call
                for message in call:
                    self._on_message(stream, message)
            except grpc.RpcError as thrown:
                error = to_sepp_error(thrown)
            except Exception as thrown:  # noqa: BLE001 - a bug here must not stop the worker for good
                log.exception("sepp worker: the Work stream failed")
                error = to_sepp_error(thrown)
                if stream.call is not None:
                    stream.call.cancel()
            check.cancel()
            if error is None or error.grpc_code == grpc.StatusCode.OK:
                error = from_status(grpc.StatusCode.UNAVAILABLE, "the server ended the Work stream")
            if over_call_bound(error) and self._send_again(stream, error):
                continue
            self._on_broken(stream, error)
            with self._lock:
                if not self._taking or self._finishing:
                    return
            if stops_worker(error):
                self._host.fatal(error)
                return
            if stream.healthy:
                failures = 0  # A stream that reached the server: start the backoff over.
            delay_s = backoff_delay_ms(failures, config.reconnect_base_delay_ms, config.reconnect_max_delay_ms) / 1000
            failures += 1
            self._host.report(error, delay_s)
            with self._lock:
                deadline = time.monotonic() + delay_s
                while self._taking and not self._finishing and time.monotonic() < deadline:
                    self._lock.wait(deadline - time.monotonic())

    def _healthy(self, stream: _Stream) -> None:
        if stream.healthy or stream.ended:
            return
        if self._channel_state != grpc.ChannelConnectivity.READY:
            # Still waiting for a connection: looked at again as long as the stream stays open.
            self._scheduler.call_later(HEALTHY_AFTER_S, lambda: self._healthy(stream))
            return
        stream.healthy = True
        self._host.connected()

    def _requests(self, stream: _Stream) -> Iterator[work_pb2.WorkRequest]:
        config = self._config
        yield work_pb2.WorkRequest(subscribe=work_pb2.WorkRequest.Subscribe(
            queues=config.queues, lease_duration_ms=config.lease_ms, worker_id=config.worker_id,
            batch_responses=True,
        ))
        per_message = self._conn.max_batch_jobs
        max_bytes = self._conn.max_message_bytes // 2
        stream.cut_by = (per_message, self._conn.max_message_bytes)
        while True:
            with self._lock:
                while True:
                    if stream.ended:
                        return
                    grant = 0
                    if self._taking and not stream.half_close:
                        wanted = max(0, self._host.free_slots() - self._outstanding)
                        if wanted >= self._host.refill_jobs or self._host.idle_slots() > self._outstanding:
                            grant = wanted
                    # Not taking: the first message says so, before its settlements (give-backs).
                    stop = not self._taking and not stream.delivery_stopped
                    if stream.unsent or grant > 0 or stop:
                        break
                    if stream.half_close:
                        return  # Everything is written: half-close, the server answers and ends.
                    self._lock.wait()
                # A batch's settlements count against the server's `max_batch_jobs`, and
                # results and progress documents against its message size.
                count = 0
                size = 0
                while count < min(per_message, len(stream.unsent)):
                    size += stream.unsent[count].ByteSize()
                    if count > 0 and size > max_bytes:
                        break
                    count += 1
                settlements = stream.unsent[:count]
                del stream.unsent[:count]
                credit = 0 if stream.unsent else grant
                self._outstanding += credit
                stream.delivery_stopped = stream.delivery_stopped or stop
            if settlements or stop:
                yield work_pb2.WorkRequest(batch=work_pb2.WorkRequest.Batch(
                    settlements=settlements, credit=credit, stop_delivery=stop))
            else:
                yield work_pb2.WorkRequest(credit=work_pb2.WorkRequest.Credit(jobs=credit))

    def _on_message(self, stream: _Stream, message: work_pb2.WorkResponse) -> None:
        kind = message.WhichOneof("kind")
        cancels: list[work_pb2.WorkResponse.CancelNotice] = []
        timeouts: list[work_pb2.WorkResponse.TimeoutNotice] = []
        if kind == "batch":
            settled, jobs = list(message.batch.settled), list(message.batch.jobs)
            cancels = list(message.batch.cancels)
            timeouts = list(message.batch.timeouts)
        elif kind == "settled":
            settled, jobs = [message.settled], []
        elif kind == "job":
            settled, jobs = [], [message.job]
        elif kind == "cancel":
            settled, jobs, cancels = [], [], [message.cancel]
        elif kind == "timeout":
            settled, jobs, timeouts = [], [], [message.timeout]
        else:
            return
        if not stream.healthy:
            stream.healthy = True
            self._host.connected()
        for answer in settled:
            with self._lock:
                future = stream.pending.pop(answer.request_id, None)
                settlement = stream.settlements.pop(answer.request_id, None)
                repeated = self._recut.repeated(answer.request_id)
                self._recut.done(answer.request_id)
            if future is None or future.done():
                continue
            # An ack or nack repeated, answered "not leased": its caller finds out what the first
            # send did. (An extend or progress report so answered is refused: the lease is gone.)
            if repeated and answer.code != 0 and settlement is not None \
                    and settlement.WhichOneof("kind") in ("ack", "nack"):
                error = _settle_error(answer)
                if not_leased(error):
                    future.set_exception(RepeatNotLeased(error))
                    continue
            future.set_result(answer)
        if jobs:
            with self._lock:
                for job in jobs:
                    # One past the credit granted (a server that ignores it) is unasked.
                    unasked = self._outstanding <= 0
                    if not unasked:
                        self._outstanding -= 1
                    self._host.deliver(job, unasked)
        for notice in cancels:
            self._host.cancel(notice.job_id, notice.attempt, _cancelled(notice))
        for timeout in timeouts:
            self._host.timed_out(timeout.job_id, timeout.attempt, _timed_out(timeout))

    def _on_broken(self, stream: _Stream, error: SeppError) -> None:
        with self._lock:
            self._end(stream)
            not_sent = self._not_sent(stream)
            stream.unsent.clear()
            stream.settlements.clear()
            pending = stream.pending
            stream.pending = {}
            for request_id in pending:
                self._recut.done(request_id)
        self._lose(pending, not_sent, error)

    def _not_sent(self, stream: _Stream) -> set[int]:
        """The settlements of `stream` certainly never applied: never written, nor repeats of one
        written before a refusal (the lock held)."""
        return {s.request_id for s in stream.unsent if not self._recut.repeated(s.request_id)}

    def _end(self, stream: _Stream) -> None:
        """The stream is over: nothing more is written to it (the lock held)."""
        stream.ended = True
        if self._stream is stream:
            self._stream = None
            self._outstanding = 0
        self._lock.notify_all()

    def _lose(self, pending: dict[int, Future[Settled]], not_sent: set[int], error: SeppError) -> None:
        """Fails settlements whose answers a broken stream took with it, so that each is settled
        over a unary call instead; one never sent (in `not_sent`) without doubt."""
        for request_id, future in pending.items():
            lost = _AnswerLost(request_id not in not_sent, f"the Work stream broke: {error.message}")
            if not future.done():
                future.set_exception(lost)

    def _send_again(self, stream: _Stream, error: SeppError) -> bool:
        """The stream ended as over a bound of the call (Re-cut, at the top): if the server's
        bounds went down, hands the settlements not answered and not sent again before to the
        next stream, in order, and says so; False (nothing handed on) when the bounds did not go
        down or the worker no longer takes jobs."""
        with self._lock:
            self._end(stream)
            if not self._taking or self._finishing:
                return False
        if not self._recut.lowered(stream.cut_by):
            return False
        carried = _Stream()
        with self._lock:
            if not self._taking or self._finishing:
                return False
            unsent = {s.request_id for s in stream.unsent}
            not_sent = self._not_sent(stream)
            # One whose deadline passed has no settlement left: lost with the stream.
            waiting = [(request_id, request_id not in unsent)
                       for request_id in stream.pending if request_id in stream.settlements]
            again, _ = self._recut.refused(waiting)
            for request_id in again:
                settlement = stream.settlements[request_id]
                carried.pending[request_id] = stream.pending.pop(request_id)
                carried.settlements[request_id] = settlement
                carried.unsent.append(settlement)
            lost = stream.pending
            for request_id in lost:
                self._recut.done(request_id)
            stream.pending = {}
            stream.settlements = {}
            stream.unsent = []
            self._carried = carried
        self._lose(lost, not_sent, error)
        self._host.report(error, 0)
        return True

    # ------------------------------------------------------------------ settlements

    def _settle(self, freed: Callable[[], None] | None = None, **kind: Any) -> tuple[int, Future[Settled]]:
        with self._lock:
            stream = self._stream
            if stream is None or stream.ended or stream.half_close:
                raise _AnswerLost(False, "no Work stream")
            request_id = self._next_id
            self._next_id += 1
            future: Future[Settled] = Future()
            stream.pending[request_id] = future
            settlement = work_pb2.WorkRequest.Settlement(request_id=request_id, **kind)
            stream.settlements[request_id] = settlement
            stream.unsent.append(settlement)
            if freed is not None:
                freed()  # Under the lock: the next message carries this settlement and the slot's credit.
            self._lock.notify_all()
        return request_id, future

    def _answer(self, sent: tuple[int, Future[Settled]]) -> Settled:
        """Waits for a settlement's answer like a unary call's deadline: without an answer in
        time it fails with DEADLINE_EXCEEDED (it may still be applied)."""
        request_id, future = sent
        try:
            settled = future.result(self._conn.default_deadline_ms / 1000)
        except TimeoutError:
            with self._lock:
                stream = self._stream
                if stream is not None:
                    stream.pending.pop(request_id, None)
                    stream.settlements.pop(request_id, None)
                self._recut.done(request_id)
            raise SeppError(grpc.StatusCode.DEADLINE_EXCEEDED,
                            "no answer from sepp on the Work stream before the deadline") from None
        if settled.code != 0:
            raise _settle_error(settled)
        return settled

    def ack(self, lease: LeaseRef, result: job_pb2.JobResult | None, freed: Callable[[], None]) -> None:
        ambiguous = False
        request = work_pb2.AckRequest(job_id=lease.id, attempt=lease.attempt, result=result)
        try:
            sent = self._settle(freed, ack=request)
        except _AnswerLost as lost:
            sent, ambiguous = None, lost.sent
        if sent is not None:
            try:
                self._answer(sent)
                return
            except _AnswerLost as lost:
                ambiguous = lost.sent
            except RepeatNotLeased as error:
                # Most likely its first send went through, unless the job disproves it (_repeated_settlement.py).
                ack_applied_or(self._conn, lease, error.refusal)
                return
        # No stream, or it broke before answering: leases can be settled over unary calls too.
        try:
            # After a lost answer, "not leased" most likely means our own ack went through.
            self._calls.ack(lease, result, ambiguous)
        finally:
            freed()

    def nack(self, lease: LeaseRef, request: work_pb2.NackRequest, freed: Callable[[], None],
             repeated: bool = False) -> NackResult:
        sent = repeated
        try:
            settled = self._answer(self._settle(freed, nack=request))
            return nack_result_from_proto(settled.nack)
        except _AnswerLost as lost:
            sent = sent or lost.sent
        except RepeatNotLeased as error:
            # Sent again after a refusal: applied only where the job proves it.
            return nack_applied_or(self._conn, lease, request, error.refusal)
        except SeppError as error:
            if not (repeated and not_leased(error)):
                raise
            return nack_applied_or(self._conn, lease, request, error)
        try:
            return self._calls.nack(lease, request, sent)
        finally:
            freed()

    def extend(self, lease: LeaseRef, lease_ms: int) -> Future[int]:
        request = work_pb2.ExtendRequest(job_id=lease.id, attempt=lease.attempt, lease_duration_ms=lease_ms)
        try:
            _, answer = self._settle(extend=request)
        except _AnswerLost:
            return self._calls.extend(lease, lease_ms)
        out: Future[int] = Future()

        def answered(done: Future[Settled]) -> None:
            error = done.exception()
            if isinstance(error, _AnswerLost):
                self._calls.extend(lease, lease_ms).add_done_callback(lambda retried: _forward(retried, out))
            elif error is not None:
                out.set_exception(error)
            elif done.result().code != 0:
                out.set_exception(_settle_error(done.result()))
            else:
                out.set_result(int(done.result().extend.lease_deadline_ms))

        answer.add_done_callback(answered)
        return out

    def progress(self, lease: LeaseRef, fields: dict[str, Any]) -> Future[None]:
        request = work_pb2.ReportProgressRequest(job_id=lease.id, attempt=lease.attempt, **fields)
        try:
            _, answer = self._settle(progress=request)
        except _AnswerLost:
            return self._calls.progress(lease, fields)
        out: Future[None] = Future()

        def answered(done: Future[Settled]) -> None:
            error = done.exception()
            if isinstance(error, _AnswerLost):
                self._calls.progress(lease, fields).add_done_callback(lambda done: _forward(done, out))
            elif error is not None:
                out.set_exception(error)
            elif done.result().code != 0:
                out.set_exception(_settle_error(done.result()))
            else:
                out.set_result(None)

        answer.add_done_callback(answered)
        return out

    # ------------------------------------------------------------------ lifecycle

    def release(self) -> None:
        with self._lock:
            self._lock.notify_all()

    def stop_taking(self) -> None:
        with self._lock:
            self._taking = False
            self._lock.notify_all()

    def finish(self, timeout_s: float) -> None:
        with self._lock:
            self._taking = False
            self._finishing = True
            stream = self._stream
            if stream is not None:
                stream.half_close = True
            self._lock.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._thread.is_alive() and stream is not None and stream.call is not None:
            stream.call.cancel()
            self._thread.join(1.0)
        self._calls.shutdown()
