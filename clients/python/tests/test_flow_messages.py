"""Flows pending together travel in one Produce message (`flows`), each answered on its own,
against a stand-in server that holds its answers until the test lets them go (so the flows
queued meanwhile gather deterministically) and that may be older than `flows` or than flows on
Produce; and against a real server, from many threads."""
from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import pytest
from conftest import PRODUCER_KEY, ServerProcess, counts, eventually, stand_in_server

import sepp
from sepp.v1 import flow_pb2, produce_pb2, queue_service_pb2_grpc


def _stored(request: flow_pb2.EnqueueFlowRequest) -> flow_pb2.EnqueueFlowResponse:
    jobs = [flow_pb2.FlowJobId(name=j.name, job_id=f"id-{j.job.type}", deduplicated=False) for j in request.jobs]
    return flow_pb2.EnqueueFlowResponse(committed=True, jobs=jobs)


class StandIn(queue_service_pb2_grpc.QueueServiceServicer):
    """Answers Produce messages once `release` is set. `knows`: the fields of a Produce message
    it knows (`flow`, `flows`); a message carrying another is a message of no jobs to it. A flow
    whose job's type is `refuse` is refused on its own."""

    def __init__(self, knows: set[str]) -> None:
        self.knows = knows
        self.release = threading.Event()
        self.seen: list[str] = []

    def Produce(self, requests: Iterator[produce_pb2.ProduceRequest], context: Any) -> Iterator[Any]:  # noqa: N802
        for message in requests:
            kind = "flows" if message.HasField("flows") else "flow" if message.HasField("flow") else "jobs"
            self.seen.append(f"produce {kind}")
            self.release.wait(30)
            if kind not in self.knows:
                yield produce_pb2.ProduceResponse(sequence=message.sequence, code=3, message="jobs: the batch is empty")
            elif kind == "flow":
                yield produce_pb2.ProduceResponse(sequence=message.sequence, flow=_stored(message.flow))
            else:
                answers = [
                    produce_pb2.ProduceFlowAnswer(code=3, message="flow: refused here")
                    if f.jobs[0].job.type == "refuse" else produce_pb2.ProduceFlowAnswer(flow=_stored(f))
                    for f in message.flows.flows
                ]
                yield produce_pb2.ProduceResponse(sequence=message.sequence,
                                                  flows=produce_pb2.ProduceFlowAnswers(answers=answers))

    def EnqueueFlow(self, request: flow_pb2.EnqueueFlowRequest, context: Any) -> Any:  # noqa: N802
        self.seen.append("EnqueueFlow")
        return _stored(request)


@contextlib.contextmanager
def stand_in(knows: set[str]) -> Iterator[tuple[StandIn, str]]:
    servicer = StandIn(knows)
    with stand_in_server(servicer) as address:
        try:
            yield servicer, address
        finally:
            servicer.release.set()


def _flow(kind: str) -> sepp.Flow:
    return sepp.Flow().add("a", sepp.JobSpec("q", kind))


@pytest.mark.parametrize("knows", [{"flow", "flows"}, {"flow"}, set()],
                         ids=["current", "older-than-flows", "older-than-flows-on-produce"])
def test_flows_pending_together_share_a_message(knows: set[str]) -> None:
    outcomes: dict[str, str] = {}

    def enqueue(kind: str) -> None:
        try:
            outcomes[kind] = client.enqueue_flow(_flow(kind))["a"].id
        except sepp.SeppError as error:
            outcomes[kind] = f"{error.code}: {error}"

    with stand_in(knows) as (servicer, address), sepp.Client(address) as client, \
            ThreadPoolExecutor(max_workers=5) as pool:
        # Two messages of one flow each, unanswered: the limit of messages in flight.
        for sent, kind in enumerate(["first", "second"], 1):
            pool.submit(enqueue, kind)
            eventually(lambda: client.stats().produce_messages == sent, f"message {sent}")  # noqa: B023
        # What comes meanwhile waits for the next message, together.
        for kind in ["third", "refuse", "fifth"]:
            pool.submit(enqueue, kind)
        batcher = client._batcher  # noqa: SLF001 - the flows must be queued before the answers go
        eventually(lambda: len(batcher._pending) == 3, "three flows pending")  # noqa: SLF001
        servicer.release.set()
        pool.shutdown(wait=True)
        # A flow enqueued after what was learnt of the server.
        enqueue("sixth")
    produced = [s for s in servicer.seen if s.startswith("produce")]
    if knows == {"flow", "flows"}:
        assert produced == ["produce flow", "produce flow", "produce flows", "produce flow"]
        assert outcomes.pop("refuse") == "invalid_argument: flow: refused here"
    elif knows == {"flow"}:
        # The refused message stored nothing; its flows go again one per message, as do the later ones.
        assert produced == ["produce flow", "produce flow", "produce flows"] + ["produce flow"] * 4
        assert outcomes.pop("refuse") == "id-refuse"
    else:
        # Each flow refused as a `flow` takes EnqueueFlow; the later ones take it at once.
        assert produced == ["produce flow", "produce flow", "produce flows"] + ["produce flow"] * 3
        assert outcomes.pop("refuse") == "id-refuse"
    assert outcomes == {t: f"id-{t}" for t in ["first", "second", "third", "fifth", "sixth"]}
    assert servicer.seen.count("EnqueueFlow") == (0 if "flow" in knows else 6)


def test_flows_from_many_threads_share_messages_and_fail_alone(server: ServerProcess, client: sepp.Client,
                                                               queue: str) -> None:
    """Ten threads each enqueue six flows, every third one refused (a cycle): each refused flow
    fails with its own error, the others are stored, and flows gather in messages while
    others are on their way to the disk (fewer messages than flows)."""
    def enqueue(j: int) -> str:
        flow = sepp.Flow().add("a", sepp.JobSpec(queue, "t"), after=["a"] if j % 3 == 2 else [])
        flow.add("b", sepp.JobSpec(queue, "t"), after=["a"])
        try:
            return producer.enqueue_flow(flow)["b"].id
        except sepp.SeppError as error:
            return f"refused {error.code}"

    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        with ThreadPoolExecutor(max_workers=10) as pool:
            outcomes = list(pool.map(lambda i: [enqueue(j) for j in range(6)], range(10)))
        stats = producer.stats()
    refused = [o for each in outcomes for o in each if o.startswith("refused")]
    assert refused == ["refused invalid_argument"] * 20
    waiting = {o for each in outcomes for o in each} - set(refused)
    assert len(waiting) == 40
    assert stats.produce_messages < 30, stats  # 15-18 here, quiet; 60 when each flow took a message
    stored = counts(client, queue)
    assert stored is not None and stored.ready == 40, "each stored flow's first job"
    assert client.get_job(waiting.pop()).state == "waiting"
