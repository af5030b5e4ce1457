"""Request keys of the calls that can start a bulk operation: against a stand-in that loses
the first answers, the client's retries send the call's key each time (a new one per call); and
against a real server, a repeat under a key answers with the first operation while another
request under it is refused (`invalid_argument`)."""
from __future__ import annotations

from typing import Any

import grpc
import pytest
from conftest import eventually, stand_in_server

import sepp
from sepp.v1 import admin_pb2, bulk_operation_pb2, queue_service_pb2_grpc


class LosesAnswers(queue_service_pb2_grpc.QueueServiceServicer):
    """Records the request key of each bulk call, and fails the first `failures` of each
    method with UNAVAILABLE, as a server whose answer was lost after it started the operation."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.keys: dict[str, list[str]] = {}

    def _answer(self, name: str, request: Any, context: Any) -> bulk_operation_pb2.BulkOperation:
        keys = self.keys.setdefault(name, [])
        keys.append(request.request_key)
        if len(keys) % (self.failures + 1) != 0:
            context.abort(grpc.StatusCode.UNAVAILABLE, "connection dropped")
        return bulk_operation_pb2.BulkOperation(id=f"op-{request.request_key}", action="delete",
                                                state=bulk_operation_pb2.BULK_OPERATION_STATE_RUNNING)

    def CancelJobs(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        return admin_pb2.CancelJobsResponse(operation=self._answer("CancelJobs", request, context))

    def PurgeQueue(self, request: Any, context: Any) -> Any:  # noqa: N802
        return admin_pb2.PurgeQueueResponse(operation=self._answer("PurgeQueue", request, context))

    def DeleteDeadLetters(self, request: Any, context: Any) -> Any:  # noqa: N802
        return admin_pb2.DeleteDeadLettersResponse(operation=self._answer("DeleteDeadLetters", request, context))


def test_retries_of_a_bulk_call_send_its_key_each_time() -> None:
    servicer = LosesAnswers(failures=2)
    with stand_in_server(servicer) as address, \
            sepp.Client(address, retry=sepp.RetryOptions(max_attempts=3, base_delay_ms=10)) as client:
        first = client.cancel_jobs("q", background=True)
        second = client.cancel_jobs("q", background=True)
        client.queues.purge("q", background=True)
        client.dlq.delete("q", "all", background=True, request_key="mine-1")
    a, b = servicer.keys["CancelJobs"][:3], servicer.keys["CancelJobs"][3:]
    assert len(set(a)) == 1 and len(set(b)) == 1 and a[0] != b[0], "one key per call, sent on each retry"
    assert len(a[0]) == 22, "16 random bytes, base64url"
    assert first.operation is not None and first.operation.id == f"op-{a[0]}"
    assert second.operation is not None and second.operation.id == f"op-{b[0]}"
    assert len(set(servicer.keys["PurgeQueue"])) == 1 and servicer.keys["PurgeQueue"][0] != ""
    assert servicer.keys["DeleteDeadLetters"] == ["mine-1"] * 3


def test_a_repeat_under_a_key_answers_with_the_first_operation(client: sepp.Client, queue: str) -> None:
    client.enqueue_batch([sepp.JobSpec(queue, "t", payload="x") for _ in range(3)])
    first = client.jobs.start_bulk("delete", queue, request_key="py-repeat")
    again = client.jobs.start_bulk("delete", queue, request_key="py-repeat")
    assert again.id == first.id
    def ended() -> sepp.BulkOperation | None:
        op = client.jobs.bulk_operation(first.id)
        return op if op.state != "running" else None

    done = eventually(ended, "the delete to end")
    assert done.changed == 3
    entries = [e for e in client.audit.list(target=f"queue:{queue}").entries if e.details.get("operationId")]
    assert [e.details["operationId"] for e in entries] == [first.id], "one audit entry"
    with pytest.raises(sepp.SeppError, match="another request") as other:
        client.jobs.start_bulk("delete", queue, type="other", request_key="py-repeat")
    assert other.value.code == "invalid_argument"
    with pytest.raises(sepp.SeppError, match="request_key") as bad:
        client.jobs.start_bulk("delete", queue, request_key="not a key")
    assert bad.value.code == "invalid_argument"
