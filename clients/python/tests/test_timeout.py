"""Hard execution timeout against a real server, through the real Worker on both
transports: once the attempt's `timeout_ms` passes on the server's clock, the
handler's `job.cancelled` is set with a JobTimeoutError (on the stream by the
server's notice; over unary calls at the next extend, which the server refuses
with `job_timed_out`), the handler stops, the worker settles nothing of that
attempt, and the server fails it with reason `timeout`."""
from __future__ import annotations

import threading

import pytest
from conftest import eventually
from test_worker import TRANSPORTS, start

import sepp


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_hanging_handler_is_stopped_by_its_timeout(client: sepp.Client, queue: str, transport: str) -> None:
    running = threading.Event()
    stopped = threading.Event()
    reasons: list[BaseException | None] = []
    steps = [0]

    def hang(job: sepp.WorkerJob) -> str:
        running.set()
        # Works in steps until told to stop: a handler that would run for ever.
        while not job.cancelled.wait(0.01):
            steps[0] += 1
        reasons.append(job.cancel_reason)
        stopped.set()
        return "returned after the timeout"

    enqueued = client.enqueue(queue, "hang", execution_timeout_ms=1000, max_attempts=1)
    worker, events = start(client, queue, transport, lease_ms=60_000 if transport == "stream" else 600,
                           handlers={"hang": hang})
    try:
        assert running.wait(30)
        leased = client.get_job(enqueued.id)
        assert leased.timeout_ms == 1000 and leased.timeout_at_ms is not None
        assert leased.lease_deadline_ms is not None and leased.lease_deadline_ms <= leased.timeout_at_ms
        [timed_out] = events.wait("timed_out")
        assert stopped.wait(30), "the handler stopped"
        job = eventually(lambda: client.get_job(enqueued.id) if client.get_job(enqueued.id).state == "dead" else None,
                         "the job dead")
    finally:
        worker.close()
    assert isinstance(timed_out.error, sepp.JobTimeoutError) and timed_out.error.code == "job_timed_out"
    assert isinstance(reasons[0], sepp.JobTimeoutError) and isinstance(reasons[0], sepp.LeaseLostError)
    assert job.dead_reason == "timeout" and job.attempt == 1
    assert (job.last_error or "").startswith("timeout: "), "the server ended it; the worker sent no nack"
    assert not events.of("completed") and not events.of("failed") and not events.of("lease_lost")


def test_an_extend_past_the_timeout_is_refused(client: sepp.Client, queue: str) -> None:
    client.enqueue(queue, "t", execution_timeout_ms=300, max_attempts=1)
    [lease] = client.reserve([queue], max_jobs=1, lease_ms=60_000, wait_ms=5000)
    assert lease.timeout_at_ms is not None and lease.lease_deadline_ms == lease.timeout_at_ms
    with pytest.raises(sepp.JobTimeoutError) as refused:
        eventually(lambda: client.extend(lease, 60_000) and None, "the timeout to pass")
    assert refused.value.code == "job_timed_out"
