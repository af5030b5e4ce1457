"""A closing Worker (stream transport) against a stand-in server that names its features in
GetServerInfo (admin.proto `features`), or names none as a server older than them does:

- with `nack_give_back` and `work_stop_delivery`: the first message after close says
  `stop_delivery` before its give-backs, every held job is given back (the last attempt too), and
  a job pushed after the stop (leased before it arrived) is given back as well;
- without: held jobs are nacked for a retry at once (an attempt counted, as before give-backs),
  and the one on its last attempt is kept and runs.

The stand-in pushes three jobs to a worker of one slot and two held, and a fourth in answer to the
stop. The TypeScript SDK's test of the same is tests/client/worker-close-features.test.ts; the real
server's side is tests/rpc/stop-delivery.test.ts."""
from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import grpc
import pytest
from conftest import eventually, settled_ok, stand_in_server

import sepp
from sepp.v1 import admin_pb2, job_pb2, queue_service_pb2_grpc, work_pb2

FEATURES = ["nack_give_back", "work_stop_delivery"]


def _leased(job_id: str, max_attempts: int) -> job_pb2.LeasedJob:
    return job_pb2.LeasedJob(job_id=job_id, queue="q", type="t", attempt=1, max_attempts=max_attempts,
                             lease_deadline_ms=int((time.time() + 60) * 1000))


class _StandIn(queue_service_pb2_grpc.QueueServiceServicer):
    def __init__(self, features: list[str]) -> None:
        self.features = features
        self.seen: list[str] = []

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        return admin_pb2.GetServerInfoResponse(limits=admin_pb2.ServerLimits(max_reserve_jobs=1000),
                                               features=self.features)

    def _settled(self, settlement: work_pb2.WorkRequest.Settlement) -> work_pb2.WorkResponse:
        kind = settlement.WhichOneof("kind")
        if kind == "nack":
            self.seen.append(f"nack {settlement.nack.job_id} {settlement.nack.WhichOneof('directive')}")
            return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
                request_id=settlement.request_id, code=0,
                nack=work_pb2.NackResponse(state=job_pb2.JOB_STATE_READY)))
        self.seen.append(f"{kind} {getattr(settlement, str(kind)).job_id}")
        return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
            request_id=settlement.request_id, code=0, ack=work_pb2.AckResponse()))

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        credit = 0
        pushed = False
        for message in request_iterator:
            kind = message.WhichOneof("kind")
            if kind == "credit":
                credit += message.credit.jobs
            elif kind == "batch":
                if message.batch.stop_delivery:
                    self.seen.append("stop")
                    # Leased before the stop arrived: it still comes.
                    yield work_pb2.WorkResponse(job=_leased("d", 5))
                for settlement in message.batch.settlements:
                    yield self._settled(settlement)
                credit += message.batch.credit
            if not pushed and credit >= 3:
                pushed = True
                # One running, one held with attempts left, one held on its last attempt.
                for job in (_leased("a", 5), _leased("b", 3), _leased("c", 1)):
                    yield work_pb2.WorkResponse(job=job)


@pytest.mark.parametrize("features", [FEATURES, []], ids=["with-features", "older"])
def test_close_against_a_server_with_or_without_give_backs(features: list[str]) -> None:
    older = not features
    servicer = _StandIn(features)
    started: list[str] = []
    gate = threading.Event()

    def work(job: sepp.WorkerJob) -> None:
        started.append(job.id)
        if job.id == "a":
            gate.wait(30)

    with stand_in_server(servicer) as address, sepp.Client(address, transport="stream") as client:
        assert client.get_server_info().features == features
        worker = client.worker(["q"], concurrency=1, prefetch=2, fallback=work)
        worker.start()
        closer = threading.Thread(target=worker.close)
        try:
            eventually(lambda: worker.running == 1 and worker.held == 2 and started == ["a"] or None,
                       "one running and two held")
            closer.start()
            late = "nack d retry_delay_ms" if older else "nack d give_back"
            eventually(lambda: late in servicer.seen or None, "the job pushed after the stop given back")
        finally:
            gate.set()
            closer.join(30)
            worker.close()
    if older:
        assert started == ["a", "c"], "the held job on its last attempt ran"
        assert sorted(s for s in servicer.seen if s != "stop") == [
            "ack a", "ack c", "nack b retry_delay_ms", "nack d retry_delay_ms"]
    else:
        assert started == ["a"], "no held job ran"
        assert servicer.seen[0] == "stop", "the stop comes before the give-backs"
        assert sorted(servicer.seen[1:]) == ["ack a", "nack b give_back", "nack c give_back", "nack d give_back"]


class _Flood(queue_service_pb2_grpc.QueueServiceServicer):
    """Pushes a job for every slot of credit, up to `total`; counts the most leased at once."""

    def __init__(self, features: list[str], total: int) -> None:
        self.features = features
        self.total = total
        self.pushed = 0
        self.acked = 0
        self.most_leased = 0

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        return admin_pb2.GetServerInfoResponse(limits=admin_pb2.ServerLimits(max_reserve_jobs=1000),
                                               features=self.features)

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        for message in request_iterator:
            kind = message.WhichOneof("kind")
            credit = message.credit.jobs if kind == "credit" else message.batch.credit if kind == "batch" else 0
            for settlement in message.batch.settlements if kind == "batch" else []:
                if settlement.WhichOneof("kind") == "ack":
                    self.acked += 1
                yield settled_ok(settlement)
            for _ in range(credit):
                if self.pushed >= self.total:
                    break
                self.pushed += 1
                yield work_pb2.WorkResponse(job=_leased(f"j{self.pushed}", 5))
            self.most_leased = max(self.most_leased, self.pushed - self.acked)


@pytest.mark.parametrize("features", [FEATURES, []], ids=["with-features", "older"])
def test_prefetch_auto_leases_ahead_only_against_a_server_with_give_backs(features: list[str]) -> None:
    servicer = _Flood(features, 200)
    with stand_in_server(servicer) as address, sepp.Client(address, transport="stream") as client:
        worker = client.worker(["q"], concurrency=2, fallback=lambda job: None)
        worker.start()
        try:
            eventually(lambda: servicer.acked >= 100 or None, "a hundred quick jobs run")
        finally:
            worker.close(timeout_ms=0)
    if features:
        assert servicer.most_leased > 2, f"leased ahead: {servicer.most_leased} at once"
    else:
        assert servicer.most_leased == 2, "never more leased than its threads"
