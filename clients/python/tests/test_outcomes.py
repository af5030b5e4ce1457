"""Outcomes against a real server, on both transports: a handler's return value is the
job's result, job.progress() reaches the server, wait_for answers for a job that
completes, dead-letters, is cancelled or times out (also for a job deleted on its ack
before the wait began), enqueue_and_wait finds a result on a queue that keeps no completed
jobs, and events() streams, resumes, survives a restart and goes on when the server closes
its connection."""
from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest
from conftest import ADMIN_KEY, ServerProcess, eventually, running_server
from test_worker import TRANSPORTS, start

import sepp
from sepp.errors import connection_closed_by_server
from sepp.v1 import work_pb2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_handler_return_values_are_results(client: sepp.Client, transport: str) -> None:
    queue = f"py-kept-{transport}"
    values: dict[str, Any] = {
        "json": {"sent": 3, "to": ["a", "b"]},
        "text": "all done",
        "bytes": b"\x01\x02",
        "custom": sepp.JobResult("<p>hi</p>", "text/html"),
        "none": None,
    }
    ids = {kind: client.enqueue(queue, kind).id for kind in values}
    worker, events = start(client, queue, transport, concurrency=5,
                           handlers={kind: (lambda v: lambda job: v)(v) for kind, v in values.items()})
    try:
        events.wait("completed", len(values))
    finally:
        worker.close()
    jobs = {kind: client.get_job(job_id) for kind, job_id in ids.items()}
    assert jobs["json"].result == {"sent": 3, "to": ["a", "b"]}
    assert jobs["json"].result_content_type == "application/json"
    assert jobs["text"].result == "all done"
    assert jobs["bytes"].result == b"\x01\x02"
    assert jobs["bytes"].result_content_type == "application/octet-stream"
    assert (jobs["custom"].result, jobs["custom"].result_content_type) == ("<p>hi</p>", "text/html")
    assert (jobs["none"].result, jobs["none"].result_bytes) == (None, 0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_progress_while_running_then_the_result(client: sepp.Client, queue: str, transport: str) -> None:
    reported = threading.Event()
    release = threading.Event()

    def long(job: sepp.WorkerJob) -> str:
        job.progress(10)
        job.progress(data={"step": "upload"})
        job.progress(60)
        with pytest.raises(ValueError, match="from 0 to 100"):
            job.progress(101)
        reported.set()
        release.wait(30)
        return "finished"

    job_id = client.enqueue(queue, "long").id
    worker, _ = start(client, queue, transport, handlers={"long": long})
    try:
        assert reported.wait(30)
        def stored() -> sepp.Job | None:
            job = client.get_job(job_id)
            return job if job.progress is not None and job.progress.percent == 60 else None

        running = eventually(stored, "the reports to be stored")
        assert running.state == "leased"
        assert running.progress is not None and running.progress.data == {"step": "upload"}
        # The queue keeps no completed jobs: hold a subscription (caught up) from before the
        # job can finish, so its outcome is in the backlog when wait_for looks (docs/protocol.md).
        with client.events(job_ids=[job_id]) as watching:
            assert watching.caught_up.wait(30)
            release.set()
            outcome = client.wait_for(job_id, timeout_ms=30_000)
    finally:
        release.set()
        worker.close()
    assert (outcome.state, outcome.result) == ("completed", "finished")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_result_over_the_limit_fails_the_attempt(client: sepp.Client, queue: str, transport: str) -> None:
    client.enqueue(queue, "big", max_attempts=1)
    worker, events = start(client, queue, transport, handlers={"big": lambda job: "x" * (65 * 1024)})
    try:
        failed = events.wait("failed")
    finally:
        worker.close()
    assert "the limit is 64 KiB (limits.max_result_bytes)" in str(failed[0].error)
    assert failed[0].nack is not None and failed[0].nack.state == "dead"


def test_wait_for_timed_out_says_where_the_job_is_then(client: sepp.Client, queue: str) -> None:
    job = client.enqueue(queue, "slow").id
    failed: dict[str, sepp.SeppError] = {}

    def wait() -> None:
        try:
            client.wait_for(job, timeout_ms=3_000)
        except sepp.SeppError as error:
            failed["e"] = error

    waiter = threading.Thread(target=wait)
    waiter.start()
    threading.Event().wait(1.0)  # The wait has subscribed and seen the job ready; then a worker leases it.
    assert [leased.id for leased in client.reserve([queue])] == [job]
    waiter.join(30)
    assert failed["e"].code == "deadline_exceeded"
    assert str(failed["e"]).endswith("did not finish within 3000 ms; it is leased"), str(failed["e"])


def test_wait_for_completed_dead_cancelled_timed_out_and_unknown(client: sepp.Client, queue: str) -> None:
    release = threading.Event()

    def bad(job: sepp.WorkerJob) -> None:
        raise sepp.DeadLetter("cannot parse the input")

    worker, _ = start(client, queue, "stream", concurrency=4, handlers={
        "ok": lambda job: (release.wait(30), {"echo": job.data})[1], "bad": bad,
    })
    try:
        ok = client.enqueue(queue, "ok", json={"n": 1}).id
        waiting: dict[str, sepp.JobOutcome] = {}
        waiter = threading.Thread(target=lambda: waiting.setdefault("o", client.wait_for(ok, timeout_ms=30_000)))
        waiter.start()
        release.set()
        waiter.join(60)
        assert (waiting["o"].state, waiting["o"].result) == ("completed", {"echo": {"n": 1}})

        dead = client.wait_for(client.enqueue(queue, "bad").id, timeout_ms=30_000)
        assert (dead.state, dead.error, dead.dead_reason) == ("dead", "cannot parse the input", "dead_lettered")

        later = client.enqueue(queue, "ok", delay_ms=3_600_000).id
        cancelled: dict[str, sepp.JobOutcome] = {}
        canceller = threading.Thread(target=lambda: cancelled.setdefault("o", client.wait_for(later, timeout_ms=30_000)))
        canceller.start()
        # The wait subscribes, then the cancel's event reaches it.
        eventually(lambda: client.get_job(later) and canceller.is_alive(), "the wait to start")
        threading.Event().wait(0.5)
        client.cancel_job(later)
        canceller.join(60)
        assert cancelled["o"].state == "cancelled"

        slow = client.enqueue(queue, "ok", delay_ms=3_600_000).id
        with pytest.raises(sepp.SeppError) as timed_out:
            client.wait_for(slow, timeout_ms=300)
        assert timed_out.value.code == "deadline_exceeded"
        assert "did not finish within 300 ms; it is scheduled" in str(timed_out.value)

        with pytest.raises(sepp.SeppError) as unknown:
            client.wait_for("01890f6e-7c3a-7000-8000-000000000000", timeout_ms=30_000)
        assert unknown.value.code == "not_found"
        assert "completed_retention_ms" in str(unknown.value)
    finally:
        release.set()
        worker.close()


def test_enqueue_and_wait_on_a_queue_keeping_no_completed_jobs(client: sepp.Client, queue: str) -> None:
    worker, _ = start(client, queue, "stream", concurrency=4, handlers={"add": lambda job: sum(job.data)})
    try:
        outcomes = [client.enqueue_and_wait(queue, "add", json=[i, 1], timeout_ms=30_000) for i in range(10)]
    finally:
        worker.close()
    assert [(o.state, o.result) for o in outcomes] == [("completed", i + 1) for i in range(10)]
    # The job itself is gone (not retained): get_job answers with its outcome only.
    gone = client.get_job(outcomes[0].job_id)
    assert (gone.outcome_only, gone.state, gone.payload) == (True, "completed", b"")


def test_events_in_order_and_resume_from_a_position(client: sepp.Client, queue: str) -> None:
    with client.events(queues=[queue]) as stream:
        eventually(lambda: stream.caught_up.is_set(), "the subscription")
        job_id = client.enqueue(queue, "t", priority=7).id
        [leased] = client.reserve([queue])
        client.report_progress(leased, 30, {"step": 1})
        client.ack(leased, result={"ok": True})
        seen: list[sepp.JobEvent] = []
        for event in stream:
            seen.append(event)
            if len(seen) == 4:
                break
        position = stream.position
    assert [(e.kind, e.job_id) for e in seen] == [(k, job_id) for k in ("enqueued", "leased", "progress", "completed")]
    assert seen[2].progress is not None and (seen[2].progress.percent, seen[2].progress.data) == (30, {"step": 1})
    assert (seen[3].result, seen[3].retained) == ({"ok": True}, False)
    assert [e.priority for e in seen] == [7, None, None, None], "the enqueued event carries the priority"
    assert position is not None and position.sequence == seen[3].sequence

    missed = [client.enqueue(queue, "t").id for _ in range(2)]
    with client.events(queues=[queue], resume_from=position) as resumed:
        got = [next(iter(resumed)).job_id, next(iter(resumed)).job_id]
    assert got == missed


def test_events_go_on_when_the_server_closes_the_connection_past_the_reset_bound(
        server: ServerProcess, queue: str) -> None:
    """Each call a client cancels (a closed subscription, a wait_for, a long-poll given up) sends
    an HTTP/2 RST_STREAM; past 1,000 of them on one connection the server sends GOAWAY
    INTERNAL_ERROR (docs/configuration.md, "Cancelled calls per connection"). grpc-js fails the
    calls open on it with INTERNAL, and the TypeScript SDK resumes them; grpc's C core usually
    keeps them going on the old connection and sends new calls over a new one, but a cancel that
    races the GOAWAY can make the server end the connection (seen on a loaded machine), failing
    the calls open on it with UNAVAILABLE or INTERNAL "Received RST_STREAM with error code 2".
    Either way a subscription open across it sees every event once, in order, and a wait_for gets
    its answer; a long-poll gets its job, or fails with one of those two errors and its caller
    reserves again (the lease a lost answer may have held expires)."""
    # Retries on, as docs/python.md advises: a unary call sent as the server ends the connection
    # fails with UNAVAILABLE ("Broken pipe", seen in CI) and is safe to repeat.
    with sepp.Client(server.address, api_key=ADMIN_KEY,
                     retry=sepp.RetryOptions(max_attempts=5, base_delay_ms=20)) as client:
        reset_bound_run(client, queue)


def reset_bound_run(client: sepp.Client, queue: str) -> None:
    # The channel's states: it leaves READY when the server closes the connection, the only sign
    # of it this side sees (the subscription itself goes on).
    states: list[grpc.ChannelConnectivity] = []
    client._conn.channel.subscribe(states.append, try_to_connect=False)

    def dropped() -> bool:
        ready = grpc.ChannelConnectivity.READY
        return ready in states and any(s != ready for s in states[states.index(ready):])

    waited_id = client.enqueue("py-reset-wait", "t").id
    outcome: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: outcome.setdefault("wait", client.wait_for(waited_id, timeout_ms=60_000)))
    def long_poll() -> None:
        try:
            outcome["poll"] = client.reserve(["py-reset-poll"], lease_ms=1000, wait_ms=60_000)
        except sepp.SeppError as error:
            outcome["poll_error"] = error

    poller = threading.Thread(target=long_poll)
    with client.events(queues=[queue]) as stream:
        eventually(lambda: stream.caught_up.is_set(), "the subscription")
        first = client.enqueue(queue, "t").id
        assert next(iter(stream)).job_id == first
        # A wait and a long-poll open on the connection too (they start well within the burst).
        waiter.start()
        poller.start()
        cancelled = 0
        while not dropped() and cancelled < 5_000:
            # A long-poll cancelled as it waits: the cheapest call to cancel (a closed `events()`
            # subscription costs ~3x more CPU).
            poll = client._conn.stub.Reserve.future(work_pb2.ReserveRequest(
                queues=["py-reset-empty"], max_jobs=1, lease_duration_ms=1000, wait_timeout_ms=60_000, worker_id="w"),
                metadata=client._conn.metadata)
            time.sleep(0.0005)
            poll.cancel()
            cancelled += 1
        assert dropped(), f"{cancelled} calls cancelled and the connection is still open"
        after = [client.enqueue(queue, "t").id for _ in range(3)]
        seen = [next(iter(stream)) for _ in after]
        position = stream.position
        [leased] = client.reserve(["py-reset-wait"])
        client.ack(leased, result="done")
        polled_id = client.enqueue("py-reset-poll", "t").id
        waiter.join(60)
        poller.join(60)
    print(f"the server closed the connection after {cancelled} cancelled calls")
    assert (outcome["wait"].state, outcome["wait"].result) == ("completed", "done")
    if "poll_error" in outcome:
        error = outcome["poll_error"]
        assert error.grpc_code == grpc.StatusCode.UNAVAILABLE or connection_closed_by_server(error), error
        print(f"the long-poll failed with the connection ({error.grpc_code.name}: {error.message}); reserving again")
        outcome["poll"] = eventually(lambda: client.reserve(["py-reset-poll"], wait_ms=2000) or None, "the job again")
    assert [job.id for job in outcome["poll"]] == [polled_id]
    assert [(e.kind, e.job_id) for e in seen] == [("enqueued", job_id) for job_id in after]
    assert position is not None and position.sequence == seen[-1].sequence


def test_wait_for_a_job_deleted_on_its_ack_before_the_wait() -> None:
    """A queue that keeps no completed jobs and nobody subscribed (no resume window, so no event is
    kept): the row is gone once acked, yet get_job and wait_for answer from the outcome the server
    keeps for limits.finished_outcome_ms."""
    with running_server("\n[limits]\nevent_resume_window_ms = 0\n") as own, \
            sepp.Client(own.address, api_key=ADMIN_KEY) as client:
        job_id = client.enqueue("py-gone", "sum", json={"terms": [1, 2]}).id
        [leased] = client.reserve(["py-gone"])
        client.ack(leased, result={"sum": 3})
        job = client.get_job(job_id)
        assert (job.outcome_only, job.state, job.attempt, job.result) == (True, "completed", 1, {"sum": 3})
        assert (job.payload, job.metadata) == (b"", {})
        outcome = client.wait_for(job_id, timeout_ms=30_000)
        assert (outcome.state, outcome.result) == ("completed", {"sum": 3})
        assert client.get_server_info().limits.finished_outcome_ms == 300_000


def test_wait_for_survives_a_server_restart(restartable_server: ServerProcess) -> None:
    with sepp.Client(restartable_server.address, api_key=ADMIN_KEY) as client:
        job_id = client.enqueue("py-kept-restart", "t").id
        outcome: dict[str, sepp.JobOutcome] = {}
        waiter = threading.Thread(target=lambda: outcome.setdefault("o", client.wait_for(job_id, timeout_ms=120_000)))
        waiter.start()
        threading.Event().wait(1.0)
        restartable_server.restart()
        # The restarted server has a new event stream: the wait's resume is refused, and it starts
        # over (from the backlog and GetJob; the queue keeps completed jobs, so however late it
        # subscribes again, it finds the outcome).
        def reserve() -> list[sepp.LeasedJob] | None:
            try:
                return client.reserve(["py-kept-restart"])
            except sepp.UnavailableError:
                return None  # still starting

        [leased] = eventually(reserve, "the job after the restart", 60)
        threading.Event().wait(1.0)
        client.ack(leased, result="after the restart")
        waiter.join(120)
    assert (outcome["o"].state, outcome["o"].result) == ("completed", "after the restart")
