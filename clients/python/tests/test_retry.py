"""The client's `retry` option against a stand-in server that answers UNAVAILABLE
a set number of times: safe calls are repeated, an enqueue only when every job
has an idempotency key. (A real sepp answers UNAVAILABLE only while shutting
down or when its disk fails, which a test cannot time.)"""
from __future__ import annotations

from typing import Any, Iterator

import grpc
import pytest
from conftest import stand_in_server

import sepp
from sepp.errors import connection_closed_by_server
from sepp.v1 import admin_pb2, job_pb2, produce_pb2, queue_service_pb2_grpc


class Flaky(queue_service_pb2_grpc.QueueServiceServicer):
    """Fails the first `failures` calls of each method with UNAVAILABLE (or `code`), then answers."""

    def __init__(self, failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE,
                 message: str = "storage unavailable") -> None:
        self.failures = failures
        self.code = code
        self.message = message
        self.calls: dict[str, int] = {}
        self.keys: list[str] = []
        """The idempotency key of each job of each EnqueueBatch call."""
        self.stored: dict[str, str] = {}
        """Job ids by key: what the stand-in stored."""

    def _fail(self, name: str, context: Any) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= self.failures:
            context.abort(self.code, self.message)

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        self._fail("GetServerInfo", context)
        return admin_pb2.GetServerInfoResponse(version="flaky")

    def EnqueueBatch(self, request: Any, context: Any) -> Any:  # noqa: N802
        # Stores each job before it fails the call, as a server whose database failed over
        # mid-commit does; a key seen before answers the stored job, as a real server does.
        accepted = []
        for job in request.jobs:
            self.keys.append(job.idempotency_key)
            known = job.idempotency_key in self.stored
            if not known:
                self.stored[job.idempotency_key or f"no-key-{len(self.stored)}"] = f"id-{len(self.stored)}"
            job_id = self.stored[job.idempotency_key] if job.idempotency_key else f"id-{len(self.stored) - 1}"
            accepted.append(job_pb2.EnqueueResult(accepted=job_pb2.EnqueueAccepted(job_id=job_id, deduplicated=known)))
        self._fail("EnqueueBatch", context)
        return produce_pb2.EnqueueBatchResponse(results=accepted)


@pytest.fixture
def flaky() -> Iterator[tuple[Flaky, str]]:
    servicer = Flaky(failures=2)
    with stand_in_server(servicer) as address:
        yield servicer, address


def test_safe_calls_are_retried(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    with sepp.Client(address, retry=sepp.RetryOptions(max_attempts=3, base_delay_ms=10)) as client:
        assert client.get_server_info().version == "flaky"
    assert servicer.calls["GetServerInfo"] == 3


def test_calls_reset_by_the_servers_http2_layer_are_retried_as_unavailable_ones() -> None:
    """grpc's C core reports a call the server's HTTP/2 layer reset as it ended the connection
    (Node's bound on cancelled calls) as INTERNAL "Received RST_STREAM with error code 2"; a
    stand-in answers with that status, since a test cannot make Node's HTTP/2 layer reset one
    call on cue. A safe call is repeated as after UNAVAILABLE; without retry it is raised as it
    came; another INTERNAL is never repeated."""
    reset = "Received RST_STREAM with error code 2"
    assert connection_closed_by_server(sepp.SeppError(grpc.StatusCode.INTERNAL, reset))
    assert not connection_closed_by_server(sepp.SeppError(grpc.StatusCode.UNAVAILABLE, reset))
    assert not connection_closed_by_server(sepp.SeppError(grpc.StatusCode.INTERNAL, "the store failed"))
    assert not connection_closed_by_server(sepp.SeppError(grpc.StatusCode.INTERNAL, "Received RST_STREAM with error code 0"))
    for message, retried in ((reset, True), ("the store failed", False)):
        servicer = Flaky(failures=2, code=grpc.StatusCode.INTERNAL, message=message)
        with stand_in_server(servicer) as address:
            with sepp.Client(address, retry=sepp.RetryOptions(max_attempts=3, base_delay_ms=10)) as client:
                if retried:
                    assert client.get_server_info().version == "flaky"
                else:
                    with pytest.raises(sepp.SeppError) as raised:
                        client.get_server_info()
                    assert (raised.value.grpc_code, raised.value.message) == (grpc.StatusCode.INTERNAL, message)
            assert servicer.calls["GetServerInfo"] == (3 if retried else 1)
            servicer.failures = 10
            with sepp.Client(address) as client, pytest.raises(sepp.SeppError) as raised:
                client.get_server_info()
            assert raised.value.grpc_code == grpc.StatusCode.INTERNAL


def test_without_retry_unavailable_is_raised(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    with sepp.Client(address) as client, pytest.raises(sepp.UnavailableError):
        client.get_server_info()
    assert servicer.calls["GetServerInfo"] == 1


def test_without_retry_an_enqueue_is_sent_once(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    with sepp.Client(address, transport="unary") as client:
        with pytest.raises(sepp.UnavailableError):
            client.enqueue("q", "t", "keyless")
    assert servicer.calls["EnqueueBatch"] == 1
    assert servicer.keys == [""], "no key is added when the client does not retry"


def test_retried_enqueues_carry_a_key_and_are_stored_once(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    retry = sepp.RetryOptions(max_attempts=3, base_delay_ms=10)
    with sepp.Client(address, retry=retry, transport="unary") as client:
        # Keyless: the SDK gives it a key of its own and sends that key each time.
        enqueued = client.enqueue("q", "t", "keyless")
        assert servicer.calls["EnqueueBatch"] == 3
        assert len(set(servicer.keys)) == 1 and servicer.keys[0].startswith("sepp-retry:")
        assert servicer.stored == {servicer.keys[0]: enqueued.id}, "stored once, answered with the stored id"
        assert enqueued.deduplicated, "the answer of the last try is the stored job's"
        # A key of the caller's own is kept.
        assert client.enqueue("q", "t", "keyed", idempotency_key="order-1").id == "id-1"
        assert servicer.keys[-1] == "order-1"