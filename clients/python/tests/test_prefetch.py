"""A Worker's `prefetch` against a real server, on both transports: jobs leased
beyond `concurrency` wait in the worker for a slot, their leases are extended
while they wait, a cancel or a hard timeout drops a held job unstarted, held
jobs are refilled in chunks of half the prefetch, and `close()` gives held
jobs back at once without counting an attempt, even one on its last attempt."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import grpc
import pytest
from conftest import counts, eventually
from test_worker import TRANSPORTS, Events, start

import sepp
from sepp._held import GIVE_BACK_THREADS


def gated(client: sepp.Client, queue: str, transport: str, **options: Any) -> tuple[sepp.Worker, Events, list[str],
                                                                                     threading.Event]:
    """A worker of one slot whose handler records each job it starts and waits for the gate."""
    started: list[str] = []
    gate = threading.Event()

    def work(job: sepp.WorkerJob) -> None:
        started.append(job.id)
        gate.wait(30)

    worker, events = start(client, queue, transport, **{"concurrency": 1, "prefetch": 2, "fallback": work, **options})
    return worker, events, started, gate


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_held_jobs_wait_for_a_slot_and_run_in_order(client: sepp.Client, queue: str, transport: str) -> None:
    ids = [client.enqueue(queue, "j", json=i).id for i in range(5)]
    worker, events, started, gate = gated(client, queue, transport)
    try:
        # `running` counts a job from its hand-off to the handler thread, before the handler starts.
        eventually(lambda: worker.running == 1 and worker.held == 2 and len(started) == 1 or None,
                   "one running (its handler started) and two held")
        assert started == ids[:1], "held jobs have not started"
        leased = counts(client, queue)
        assert leased is not None and (leased.leased, leased.ready) == (3, 2), leased
        gate.set()
        events.wait("completed", 5)
    finally:
        gate.set()
        worker.close()
    assert started == ids, "every job ran, in the queue order"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_held_lease_is_extended_while_it_waits(client: sepp.Client, queue: str, transport: str) -> None:
    first = client.enqueue(queue, "j", json=0).id
    second = client.enqueue(queue, "j", json=1).id
    worker, events, started, gate = gated(client, queue, transport, prefetch=1, lease_ms=600)
    try:
        eventually(lambda: worker.held == 1 or None, "the second job held")
        # Past the first lease's end (600 ms): the held lease is extended every 200 ms.
        eventually(lambda: len([e for e in events.of("extended") if e.job and e.job.id == second]) >= 4 or None,
                   "four extends of the held lease")
        held = client.get_job(second)
        assert held.state == "leased" and (held.lease_deadline_ms or 0) > time.time() * 1000 - 100
        gate.set()
        events.wait("completed", 2)
    finally:
        gate.set()
        worker.close()
    assert started == [first, second]
    assert not events.of("lease_lost")
    assert [e.job.attempt for e in events.of("completed") if e.job] == [1, 1], "no lease ran out"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_held_job_whose_lease_ran_out_unextended_is_dropped(client: sepp.Client, queue: str, transport: str) -> None:
    first = client.enqueue(queue, "j", json=0).id
    second = client.enqueue(queue, "j", json=1).id
    worker, events, started, gate = gated(client, queue, transport, prefetch=1, lease_ms=600)
    # Every extend of the held job's first lease fails as if the server could not be reached.
    extend = worker._transport.extend  # noqa: SLF001 - the outage is staged for one lease only

    def failing(lease: Any, lease_ms: int) -> Future[int]:
        if (lease.id, lease.attempt) != (second, 1):
            return extend(lease, lease_ms)
        out: Future[int] = Future()
        out.set_exception(sepp.UnavailableError(grpc.StatusCode.UNAVAILABLE, "sepp is not reachable (test)"))
        return out

    worker._transport.extend = failing  # type: ignore[assignment]  # noqa: SLF001
    try:
        eventually(lambda: worker.held == 1 or None, "the second job held")
        # Its third failed extend comes a whole lease after its delivery; on the server its lease ran
        # out (the first job's is extended) and the job is ready again.
        eventually(lambda: len([e for e in events.of("error") if e.job and e.job.id == second]) >= 3 or None,
                   "three failed extends of the held lease")
        eventually(lambda: client.get_job(second).state == "ready" or None, "the held lease ended")
        gate.set()
        done = events.wait("completed", 2)
    finally:
        gate.set()
        worker.close()
    attempts = [e.job.attempt for e in events.of("started") if e.job and e.job.id == second]
    assert attempts == [2], "the held job never started on its ended lease; its retry ran"
    lost = [(e.job.attempt, type(e.error)) for e in events.of("lease_lost") if e.job]
    assert lost == [(1, sepp.LeaseLostError)], "the dropped held lease is told as a lost one"
    assert {(e.job.id, e.job.attempt) for e in done if e.job} == {(first, 1), (second, 2)}
    assert started == [first, second]


@pytest.mark.parametrize("end", ["cancel", "timeout"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_cancel_or_a_hard_timeout_drops_a_held_job_unstarted(client: sepp.Client, queue: str, transport: str,
                                                                end: str) -> None:
    first = client.enqueue(queue, "j", json=0).id
    options: dict[str, Any] = {"execution_timeout_ms": 300, "max_attempts": 1} if end == "timeout" else {}
    second = client.enqueue(queue, "j", json=1, **options).id
    # Unary calls hear of either at the next extend: a short lease makes that soon.
    worker, events, started, gate = gated(client, queue, transport, prefetch=1, lease_ms=600)
    try:
        eventually(lambda: worker.held == 1 or None, "the second job held")
        if end == "cancel":
            client.cancel_job(second)
        ended = eventually(lambda: (lambda j: j if j.state in ("cancelled", "dead") else None)(client.get_job(second)),
                           f"the held job ended by its {end}")
        assert (ended.state, ended.dead_reason) == (("cancelled", None) if end == "cancel" else ("dead", "timeout"))
        eventually(lambda: worker.held == 0 or None, "the held job dropped")
        kind = "cancelled" if end == "cancel" else "timed_out"
        eventually(lambda: [e.job.id for e in events.of(kind) if e.job] == [second] or None,
                   f"a {kind} event for the held job, as for a running one")
        gate.set()
        events.wait("completed")
    finally:
        gate.set()
        worker.close()
    assert started == [first], f"the job ended by its {end} never started"


def test_a_mass_cancel_of_held_jobs_settles_them_on_a_bounded_set_of_threads(client: sepp.Client, queue: str) -> None:
    """Each held job cancelled is nacked (so it ends `cancelled` at once) on the worker's settler
    threads: 40 cancels start at most GIVE_BACK_THREADS threads, not one each."""
    ids = [job.id for job in client.enqueue_atomic([sepp.JobSpec(queue, "j", json=i) for i in range(41)])]
    worker, events, started, gate = gated(client, queue, "stream", prefetch=40)
    starts: list[str] = []
    real_start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        starts.append(thread.name)
        real_start(thread)

    try:
        eventually(lambda: worker.held == 40 or None, "40 jobs held")
        setattr(threading.Thread, "start", counting_start)  # noqa: B010 - a method replaced for the test
        try:
            for job_id in ids[1:]:
                client.cancel_job(job_id)
            eventually(lambda: all(client.get_job(i).state == "cancelled" for i in ids[1:]) or None,
                       "the 40 held jobs cancelled")
        finally:
            setattr(threading.Thread, "start", real_start)  # noqa: B010
        assert worker.held == 0
    finally:
        gate.set()
        worker.close()
    settlers = [name for name in starts if "give-back" in name]
    assert 1 <= len(settlers) <= GIVE_BACK_THREADS, settlers
    assert started == [ids[0]]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_close_gives_every_held_job_back_without_counting_an_attempt(client: sepp.Client, queue: str,
                                                                      transport: str) -> None:
    running = client.enqueue(queue, "j", json=0).id
    given = client.enqueue(queue, "j", json=1, max_attempts=3).id
    last = client.enqueue(queue, "j", json=2, max_attempts=1).id
    worker, events, started, gate = gated(client, queue, transport)
    closer = threading.Thread(target=worker.close)
    try:
        # `running` counts a job from its hand-off to the handler thread, before the handler starts.
        eventually(lambda: worker.running == 1 and worker.held == 2 and len(started) == 1 or None,
                   "one running (its handler started) and two held")
        closer.start()
        for job_id, max_attempts in ((given, 3), (last, 1)):
            back = eventually(lambda: (lambda j: j if j.state == "ready" else None)(client.get_job(job_id)),
                              "the held job given back")
            assert (back.attempt, back.max_attempts - back.attempt) == (1, max_attempts), \
                "no attempt counted: its number stays (never reused), its budget grows by one"
            assert (back.last_error, back.worker_id) == (None, None), "its lease undone, no failure recorded"
        assert client.get_job(running).state == "leased", "the running job is still running"
    finally:
        gate.set()
        if closer.is_alive():
            closer.join(30)
        worker.close()
    assert started == [running], "neither held job ran, not even the one on its last attempt"
    assert {e.job.id for e in events.of("completed") if e.job} == {running}
    assert not events.of("error")
    # Given back once: the stream stopped delivering first, so none came back to the closing worker.
    for job_id, max_attempts in ((given, 3), (last, 1)):
        back = client.get_job(job_id)
        assert (back.state, back.attempt, back.max_attempts) == ("ready", 1, max_attempts + 1)


def test_held_jobs_are_refilled_in_chunks_of_half_the_prefetch(client: sepp.Client, queue: str) -> None:
    client.enqueue_batch([sepp.JobSpec(queue, "j", json=i) for i in range(10)])
    gates: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def work(job: sepp.WorkerJob) -> None:
        gate = threading.Event()
        with lock:
            gates[job.id] = gate
        job.progress(1)  # Sent after whatever credit the worker gave as this job took its slot.
        gate.wait(30)

    def first_gate() -> str | None:
        with lock:
            return next(iter(gates), None)

    def finish_one(done: int) -> None:
        eventually(lambda: gates or None, "a job running")
        with lock:
            job_id = next(iter(gates))
            gates.pop(job_id).set()
        events.wait("completed", done)
        # A positive witness instead of a pause: the held job that took the slot has its report
        # stored, so the server has read, and leased for, any credit the worker sent before it.
        started = eventually(first_gate, "the next job to start")
        eventually(lambda: (j := client.get_job(started)).progress is not None and j.progress.percent == 1,
                   "the started job's progress report")

    worker, events = start(client, queue, "stream", concurrency=1, prefetch=4, fallback=work)
    try:
        eventually(lambda: worker.running == 1 and worker.held == 4 or None, "one running and four held")
        finish_one(1)
        # One held job started; one job's credit is less than the refill (2): none asked for yet.
        assert worker.held == 3
        leased = counts(client, queue)
        assert leased is not None and leased.leased == 4, leased
        finish_one(2)
        eventually(lambda: worker.held == 4 or None, "the held jobs refilled by a lease of two")
    finally:
        with lock:
            for gate in gates.values():
                gate.set()
        worker.close(timeout_ms=0)


def test_prefetch_is_checked(client: sepp.Client) -> None:
    for prefetch in (-1, 1.5, 1001, True, "AUTO", None):
        with pytest.raises(ValueError, match="prefetch must be \"auto\" or an integer from 0 to 1000"):
            client.worker(["q"], prefetch=prefetch, fallback=print)
    with pytest.raises(ValueError, match=r"concurrency \+ prefetch is 1100.*limits\.max_reserve_jobs"):
        client.worker(["q"], concurrency=600, prefetch=500, fallback=print)
