"""Batches and flows under refusals, with a real server (_batch_retries.py, workflows.py): with
`retry`, members of create_batch and add_to_batch refused `queue_full` are added again until the
queue has room, each stored once, and `seal` waits for them; with nothing refused a sealed
create_batch or add_to_batch is one call (`seal_if_all_stored`), an add whose answer was lost after
it sealed is answered when repeated, against a server that ignores that field the SDK seals, and a
seal that fails says which batch it left open. Without it the refusal is an outcome.
A flow is one all-or-nothing request the SDK cannot cut: over `limits.max_flow_jobs` (a reload
lowered it) or the server's `grpc.max_message_bytes`, its error names the limit and the flow's
size. The TypeScript SDK's tests of the same are in tests/client/batch-refusals.test.ts."""
from __future__ import annotations

import threading
from typing import Any, Callable

import grpc
import pytest
from conftest import ADMIN_KEY, ServerProcess, counts, eventually, reconfigured, stand_in_server

import sepp
from sepp.v1 import queue_service_pb2_grpc

RETRY = sepp.RetryOptions(max_attempts=1000, base_delay_ms=5, max_delay_ms=20)
QUEUE = "py-full"  # max_depth = 1 (conftest.py)


def _drain_one(client: sepp.Client) -> str:
    [lease] = client.reserve([QUEUE])
    client.ack(lease)
    return lease.id


def _ready(client: sepp.Client) -> int:
    state = counts(client, QUEUE)
    return state.ready if state is not None else 0


def _in_thread(call: Callable[[], sepp.BatchAdded]) -> tuple[threading.Thread, list[sepp.BatchAdded]]:
    done: list[sepp.BatchAdded] = []
    thread = threading.Thread(target=lambda: done.append(call()))
    thread.start()
    return thread, done


def test_batch_members_refused_queue_full_are_added_again_once_each_then_sealed(server: ServerProcess) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as once, \
            sepp.Client(server.address, api_key=ADMIN_KEY, retry=RETRY) as retried:
        # Without retry: the refusal is the member's outcome, the batch sealed in the one call.
        plain = once.create_batch(jobs=[sepp.JobSpec(QUEUE, "a"), sepp.JobSpec(QUEUE, "b")], seal=True)
        assert [o.ok or o.reason for o in plain.results] == [True, "queue_full"]
        assert plain.batch.state == "sealed"
        _drain_one(once)

        # With retry: `d` is added again while the queue is full, and stored once it has room.
        thread, done = _in_thread(lambda: retried.create_batch(
            jobs=[sepp.JobSpec(QUEUE, "c"), sepp.JobSpec(QUEUE, "d")], seal=True))
        eventually(lambda: _ready(once) == 1 or None, "c stored")
        first = _drain_one(once)
        thread.join(30)
        [created] = done
        assert [o.ok for o in created.results] == [True, True]
        assert (created.batch.state, created.batch.members) == ("sealed", 2)
        assert [once.get_job(o.id).type for o in created.results if o.id is not None] == ["c", "d"]
        assert created.results[0].id == first
        assert _ready(once) == 1, "d stored once"
        _drain_one(once)

        # add_to_batch alike, to an open batch, sealing it after: the queue holds one job, so `g`
        # waits for `e` and then `f` to leave.
        opened = retried.create_batch(jobs=[sepp.JobSpec(QUEUE, "e")])
        thread, done = _in_thread(lambda: retried.add_to_batch(
            opened.batch.id, [sepp.JobSpec(QUEUE, "f"), sepp.JobSpec(QUEUE, "g")], seal=True))
        assert _drain_one(once) == opened.results[0].id, "e leaves"
        eventually(lambda: _ready(once) == 1 or None, "f stored")
        _drain_one(once)
        thread.join(30)
        [added] = done
        assert [o.ok for o in added.results] == [True, True]
        assert (added.batch.state, added.batch.members) == ("sealed", 3)
        assert [once.get_job(o.id).type for o in added.results if o.id is not None] == ["f", "g"]
        assert _ready(once) == 1, "g stored once"
        _drain_one(once)


class CountsBatchCalls(queue_service_pb2_grpc.QueueServiceServicer):
    """Sends the batch calls on to a real server and records their names; `older`: drops
    `seal_if_all_stored` first, as a server older than the field; `seal_fails`: refuses SealBatch;
    `lose_add_answer`: answers the next AddToBatch UNAVAILABLE after the server applied it."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = queue_service_pb2_grpc.QueueServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.calls: list[str] = []
        self.older = False
        self.seal_fails = False
        self.lose_add_answer = False

    def _send(self, name: str, request: Any, context: Any) -> Any:
        self.calls.append(name)
        try:
            return getattr(self.stub, name)(request, metadata=(("authorization", f"Bearer {ADMIN_KEY}"),))
        except grpc.RpcError as error:
            context.abort(error.code(), error.details())

    def CreateBatch(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        if self.older:
            request.ClearField("seal_if_all_stored")
        return self._send("CreateBatch", request, context)

    def AddToBatch(self, request: Any, context: Any) -> Any:  # noqa: N802
        if self.older:
            request.ClearField("seal_if_all_stored")
        answer = self._send("AddToBatch", request, context)
        if self.lose_add_answer:
            self.lose_add_answer = False
            context.abort(grpc.StatusCode.UNAVAILABLE, "the answer was lost on cue")
        return answer

    def SealBatch(self, request: Any, context: Any) -> Any:  # noqa: N802
        if self.seal_fails:
            self.calls.append("SealBatch")
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the seal was refused on cue")
        return self._send("SealBatch", request, context)


def test_a_sealed_create_batch_with_nothing_refused_is_one_call_and_an_older_server_is_sealed_after(
        server: ServerProcess, client: sepp.Client, queue: str) -> None:
    counting = CountsBatchCalls(server.address)
    with stand_in_server(counting) as address, sepp.Client(address, retry=RETRY) as retried:
        one = retried.create_batch(jobs=[sepp.JobSpec(queue, "a")], seal=True)
        assert (one.batch.state, one.batch.members, counting.calls) == ("sealed", 1, ["CreateBatch"])
        opened = client.create_batch()
        counting.calls.clear()
        added = retried.add_to_batch(opened.batch.id, [sepp.JobSpec(queue, "a")], seal=True)
        assert (added.batch.state, added.batch.members, counting.calls) == ("sealed", 1, ["AddToBatch"])

        # The add's answer is lost after it sealed: its repeat is answered as the first.
        opened = client.create_batch()
        counting.calls.clear()
        counting.lose_add_answer = True
        lost = retried.add_to_batch(opened.batch.id, [sepp.JobSpec(queue, "l1"), sepp.JobSpec(queue, "l2")],
                                    seal=True)
        assert (lost.batch.state, lost.batch.members, counting.calls) == ("sealed", 2, ["AddToBatch"] * 2)
        assert [o.ok and o.deduplicated for o in lost.results] == [True, True]
        _, members = client.get_batch(opened.batch.id)
        assert [m.job_id for m in members] == [o.id for o in lost.results]

        # A server that ignores seal_if_all_stored answers the batch open: the SDK seals it.
        counting.calls.clear()
        counting.older = True
        older = retried.create_batch(jobs=[sepp.JobSpec(queue, "b")], seal=True)
        assert (older.batch.state, counting.calls) == ("sealed", ["CreateBatch", "SealBatch"])
        opened = client.create_batch()
        counting.calls.clear()
        older_add = retried.add_to_batch(opened.batch.id, [sepp.JobSpec(queue, "b")], seal=True)
        assert (older_add.batch.state, counting.calls) == ("sealed", ["AddToBatch", "SealBatch"])

        # The seal fails: the error says which batch is left open, and it is.
        counting.seal_fails = True
        with pytest.raises(sepp.BatchLeftOpenError) as left:
            retried.create_batch(jobs=[sepp.JobSpec(queue, "c")], seal=True)
    counting.channel.close()
    assert left.value.code == "failed_precondition"
    assert left.value.message.startswith(f"batch {left.value.batch_id} is stored with its members but left open")
    assert "refused on cue" in left.value.message
    batch, _ = client.get_batch(left.value.batch_id, members_limit=0)
    assert (batch.state, batch.members) == ("open", 1)


def test_a_flow_over_a_lowered_limit_names_the_limit_and_the_flow_size(
        server: ServerProcess, small_message_server: ServerProcess) -> None:
    flow = sepp.Flow()
    flow.add("a", sepp.JobSpec("py-flow-limit", "t"))
    flow.add("b", sepp.JobSpec("py-flow-limit", "t"), after=["a"])
    flow.add("c", sepp.JobSpec("py-flow-limit", "t"), after=["b"])
    with reconfigured(server, "[limits]\nmax_flow_jobs = 2\n"), \
            sepp.Client(server.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        with pytest.raises(sepp.SeppError) as over_jobs:
            client.enqueue_flow(flow)
    assert (over_jobs.value.grpc_code, over_jobs.value.retry) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "never")
    assert over_jobs.value.message.startswith("the flow (3 jobs, about ")
    assert "is one all-or-nothing request" in over_jobs.value.message
    assert "the limit is 2 (limits.max_flow_jobs)" in over_jobs.value.message

    # Over the server's message size (set at its start, as a restart lowers it).
    large = sepp.Flow()
    for name in ("a", "b", "c"):
        large.add(name, sepp.JobSpec("py-flow-bytes", "t", b"x" * (500 * 1024)))
    with sepp.Client(small_message_server.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        with pytest.raises(sepp.SeppError) as over_bytes:
            client.enqueue_flow(large)
    assert (over_bytes.value.grpc_code, over_bytes.value.retry) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "never")
    assert over_bytes.value.message.startswith("the flow (3 jobs, about 15")
    assert "vs 1228800" in over_bytes.value.message and "grpc.max_message_bytes" in over_bytes.value.message
