"""The client's `retry` option against a stand-in server that answers UNAVAILABLE
a set number of times: safe calls are repeated, an enqueue only when every job
has an idempotency key. (A real sepp answers UNAVAILABLE only while shutting
down or when its disk fails, which a test cannot time.)"""
from __future__ import annotations

from concurrent import futures
from typing import Any, Iterator

import grpc
import pytest

import sepp
from sepp.v1 import admin_pb2, job_pb2, produce_pb2, queue_service_pb2_grpc


class Flaky(queue_service_pb2_grpc.QueueServiceServicer):
    """Fails the first `failures` calls of each method with UNAVAILABLE, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}

    def _fail(self, name: str, context: Any) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= self.failures:
            context.abort(grpc.StatusCode.UNAVAILABLE, "storage unavailable")

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        self._fail("GetServerInfo", context)
        return admin_pb2.GetServerInfoResponse(version="flaky")

    def EnqueueBatch(self, request: Any, context: Any) -> Any:  # noqa: N802
        self._fail("EnqueueBatch", context)
        accepted = [job_pb2.EnqueueResult(accepted=job_pb2.EnqueueAccepted(job_id=f"id-{i}"))
                    for i, _ in enumerate(request.jobs)]
        return produce_pb2.EnqueueBatchResponse(results=accepted)


@pytest.fixture
def flaky() -> Iterator[tuple[Flaky, str]]:
    servicer = Flaky(failures=2)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    queue_service_pb2_grpc.add_QueueServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, f"127.0.0.1:{port}"
    finally:
        server.stop(0)


def test_safe_calls_are_retried(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    with sepp.Client(address, retry=sepp.RetryOptions(max_attempts=3, base_delay_ms=10)) as client:
        assert client.get_server_info().version == "flaky"
    assert servicer.calls["GetServerInfo"] == 3


def test_without_retry_unavailable_is_raised(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    with sepp.Client(address) as client, pytest.raises(sepp.UnavailableError):
        client.get_server_info()
    assert servicer.calls["GetServerInfo"] == 1


def test_only_keyed_enqueues_are_retried(flaky: tuple[Flaky, str]) -> None:
    servicer, address = flaky
    retry = sepp.RetryOptions(max_attempts=3, base_delay_ms=10)
    with sepp.Client(address, retry=retry, transport="unary") as client:
        with pytest.raises(sepp.UnavailableError):
            client.enqueue("q", "t", "keyless")
        assert servicer.calls["EnqueueBatch"] == 1, "a keyless job that may be stored is not sent twice"
        assert client.enqueue("q", "t", "keyed", idempotency_key="order-1").id == "id-0"
        assert servicer.calls["EnqueueBatch"] == 3
