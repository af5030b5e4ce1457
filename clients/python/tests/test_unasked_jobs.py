"""A Worker against a stand-in server that sends more jobs than asked for: a Work stream that
pushes 200 jobs past a credit of 3, a Reserve that answers 200 jobs to max_jobs 3. Jobs past the
credit or max_jobs are given back unstarted at once (a nack with give_back), never held: the
worker holds at most its prefetch, so a server that ignores the credit cannot make it hold, and
keep extending, jobs without bound. The TypeScript SDK's test of the same is
tests/client/worker-unasked-jobs.test.ts."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Iterator, Literal

import grpc
import pytest
from conftest import eventually, settled_ok, stand_in_server

import sepp
from sepp.v1 import admin_pb2, job_pb2, queue_service_pb2_grpc, work_pb2

FLOOD = 200


def _leased(i: int) -> job_pb2.LeasedJob:
    return job_pb2.LeasedJob(job_id=f"j{i}", queue="q", type="t", attempt=1, max_attempts=5,
                             lease_deadline_ms=int((time.time() + 60) * 1000))


class _Greedy(queue_service_pb2_grpc.QueueServiceServicer):
    """Sends FLOOD jobs at the first credit or Reserve, whatever was asked; counts give-backs."""

    def __init__(self) -> None:
        self.asked = 0
        self.sent = 0
        self.give_backs = 0
        self.other_nacks = 0
        self._lock = threading.Lock()

    def _nacked(self, request: work_pb2.NackRequest) -> None:
        with self._lock:
            if request.WhichOneof("directive") == "give_back":
                self.give_backs += 1
            else:
                self.other_nacks += 1

    def _flood(self, asked: int) -> list[job_pb2.LeasedJob]:
        if self.sent > 0:
            return []
        self.asked += asked
        self.sent = FLOOD
        return [_leased(i) for i in range(FLOOD)]

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        return admin_pb2.GetServerInfoResponse(limits=admin_pb2.ServerLimits(max_reserve_jobs=1000),
                                               features=["nack_give_back", "work_stop_delivery"])

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        for message in request_iterator:
            kind = message.WhichOneof("kind")
            credit = message.credit.jobs if kind == "credit" else message.batch.credit if kind == "batch" else 0
            for settlement in message.batch.settlements if kind == "batch" else []:
                if settlement.WhichOneof("kind") == "nack":
                    self._nacked(settlement.nack)
                yield settled_ok(settlement)
            if credit > 0:
                for job in self._flood(credit):
                    yield work_pb2.WorkResponse(job=job)

    def Reserve(self, request: work_pb2.ReserveRequest, context: Any) -> Any:  # noqa: N802 - the RPC's name
        jobs = self._flood(request.max_jobs)
        if not jobs:
            time.sleep(0.05)  # a long-poll that finds nothing, briefly (the stand-in has four threads)
        return work_pb2.ReserveResponse(jobs=jobs)

    def Nack(self, request: work_pb2.NackRequest, context: Any) -> Any:  # noqa: N802 - the RPC's name
        self._nacked(request)
        return work_pb2.NackResponse(state=job_pb2.JOB_STATE_READY)

    def Ack(self, request: Any, context: Any) -> Any:  # noqa: N802 - the RPC's name
        return work_pb2.AckResponse()


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_jobs_past_the_ones_asked_for_are_given_back_never_held(transport: Literal["stream", "unary"]) -> None:
    servicer = _Greedy()
    gate = threading.Event()
    warnings = _Warnings()
    logger = logging.getLogger(f"sepp.test.unasked.{transport}")
    logger.addHandler(warnings)
    with stand_in_server(servicer) as address, sepp.Client(address, transport=transport) as client:
        worker = client.worker(["q"], concurrency=1, prefetch=2, logger=logger,
                               fallback=lambda job: gate.wait(30) and None)
        worker.start()
        try:
            eventually(lambda: servicer.give_backs == FLOOD - 3 or None, "every job past the three asked for given back")
            assert servicer.asked == 3, "one slot and two to hold were asked for"
            assert (worker.running, worker.held) == (1, 2), "it holds its prefetch, no more"
            assert servicer.other_nacks == 0
            unasked = [m for m in warnings.messages if "past the jobs asked for" in m]
            assert len(unasked) == 1, warnings.messages
        finally:
            gate.set()
            worker.close()
