"""The Python SDK matches Produce answers to its messages by their order on the stream
(proto/sepp/v1/produce.proto: answers come in the order the requests arrived, and an answer to
a message whose bytes did not decode carries sequence 0). A stand-in server that implements
Produce only answers when and how each test says: a sequence-0 answer fails the caller of the
message in its place at once, a message whose deadline passed keeps its place, and answers out
of step end the stream; an atomic outcome answering best-effort jobs fails them with INTERNAL.
The TypeScript SDK's tests of the same are in tests/client/produce-answer-order.test.ts and
tests/client/enqueue-recut-answers.test.ts."""
from __future__ import annotations

import contextlib
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterator

import grpc
from conftest import eventually, stand_in_server

import sepp
from sepp.v1 import job_pb2, produce_pb2, queue_service_pb2_grpc


class _Held:
    """A Produce stream the stand-in holds: the messages it received, and the answers to send."""

    def __init__(self) -> None:
        self.received: list[produce_pb2.ProduceRequest] = []
        self.answers: queue.Queue[produce_pb2.ProduceResponse | None] = queue.Queue()
        """None: the client half-closed the stream; it ends once the answers before are sent."""


class HeldProduce(queue_service_pb2_grpc.QueueServiceServicer):
    """Implements Produce only, answering each stream with what the test puts in its `answers`."""

    def __init__(self) -> None:
        self.streams: list[_Held] = []

    def Produce(self, requests: Iterator[produce_pb2.ProduceRequest], context: Any) -> Iterator[Any]:  # noqa: N802
        held = _Held()
        self.streams.append(held)

        def read() -> None:
            with contextlib.suppress(grpc.RpcError):  # The client cancelled the stream.
                for message in requests:
                    held.received.append(message)
            held.answers.put(None)

        threading.Thread(target=read, daemon=True).start()
        while context.is_active():
            try:
                answer = held.answers.get(timeout=0.05)
            except queue.Empty:
                continue
            if answer is None:
                return
            yield answer

    def received(self, index: int, count: int) -> _Held:
        """The stream number `index` (from 0), once it has received `count` messages."""
        def arrived() -> _Held | None:
            held = self.streams[index] if len(self.streams) > index else None
            return held if held is not None and len(held.received) >= count else None
        return eventually(arrived, f"{count} messages on stream {index}")


@contextlib.contextmanager
def stand_in() -> Iterator[tuple[HeldProduce, sepp.Client, ThreadPoolExecutor]]:
    servicer = HeldProduce()
    with stand_in_server(servicer) as address, sepp.Client(address) as client, \
            ThreadPoolExecutor(max_workers=4) as pool:
        yield servicer, client, pool


def accepted(sequence: int, job_id: str) -> produce_pb2.ProduceResponse:
    result = job_pb2.EnqueueResult(accepted=job_pb2.EnqueueAccepted(job_id=job_id))
    return produce_pb2.ProduceResponse(sequence=sequence, results=[result])


UNDECODABLE = produce_pb2.ProduceResponse(sequence=0, code=3, message="the message did not decode")


def enqueue(pool: ThreadPoolExecutor, client: sepp.Client, kind: str, deadline_ms: int = 60_000) -> Future[str]:
    def run() -> str:
        try:
            return client.enqueue("q", kind, deadline_ms=deadline_ms).id
        except sepp.SeppError as error:
            return f"{error.code}: {error}"
    return pool.submit(run)


def two_messages(servicer: HeldProduce, client: sepp.Client,
                 pool: ThreadPoolExecutor) -> tuple[_Held, Future[str], Future[str]]:
    """Two enqueues, each in a message of its own (the second sent once the first arrived): the
    stream holding them and their outcomes (a job id, or the error)."""
    first = enqueue(pool, client, "t1")
    servicer.received(0, 1)
    second = enqueue(pool, client, "t2")
    return servicer.received(0, 2), first, second


def test_a_sequence_0_answer_fails_the_caller_of_the_message_in_its_place_at_once() -> None:
    with stand_in() as (servicer, client, pool):
        held, first, second = two_messages(servicer, client, pool)
        # Two messages in flight, the SDK's limit: the third is sent once the first is answered.
        third = enqueue(pool, client, "t3")
        held.answers.put(accepted(held.received[0].sequence, "id-1"))
        assert first.result(30) == "id-1"
        servicer.received(0, 3)
        answered_at = time.monotonic()
        held.answers.put(UNDECODABLE)
        held.answers.put(accepted(held.received[2].sequence, "id-3"))
        assert second.result(30) == "invalid_argument: the message did not decode"
        # Without the order it would have waited for its deadline, a minute away.
        assert time.monotonic() - answered_at < 10
        assert third.result(30) == "id-3"
        assert [[j.type for j in m.jobs] for m in held.received] == [["t1"], ["t2"], ["t3"]]


def test_a_message_whose_deadline_passed_keeps_its_place_and_its_late_answer_frees_it() -> None:
    with stand_in() as (servicer, client, pool):
        first = enqueue(pool, client, "t1", deadline_ms=1)
        servicer.received(0, 1)
        assert first.result(30) == "deadline_exceeded: no answer from sepp before the deadline"
        second = enqueue(pool, client, "t2")
        held = servicer.received(0, 2)
        third = enqueue(pool, client, "t3")
        # The first message's answer comes late: it answers the first message, nobody else, and
        # frees its place among the messages in flight for the third one.
        held.answers.put(UNDECODABLE)
        servicer.received(0, 3)
        held.answers.put(accepted(held.received[1].sequence, "id-2"))
        held.answers.put(accepted(held.received[2].sequence, "id-3"))
        assert (second.result(30), third.result(30)) == ("id-2", "id-3")


def test_an_answer_out_of_step_ends_the_stream_and_the_next_message_opens_another() -> None:
    with stand_in() as (servicer, client, pool):
        held, first, second = two_messages(servicer, client, pool)
        expected = held.received[0].sequence
        held.answers.put(accepted(expected + 1, "id-2"))
        refused = (f"internal: the server answered Produce message {expected + 1} where message {expected} "
                   "was next; the stream was ended")
        assert (first.result(30), second.result(30)) == (refused, refused)
        third = enqueue(pool, client, "t3")
        reopened = servicer.received(1, 1)
        reopened.answers.put(accepted(reopened.received[0].sequence, "id-3"))
        assert third.result(30) == "id-3"


def test_an_atomic_outcome_for_best_effort_jobs_fails_them_with_internal() -> None:
    with stand_in() as (servicer, client, pool):
        batch = pool.submit(client.enqueue_batch, [sepp.JobSpec("q", "t1"), sepp.JobSpec("q", "t2")])
        held = servicer.received(0, 1)
        atomic = produce_pb2.EnqueueAtomicResponse(
            committed=True, results=[job_pb2.EnqueueAccepted(job_id="id-1"), job_pb2.EnqueueAccepted(job_id="id-2")])
        held.answers.put(produce_pb2.ProduceResponse(sequence=held.received[0].sequence, atomic=atomic))
        error = batch.exception(30)
        assert isinstance(error, sepp.SeppError), repr(error)
        assert (error.code, str(error)) == ("internal", "the server answered an atomic outcome for 2 jobs")
        assert [[j.type for j in m.jobs] for m in held.received] == [["t1", "t2"]]
        # The stream stays in step: the next message is answered as usual.
        single = enqueue(pool, client, "t3")
        servicer.received(0, 2)
        held.answers.put(accepted(held.received[1].sequence, "id-3"))
        assert single.result(30) == "id-3"
