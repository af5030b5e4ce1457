"""The advice on repeating one item of a stream (docs/protocol.md, "Whether to repeat a call"): a
Produce message's `retry` and a Work settlement's `Settled.retry` say what a unary call's
`sepp-retry` trailer says, and the client acts on them as on the trailer: "never" fails the item at
once with its error, "later" (and "operator") is retried with the client's backoff. A real server
refuses a message over its `max_batch_jobs` ("never") and an enqueue while its disk is full
("later"); no real server refuses a settlement with advice on cue, so a stand-in does. The
TypeScript SDK's tests of the same are in tests/client/item-retry.test.ts."""
from __future__ import annotations

import logging
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Iterator

import grpc
import pytest
from conftest import ADMIN_KEY, ServerProcess, eventually, stand_in_server
from test_worker import Events

import sepp
from sepp.v1 import job_pb2, queue_service_pb2_grpc, work_pb2

RETRY = sepp.RetryOptions(max_attempts=1000, base_delay_ms=5, max_delay_ms=20)
CAN_MOUNT = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


def test_batches_are_cut_at_the_server_bound_and_items_refused_never_or_later(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CAN_MOUNT:
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    mount_point = pathlib.Path(tempfile.mkdtemp(prefix="sepp-py-item-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], check=True)
    data_dir = mount_point / "data"
    data_dir.mkdir()
    monkeypatch.setenv("SEPP_DISK_RESERVE_BYTES", "256KiB")
    process = ServerProcess(data_dir, "[limits]\nmax_batch_jobs = 4\n")
    filler = mount_point / "filler"
    try:
        # The client's own bound (1000 by default) is above the server's, which it asks for.
        with sepp.Client(process.address, api_key=ADMIN_KEY, retry=RETRY) as client:
            outcomes = client.enqueue_batch([sepp.JobSpec("q", "t", f"{i}") for i in range(10)])
            assert [o.ok for o in outcomes] == [True] * 10
            assert client.stats().batches == 3, "in batches of 4, 4 and 2"
            futures = [client.enqueue_future(sepp.JobSpec("q", "t", f"{i}")) for i in range(6)]
            assert all(f.result(timeout=30).id for f in futures)
            assert client.stats().batches <= 6 and client.stats().enqueued_jobs == 16
            batches = client.stats().batches
            # All or nothing, so the client cannot split it: no repeat of it can pass.
            with pytest.raises(sepp.SeppError) as refused:
                client.enqueue_atomic([sepp.JobSpec("q", "t", f"{i}") for i in range(6)])
            assert refused.value.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert refused.value.retry == "never", "the answer says what the trailer would"
            assert "limits.max_batch_jobs" in refused.value.message
            assert client.stats().batches == batches + 1, "sent once, not repeated"

        try:
            filler.write_bytes(bytes(8 * 1024 * 1024))
        except OSError:
            pass  # ENOSPC: the filler took every free block it could.
        with sepp.Client(process.address, api_key=ADMIN_KEY) as once:
            # The first enqueue that needs room fails its commit; from then on enqueues are refused.
            with pytest.raises(sepp.SeppError) as full:
                once.enqueue("q", "t", "x" * (512 * 1024))
            assert full.value.grpc_code == grpc.StatusCode.UNAVAILABLE, full.value.message
            assert full.value.retry == "later", "the answer says what the trailer would"
            assert once.stats().produce_messages == 1, "without retries: sent once"
        with sepp.Client(process.address, api_key=ADMIN_KEY, retry=RETRY) as retried:
            future = retried.enqueue_future(sepp.JobSpec("q", "t", "small"))
            eventually(lambda: retried.stats().produce_messages >= 3, "the refused enqueue sent again")
            filler.unlink()
            # The server looks for room again at most once a second.
            assert future.result(timeout=30).id, "stored once the disk has room"
    finally:
        process.stop()
        subprocess.run(["umount", str(mount_point)], check=True)
        shutil.rmtree(mount_point, ignore_errors=True)
        process.config.unlink(missing_ok=True)


def test_a_message_over_the_server_message_size_is_never_repeated_and_a_result_that_big_fails_its_attempt(
        small_message_server: ServerProcess, queue: str) -> None:
    with sepp.Client(small_message_server.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        # All or nothing, so the client cannot split it: 1.5 MiB in one call, which no repeat passes.
        with pytest.raises(sepp.SeppError) as refused:
            client.enqueue_atomic([sepp.JobSpec(queue, "t", "x" * (500 * 1024)) for _ in range(3)])
        assert refused.value.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.message.startswith("Received message larger than max")
        assert "larger than the server's grpc.max_message_bytes" in refused.value.message
        assert "send fewer jobs or smaller payloads" in refused.value.message
        assert refused.value.retry == "never", "read as the server's never: no sepp trailer"
        assert client.stats().batches == 1, "sent once, not repeated"

        # Enqueues that fit alone but not together go in messages the server takes.
        futures = [client.enqueue_future(sepp.JobSpec(queue, "t", "x" * (500 * 1024))) for _ in range(3)]
        assert all(f.result(timeout=30).id for f in futures)
        assert client.stats().batches >= 3, "at least two messages for the three, not one"

        # A result larger than any message the server takes: the attempt fails saying so, at once,
        # instead of the job running again when its lease (here an hour) runs out.
        job_id = client.enqueue(f"{queue}-big-result", "t", "", max_attempts=1).id
        events = Events()
        worker = client.worker([f"{queue}-big-result"], lease_ms=3_600_000, on_event=events,
                               fallback=lambda job: "r" * (2 * 1024 * 1024))
        worker.start()
        try:
            failed = events.wait("failed")[0]
            assert "larger than max" in str(failed.error)
            eventually(lambda: client.get_job(job_id).state == "dead", "the job dead after its one attempt")
            assert worker.state == "running", "the worker goes on"
        finally:
            worker.close()


class _RefusesSettlements(queue_service_pb2_grpc.QueueServiceServicer):
    """Leases one job to each Work stream once it has credit, and answers every settlement with
    UNAVAILABLE and the advice its `worker_id` names ("never", "later") — the "later" one only
    until its third try, then OK."""

    def __init__(self) -> None:
        self.tries: dict[str, int] = {}
        self._lock = threading.Lock()

    def _settled(self, advice: str, request_id: int) -> work_pb2.WorkResponse:
        with self._lock:
            tries = self.tries[advice] = self.tries.get(advice, 0) + 1
        if advice == "later" and tries >= 3:
            return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
                request_id=request_id, code=0, ack=work_pb2.AckResponse()))
        return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
            request_id=request_id, code=grpc.StatusCode.UNAVAILABLE.value[0],
            message="stand-in: storage unavailable, nothing was written", error_code="unavailable", retry=advice))

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        advice = ""
        pushed = False
        for message in request_iterator:
            kind = message.WhichOneof("kind")
            if kind == "subscribe":
                advice = message.subscribe.worker_id
            elif kind == "ack":
                yield self._settled(advice, message.request_id)
            elif kind == "batch":
                for settlement in message.batch.settlements:
                    yield self._settled(advice, settlement.request_id)
            credit = message.credit.jobs if kind == "credit" else message.batch.credit if kind == "batch" else 0
            if credit > 0 and not pushed:
                # Only against credit, as a server does: a Worker gives back a job it did not ask for.
                pushed = True
                yield work_pb2.WorkResponse(job=job_pb2.LeasedJob(
                    job_id=f"job-{advice}", queue="q", type="t", attempt=1, max_attempts=5,
                    lease_deadline_ms=int((time.time() + 60) * 1000)))


@pytest.fixture(scope="module")
def refusing() -> Iterator[tuple[str, _RefusesSettlements]]:
    servicer = _RefusesSettlements()
    with stand_in_server(servicer) as address:
        yield address, servicer


def test_an_ack_refused_never_fails_at_once_and_one_refused_later_is_retried(
        refusing: tuple[str, _RefusesSettlements], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sepp.worker")
    address, servicer = refusing
    with sepp.Client(address) as client:
        for advice in ("never", "later"):
            events = Events()
            worker = client.worker(["q"], worker_id=advice, concurrency=1, on_event=events,
                                   fallback=lambda job: "done", reconnect_base_delay_ms=1, reconnect_max_delay_ms=5)
            worker.start()
            try:
                if advice == "never":
                    error = events.wait("error")[0].error
                    assert isinstance(error, sepp.SeppError)
                    assert error.grpc_code == grpc.StatusCode.UNAVAILABLE and error.retry == "never"
                    assert events.of("completed") == []
                    assert servicer.tries["never"] == 1, "the ack was not sent again"
                else:
                    events.wait("completed")
                    assert servicer.tries["later"] == 3
                    retried = [r.getMessage() for r in caplog.records if "job-later" in r.getMessage()]
                    assert len(retried) == 2 and all("retrying in" in line for line in retried), \
                        "each refused try reported, and tried again"
            finally:
                worker.close()
