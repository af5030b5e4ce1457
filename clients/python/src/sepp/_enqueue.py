"""Coalescing of enqueues, as a pipelining Redis client does: every enqueue made
while earlier batches are on their way waits for the next one, and the next
batch carries all of them (at most `max_batch_jobs` jobs and
`max_message_bytes`), as one Produce message or one EnqueueBatch call. Many
threads each enqueueing one job thus cost the server one message and one
group commit per round, not one each; a lone caller still waits for no one.

Each enqueue is an entry with a future; a batch's answer is split back into
the entries' results in order. An atomic enqueue is always a batch of its own.

Retries: only with the client's `retry`, only after UNAVAILABLE or an answer
marked `sepp-retry: later` (retried_by_client), and only for entries whose every
job has an idempotency key: a keyless job that may have been stored is never
sent twice. Jobs refused `queue_full` stored nothing and are sent again, until
the queue has room, the tries run out or the deadline nears: an atomic entry
refused for that alone as it was; a best-effort entry's refused jobs (all of
them, or the few refused among stored ones, as a part of their own whose
outcomes replace theirs: _settle). With `retry` set, a job given without a key
gets one of the SDK's (`sepp-retry:<uuid>`) before it is first sent, so that
it too can be retried: an UNAVAILABLE answer may come after the server stored
the job (a failover of its database mid-commit), and the repeat then answers
the stored job's id instead of storing it again.

Bounds: a batch the server refuses as over a bound of the call (over_call_bound:
`limits.max_batch_jobs` lowered by a reload, `grpc.max_message_bytes` by a
restart) stored nothing. Its entries are sent once more, whether retries are on
or not, after the server's bounds are asked again and only if they went down,
cut by them (_recut); never a second time. An entry failed by a broken Produce
stream may have been stored, so it is sent again only if keyed.

The Produce stream: opened by the first enqueue; its request generator (which
grpc pulls from its own thread) takes what is pending whenever grpc can send,
and a reader thread matches answers to messages. The server answers messages in
the order they arrived, so an answer answers the oldest message on the stream
not yet answered, whether or not its caller still waits; its sequence number
must be that message's, or 0 when the server could not decode the message at
all. An answer that is neither means the answers are out of step: the stream is
cancelled and its messages fail with INTERNAL (the entries not yet sent go on a
new stream). When the stream breaks, every entry on it or waiting for it fails
with the stream's status (UNAVAILABLE when the server is gone) and the next
enqueue opens a new one. An idle stream is half-closed after `stream_idle_ms`.

A flow (`client.enqueue_flow`) is an entry of its own, never sent again here
(workflows.enqueue_flow repeats one refused for full queues alone). The flows
pending together (up to `MAX_FLOWS_PER_MESSAGE` and `max_message_bytes`) go in
one Produce message, as its `flows`, each answered on its own (a refused one
fails alone, with its own code); a flow pending alone goes as the message's
`flow`, answered as the unary EnqueueFlow answers. A server older than `flows`
refuses such a message as an empty batch, storing nothing: its flows are sent
again one per message, and so are the later ones. With the unary transport,
when larger than a message, once the client closes, or on a server older than
flows on Produce, it is the unary EnqueueFlow instead (workflows.py).
"""
from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import grpc

from ._connection import Connection, later_retry_delay_s
from ._convert import approx_encoded_bytes, rejection_from_proto
from .errors import (
    JobRejection,
    SeppError,
    closed_error,
    from_status,
    over_call_bound,
    rejected,
    retried_by_client,
    status_from_number,
    to_sepp_error,
)
from .models import ClientStats, Enqueued
from .v1 import flow_pb2, job_pb2, produce_pb2

log = logging.getLogger("sepp.client")

MAX_MESSAGES_IN_FLIGHT = 2
"""Produce messages sent and not yet answered, at most. Threads wake one by one when an
answer arrives, so without a limit the stream carries a message for almost every enqueue;
with it, what arrives while two messages are on their way to the disk gathers in the next
one (the server's group commit makes them wait for the next commit anyway). Measured with
50 threads each enqueueing 40 jobs: about 20 jobs per message with a limit of 2, 6-10
without one, at the same throughput (noisy: load average about 10 on 2 cores)."""


MAX_FLOWS_PER_MESSAGE = 64
"""Most flows in one Produce message (the server's limit)."""

FLOW_FRAMING_BYTES = 6
"""About what a flow adds to a message beside its own bytes (a field tag and a length)."""

OLDER_SERVER_REFUSAL = "jobs: the batch is empty"
"""How a server older than a Produce message's `flow` (or `flows`) answers one: it skips the
field it does not know and refuses a message of no jobs; a newer one never says it of a flow."""

SDK_RETRY_KEY_PREFIX = "sepp-retry:"
"""The prefix of the idempotency keys the SDK gives keyless jobs when it may retry them."""

SDK_RETRY_KEY_BYTES = len(SDK_RETRY_KEY_PREFIX) + 36 + 2
"""The bytes such a key adds to a job: the prefix, a UUID, and the field's tag and length."""


@dataclass(frozen=True)
class Answer:
    """The answer to one batch: per-job results, or an atomic batch's outcome."""

    results: Sequence[job_pb2.EnqueueResult] = ()
    atomic: produce_pb2.EnqueueAtomicResponse | None = None
    flow: flow_pb2.EnqueueFlowResponse | None = None


@dataclass
class _Entry:
    jobs: list[job_pb2.EnqueueJob]
    atomic: bool
    deadline_at: float
    future: Future[tuple[Answer, int]] = field(default_factory=Future)
    size: int = 0
    # Every job has an idempotency key, so sending it again cannot store anything twice.
    keyed: bool = False
    retries: int = 0
    # Sent again once after a refusal as over a bound of the call (_recut): never twice.
    recut: bool = False
    # A flow instead of jobs (`jobs` is empty): in a message of flows only, never retried.
    flow: flow_pb2.EnqueueFlowRequest | None = None

    @property
    def alone(self) -> bool:
        """Never in a message with other jobs: an atomic batch, a flow."""
        return self.atomic or self.flow is not None


class _OutOfStep(Exception):
    """The server answered a message other than the oldest one in flight."""


class _Stream:
    """One Produce stream: its messages in flight (sequence number and entries), oldest first,
    the order their answers come in."""

    def __init__(self) -> None:
        self.ended = False
        self.in_flight: deque[tuple[int, list[_Entry]]] = deque()
        self.call: grpc.Future | None = None
        self.reader: threading.Thread | None = None


class EnqueueBatcher:
    """Collects enqueues and sends them in batches over the Produce stream or unary calls."""

    def __init__(self, conn: Connection, stats: ClientStats, stream_idle_ms: int) -> None:
        self._conn = conn
        self._stats = stats
        self._idle_s = stream_idle_ms / 1000
        self._lock = threading.Condition()
        self._pending: deque[_Entry] = deque()
        self._closing = False
        self._stream: _Stream | None = None
        self._unary_thread: threading.Thread | None = None
        self._outstanding = 0
        self._sequence = 0
        self.flows_unary = False
        """The server answered a flow as a message without jobs: it predates flows on Produce
        (workflows.enqueue_flow sends the later ones as the unary EnqueueFlow)."""
        self.flows_singly = False
        """The server answered several flows as a message without jobs: it predates `flows`
        (each flow goes as a message of its own from then on)."""

    def split(self, jobs: Sequence[job_pb2.EnqueueJob]) -> list[list[job_pb2.EnqueueJob]]:
        """A best-effort batch cut into parts the server takes in one message each: at most
        `max_batch_jobs` jobs and `max_message_bytes` (by approx_encoded_bytes, with the key
        `submit` gives a keyless job when retries are on). A job larger than a message alone is a
        part of its own."""
        parts: list[list[job_pb2.EnqueueJob]] = []
        part: list[job_pb2.EnqueueJob] = []
        size = 0
        retried = self._conn.retry is not None
        for job in jobs:
            keyless = retried and not job.idempotency_key and not job.debounce_key
            job_size = approx_encoded_bytes(job) + (SDK_RETRY_KEY_BYTES if keyless else 0)
            if part and (len(part) >= self._conn.max_batch_jobs or size + job_size > self._conn.max_message_bytes):
                parts.append(part)
                part, size = [], 0
            part.append(job)
            size += job_size
        if part:
            parts.append(part)
        return parts

    def submit(self, jobs: list[job_pb2.EnqueueJob], atomic: bool, deadline_ms: float | None) -> Future[tuple[Answer, int]]:
        """Queues jobs for the next batch; the future resolves with the batch's answer and the
        offset of these jobs in it, or fails with a SeppError."""
        entry = _Entry(jobs, atomic, time.monotonic() + self._conn.timeout_s(deadline_ms))
        entry.size = sum(approx_encoded_bytes(job) for job in jobs)
        if self._conn.retry is not None:
            for job in jobs:
                # A debounced job takes no key (the server refuses both); a repeat of it is
                # absorbed by the job the first send stored while that waits.
                if not job.idempotency_key and not job.debounce_key:
                    job.idempotency_key = f"{SDK_RETRY_KEY_PREFIX}{uuid.uuid4()}"
        entry.keyed = all(job.idempotency_key or job.debounce_key for job in jobs)
        entry.future.set_running_or_notify_cancel()
        with self._lock:
            if self._closing or self._conn.closed:
                entry.future.set_exception(closed_error("enqueue"))
                return entry.future
            self._outstanding += 1
            entry.future.add_done_callback(self._done)
            self._push(entry)
        return entry.future

    def submit_flow(self, flow: flow_pb2.EnqueueFlowRequest, size: int,
                    deadline_ms: float | None) -> Future[tuple[Answer, int]] | None:
        """Queues a flow for the next Produce message of flows (`size`: about its encoded bytes);
        the future resolves with its own answer (`Answer.flow`) or fails with its own error. None
        when it goes as the unary EnqueueFlow instead: with the unary transport, when larger than
        a message, or once the client closes (the unary call then fails as on a closed client)."""
        size += FLOW_FRAMING_BYTES
        if self._conn.transport == "unary" or size > self._conn.max_message_bytes:
            return None
        entry = _Entry([], False, time.monotonic() + self._conn.timeout_s(deadline_ms), size=size, flow=flow)
        entry.future.set_running_or_notify_cancel()
        with self._lock:
            if self._closing or self._conn.closed:
                return None
            self._outstanding += 1
            entry.future.add_done_callback(self._done)
            self._push(entry)
        return entry.future

    def _done(self, _: Future[tuple[Answer, int]]) -> None:
        with self._lock:
            self._outstanding -= 1
            self._lock.notify_all()

    def _push(self, *entries: _Entry, front: bool = False) -> None:
        """Adds entries (lock held), at the back or in order at the front, and makes sure a
        sender will take them."""
        if front:
            self._pending.extendleft(reversed(entries))
        else:
            self._pending.extend(entries)
        self._lock.notify_all()
        if self._conn.transport == "unary":
            if self._unary_thread is None:
                self._unary_thread = threading.Thread(target=self._unary_loop, name="sepp-enqueue", daemon=True)
                self._unary_thread.start()
        elif self._stream is None:
            self._open_stream()

    def _take(self, stream: _Stream | None, wait_s: float) -> list[_Entry] | None:
        """The next batch (lock held): the pending entries that fit, an atomic one alone, the
        flows pending together (one at a time on a server older than `flows`). None when the
        stream ended, or nothing came for `wait_s` and nothing is in flight (time to idle)."""
        deadline = time.monotonic() + wait_s
        while stream is not None and len(stream.in_flight) >= MAX_MESSAGES_IN_FLIGHT and not stream.ended:
            # Entries gather while earlier messages are on their way to the disk (see the top).
            self._lock.wait()
        while not self._pending:
            if stream is not None and stream.ended:
                return None
            remaining = deadline - time.monotonic()
            idle = stream is None or not stream.in_flight
            if self._closing or (remaining <= 0 and idle):
                return None
            self._lock.wait(remaining if remaining > 0 else wait_s)
        if stream is not None and stream.ended:
            return None
        if self._pending[0].flow is not None:
            return self._take_flows()
        if self._pending[0].alone:
            return [self._pending.popleft()]
        batch: list[_Entry] = []
        jobs = size = 0
        while self._pending and not self._pending[0].alone:
            entry = self._pending[0]
            if batch and (jobs + len(entry.jobs) > self._conn.max_batch_jobs or size + entry.size > self._conn.max_message_bytes):
                break
            batch.append(self._pending.popleft())
            jobs += len(entry.jobs)
            size += entry.size
        return batch

    def _take_flows(self) -> list[_Entry]:
        """The flows at the head of the queue that fit in one message (lock held)."""
        batch = [self._pending.popleft()]
        size = batch[0].size
        while (self._pending and self._pending[0].flow is not None and not self.flows_singly
               and len(batch) < MAX_FLOWS_PER_MESSAGE and size + self._pending[0].size <= self._conn.max_message_bytes):
            size += self._pending[0].size
            batch.append(self._pending.popleft())
        return batch

    def _count(self, batch: list[_Entry]) -> list[job_pb2.EnqueueJob]:
        jobs = [job for entry in batch for job in entry.jobs]
        self._stats.enqueued_jobs += len(jobs)
        self._stats.batches += 1
        return jobs

    # ------------------------------------------------------------------ Produce stream

    def _open_stream(self) -> None:
        stream = _Stream()
        self._stream = stream
        stream.reader = threading.Thread(target=self._read, args=(stream,), name="sepp-produce", daemon=True)
        stream.reader.start()

    def _requests(self, stream: _Stream) -> Iterator[produce_pb2.ProduceRequest]:
        # The first batch waits for the server's bounds, once per client (Connection.learn_server_bounds).
        self._conn.learn_server_bounds()
        while True:
            with self._lock:
                batch = self._take(stream, self._idle_s)
                if batch is None:
                    return  # Half-close: the server answers what is in flight and ends the stream.
                self._sequence += 1
                sequence = self._sequence
                stream.in_flight.append((sequence, batch))
                flow = batch[0].flow
                jobs = self._count(batch) if flow is None else []
                self._stats.produce_messages += 1
            if len(batch) > 1 and flow is not None:
                flows = produce_pb2.ProduceFlows(flows=[entry.flow for entry in batch if entry.flow is not None])
                yield produce_pb2.ProduceRequest(sequence=sequence, flows=flows)
            elif flow is not None:
                yield produce_pb2.ProduceRequest(sequence=sequence, flow=flow)
            else:
                yield produce_pb2.ProduceRequest(sequence=sequence, jobs=jobs, atomic=batch[0].atomic)

    def _read(self, stream: _Stream) -> None:
        error: SeppError | None = None
        out_of_step = False
        try:
            responses = self._conn.stub.Produce(self._requests(stream), metadata=self._conn.metadata)
            stream.call = responses
            for answer in responses:
                self._on_answer(stream, answer)
        except _OutOfStep as thrown:
            # Whatever the later answers say could be another message's: none of them is trusted.
            out_of_step = True
            error = SeppError(grpc.StatusCode.INTERNAL, str(thrown))
            if stream.call is not None:
                stream.call.cancel()
        except grpc.RpcError as thrown:
            error = to_sepp_error(thrown)
        except Exception as thrown:  # noqa: BLE001 - a bug must not leave enqueues hanging
            log.exception("sepp: the Produce stream failed")
            error = to_sepp_error(thrown)
        with self._lock:
            stream.ended = True
            self._lock.notify_all()
            if self._stream is stream:
                self._stream = None
            if error is None and not stream.in_flight:
                failed: list[_Entry] = []
            else:
                # The server ended the stream without answering everything, or it broke.
                if error is None or error.grpc_code == grpc.StatusCode.OK:
                    error = from_status(grpc.StatusCode.UNAVAILABLE, "the server ended the Produce stream")
                failed = [entry for _, batch in stream.in_flight for entry in batch]
                if not out_of_step:
                    # Entries waiting for this stream would wait for a server that is gone.
                    failed.extend(self._pending)
                    self._pending.clear()
            stream.in_flight.clear()
            if self._pending and not self._closing:
                self._open_stream()
        if failed and error is not None:
            log.debug("sepp: Produce stream ended: %s", error)
            self._fail(failed, error, stream_broke=True)

    def _on_answer(self, stream: _Stream, answer: produce_pb2.ProduceResponse) -> None:
        """An answer answers the oldest message in flight; raises _OutOfStep when it cannot."""
        with self._lock:
            sequence = stream.in_flight[0][0] if stream.in_flight else None
            if sequence is None or answer.sequence not in (0, sequence):
                next_one = "no message was waiting" if sequence is None else f"message {sequence} was next"
                raise _OutOfStep(f"the server answered Produce message {answer.sequence} where {next_one}; "
                                 "the stream was ended")
            _, batch = stream.in_flight.popleft()
            self._lock.notify_all()
        if len(batch) > 1 and batch[0].flow is not None:
            self._on_flows_answer(batch, answer)
        elif answer.code != 0:
            # A sequence of 0: the message did not decode; its answer's code says why.
            self._fail(batch, from_status(status_from_number(answer.code), answer.message, retry=answer.retry))
        elif answer.HasField("atomic"):
            self._distribute(batch, Answer(atomic=answer.atomic))
        elif answer.HasField("flow"):
            self._distribute(batch, Answer(flow=answer.flow))
        else:
            self._distribute(batch, Answer(results=answer.results))

    def _on_flows_answer(self, batch: list[_Entry], answer: produce_pb2.ProduceResponse) -> None:
        """Each flow of a message of several gets its own answer, or fails with its own error."""
        if status_from_number(answer.code) == grpc.StatusCode.INVALID_ARGUMENT and answer.message == OLDER_SERVER_REFUSAL:
            # A server older than `flows` skips the field and refuses the message as an empty
            # batch, storing nothing: these flows and the later ones go one per message, first.
            with self._lock:
                self.flows_singly = True
                closing = self._closing or self._conn.closed
                if not closing:
                    self._push(*batch, front=True)
            if closing:
                self._fail(batch, closed_error("enqueue"))
            return
        if answer.code != 0:
            self._fail(batch, from_status(status_from_number(answer.code), answer.message, retry=answer.retry))
            return
        answers = answer.flows.answers
        if len(answers) != len(batch):
            message = f"the server answered {len(answers)} flows for {len(batch)}"
            self._fail(batch, SeppError(grpc.StatusCode.INTERNAL, message))
            return
        for entry, each in zip(batch, answers):
            if each.code != 0:
                self._fail([entry], from_status(status_from_number(each.code), each.message, retry=each.retry))
            elif not each.HasField("flow"):
                self._fail([entry], SeppError(grpc.StatusCode.INTERNAL, "the server answered a flow without its outcome"))
            elif not entry.future.done():
                entry.future.set_result((Answer(flow=each.flow), 0))

    # ------------------------------------------------------------------ unary calls

    def _unary_loop(self) -> None:
        self._conn.learn_server_bounds()
        while True:
            with self._lock:
                batch = self._take(None, 3600.0)
                if batch is None:
                    self._unary_thread = None
                    return
                jobs = self._count(batch)
            self._send_unary(batch, jobs)

    def _send_unary(self, batch: list[_Entry], jobs: list[job_pb2.EnqueueJob]) -> None:
        deadline_ms = max(0.0, min(entry.deadline_at for entry in batch) - time.monotonic()) * 1000
        stub = self._conn.stub
        try:
            # The batcher decides about retries (it knows which jobs carry idempotency keys).
            if batch[0].atomic:
                atomic = self._conn.invoke(stub.EnqueueAtomic, produce_pb2.EnqueueAtomicRequest(jobs=jobs),
                                           deadline_ms=deadline_ms, retry_safe=False)
                self._distribute(batch, Answer(atomic=atomic))
            else:
                response = self._conn.invoke(stub.EnqueueBatch, produce_pb2.EnqueueBatchRequest(jobs=jobs),
                                             deadline_ms=deadline_ms, retry_safe=False)
                self._distribute(batch, Answer(results=response.results))
        except SeppError as error:
            self._fail(batch, error)

    # ------------------------------------------------------------------ outcomes

    def _distribute(self, batch: list[_Entry], answer: Answer) -> None:
        expected = sum(len(entry.jobs) for entry in batch)
        if batch[0].flow is not None and answer.flow is None:
            self._fail(batch, SeppError(grpc.StatusCode.INTERNAL, "the server answered a flow without its outcome"))
            return
        # A best-effort batch is answered one result per job: an atomic outcome has none to give
        # each job (the TypeScript SDK fails such a batch the same way, enqueue-batcher.ts).
        if answer.atomic is not None and not batch[0].atomic:
            message = f"the server answered an atomic outcome for {expected} jobs"
            self._fail(batch, SeppError(grpc.StatusCode.INTERNAL, message))
            return
        if answer.atomic is None and answer.flow is None and len(answer.results) != expected:
            message = f"the server answered {len(answer.results)} results for {expected} jobs"
            self._fail(batch, SeppError(grpc.StatusCode.INTERNAL, message))
            return
        offset = 0
        for entry in batch:
            if not entry.future.done():
                self._settle(entry, answer, offset)
            offset += len(entry.jobs)

    def _settle(self, entry: _Entry, answer: Answer, offset: int) -> None:
        """An entry's answer, or its `queue_full` refusals sent again: the whole entry when nothing
        of it was stored, else its refused jobs alone (_send_in_parts), whose outcomes then
        replace theirs."""
        if entry.flow is not None or entry.atomic or answer.atomic is not None:
            if not (entry.atomic and _atomic_refused_for_now(answer) and self._send_again_later(entry)):
                entry.future.set_result((answer, offset))
            return
        refused = _refused_for_now(answer.results, offset, len(entry.jobs))
        if len(refused) == len(entry.jobs) and self._send_again_later(entry):
            return
        delay_s = self._later_delay_s(entry) if refused else None
        if delay_s is None:
            entry.future.set_result((answer, offset))
            return
        results: list[job_pb2.EnqueueResult | None] = list(answer.results[offset:offset + len(entry.jobs)])
        self._send_in_parts(entry, [refused], results, entry.retries + 1, delay_s)

    def _send_in_parts(self, entry: _Entry, parts: list[list[int]], results: list[job_pb2.EnqueueResult | None],
                       retries: int, delay_s: float) -> None:
        """Sends `parts` of a best-effort entry (each a list of its jobs' indexes) as entries of
        their own after `delay_s`; their outcomes fill `results` (the entry's, one per job) and the
        entry is done once every part is: with `results`, or with the first error a part failed with."""
        lock = threading.Lock()
        waiting = len(parts)
        failed: list[BaseException] = []

        def part_done(slots: list[int], future: Future[tuple[Answer, int]]) -> None:
            nonlocal waiting
            error = future.exception()
            with lock:
                if error is not None:
                    failed.append(error)
                else:
                    answer, offset = future.result()
                    for i, slot in enumerate(slots):
                        results[slot] = answer.results[offset + i]
                waiting -= 1
                if waiting > 0:
                    return
            if entry.future.done():
                return
            if failed:
                entry.future.set_exception(failed[0])
            else:
                answered = [r for r in results if r is not None]
                assert len(answered) == len(results), "every part answered every job of it"
                entry.future.set_result((Answer(results=answered), 0))

        for slots in parts:
            jobs = [entry.jobs[slot] for slot in slots]
            part = _Entry(jobs, False, entry.deadline_at, size=sum(approx_encoded_bytes(job) for job in jobs),
                          keyed=entry.keyed, retries=retries, recut=entry.recut)
            part.future.set_running_or_notify_cancel()
            part.future.add_done_callback(functools.partial(part_done, slots))
            if delay_s > 0:
                timer = threading.Timer(delay_s, self._repush, (part,))
                timer.daemon = True
                timer.start()
            else:
                self._repush(part)

    def _fail(self, entries: list[_Entry], error: SeppError, stream_broke: bool = False) -> None:
        # Refused as over a bound of the call, the server stored nothing; a broken stream may have.
        recut = [entry for entry in entries
                 if over_call_bound(error) and entry.flow is None and not entry.recut and not entry.future.done()
                 and (entry.keyed or not stream_broke)]
        if recut:
            threading.Thread(target=self._recut, args=(recut, error), name="sepp-recut", daemon=True).start()
        again = {id(entry) for entry in recut}
        for entry in entries:
            if entry.future.done() or id(entry) in again:
                continue
            if not (retried_by_client(error) and self._send_again_later(entry)):
                entry.future.set_exception(error)

    def _recut(self, entries: list[_Entry], error: SeppError) -> None:
        """Entries refused as over a bound of the call: once the server's bounds are asked again,
        and only if they went down, each is sent once more, cut by them (an atomic one whole, if it
        now fits); else they fail with `error`."""
        lowered = self._conn.relearn_server_bounds()
        for entry in entries:
            entry.recut = True
            fits = len(entry.jobs) <= self._conn.max_batch_jobs
            if entry.future.done():
                continue
            if not lowered or self._conn.closed or (entry.atomic and not fits):
                entry.future.set_exception(error)
            elif entry.atomic or (fits and entry.size <= self._conn.max_message_bytes):
                self._repush(entry)
            else:
                parts: list[list[int]] = []
                for part in self.split(entry.jobs):
                    first = sum(len(p) for p in parts)
                    parts.append(list(range(first, first + len(part))))
                self._send_in_parts(entry, parts, [None] * len(entry.jobs), entry.retries, 0.0)

    def _later_delay_s(self, entry: _Entry) -> float | None:
        """How long until the entry may be sent again after a "later" answer; None when it may not."""
        if not entry.keyed or self._closing:
            return None
        return later_retry_delay_s(self._conn.retry, entry.retries, entry.deadline_at)

    def _send_again_later(self, entry: _Entry) -> bool:
        """Queues the entry again after a backoff when retries are on, it is safe to repeat
        (keyed), and tries and its deadline are left; False (nothing done) otherwise."""
        delay_s = self._later_delay_s(entry)
        if delay_s is None:
            return False
        entry.retries += 1
        timer = threading.Timer(delay_s, self._repush, (entry,))
        timer.daemon = True
        timer.start()
        return True

    def _repush(self, entry: _Entry) -> None:
        with self._lock:
            if self._closing or self._conn.closed:
                entry.future.set_exception(closed_error("enqueue"))
            else:
                self._push(entry)

    def close(self, timeout_s: float) -> None:
        """Sends what is queued and waits (up to `timeout_s`) for every answer, then ends the stream."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._outstanding > 0 and time.monotonic() < deadline:
                self._lock.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            self._closing = True
            self._lock.notify_all()
            stream = self._stream
            leftovers = list(self._pending)
            self._pending.clear()
        for entry in leftovers:
            if not entry.future.done():
                entry.future.set_exception(closed_error("enqueue"))
        if stream is not None and stream.reader is not None:
            # The half-closed stream ends once the server has answered; a server that does not
            # answer in time has its stream cancelled.
            stream.reader.join(max(0.0, deadline - time.monotonic()))
            if stream.reader.is_alive() and stream.call is not None:
                stream.call.cancel()


def _atomic_refused_for_now(answer: Answer) -> bool:
    """An atomic entry refused for a reason the server advises "later" for (rejections_retry):
    every refusal is `queue_full`. Nothing of it was stored, so it may be sent again."""
    atomic = answer.atomic
    if atomic is None or atomic.committed or not atomic.rejections:
        return False
    return all(r.reason == job_pb2.REJECTION_REASON_QUEUE_FULL for r in atomic.rejections)


def _refused_for_now(results: Sequence[job_pb2.EnqueueResult], offset: int, count: int) -> list[int]:
    """Which of `count` results from `offset` on are refusals for `queue_full` (nothing stored; "later")."""
    return [i for i in range(count)
            if results[offset + i].WhichOneof("outcome") == "rejection"
            and results[offset + i].rejection.reason == job_pb2.REJECTION_REASON_QUEUE_FULL]


def enqueued_of(future: Future[tuple[Answer, int]], timeout_s: float) -> Enqueued:
    answer, offset = answer_of(future, timeout_s)
    result = answer.results[offset] if answer.atomic is None else None
    if result is not None and result.WhichOneof("outcome") == "accepted":
        return Enqueued(result.accepted.job_id, result.accepted.deduplicated, result.accepted.debounced)
    if result is not None and result.WhichOneof("outcome") == "rejection":
        raise rejected([rejection_from_proto(0, result.rejection.reason, result.rejection.message)])
    raise rejected([JobRejection(0, "invalid_job", "the server sent no result for this job")])


def answer_of(future: Future[tuple[Answer, int]], timeout_s: float) -> tuple[Answer, int]:
    try:
        return future.result(timeout_s)
    except TimeoutError:
        # Like a unary deadline: the job may still be stored; its answer is no longer waited for.
        raise SeppError(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer from sepp before the deadline") from None
