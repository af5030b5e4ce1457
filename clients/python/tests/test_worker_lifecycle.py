"""The Worker's lifecycle against a real server: graceful shutdown with a job
running (by close(), and by SIGTERM to a process in run()), the shutdown
timeout, a server restart under a running worker, an unreachable server, and
errors that retrying cannot fix."""
from __future__ import annotations

import logging
import os
import pathlib
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from typing import IO

import pytest
from conftest import ADMIN_KEY, ServerProcess, counts, eventually
from test_worker import TRANSPORTS, Events, start

import sepp

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_close_waits_for_the_running_job_and_settles_it(client: sepp.Client, queue: str, transport: str) -> None:
    running, release = threading.Event(), threading.Event()

    def job_in_progress(job: sepp.WorkerJob) -> str:
        running.set()
        assert release.wait(30)
        return "done"

    client.enqueue(queue, "t")
    client.enqueue(queue, "t")
    worker, events = start(client, queue, transport, handlers={"t": job_in_progress})
    assert running.wait(30)
    closer = threading.Thread(target=worker.close)
    closer.start()
    eventually(lambda: worker.state == "closing", "the worker to start closing")
    release.set()
    closer.join(30)
    assert not closer.is_alive() and worker.state == "closed"
    [done] = events.of("completed")
    assert done.job is not None and done.job.result == "done"
    assert counts(client, queue) == sepp.StateCounts(0, 1, 0, 0, 0), "one acked, the other never taken"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_past_the_shutdown_timeout_running_jobs_are_cancelled(client: sepp.Client, queue: str, transport: str) -> None:
    running = threading.Event()
    reasons: list[BaseException | None] = []

    def stubborn(job: sepp.WorkerJob) -> None:
        running.set()
        job.cancelled.wait(60)
        reasons.append(job.cancel_reason)
        job.raise_if_cancelled()

    job_id = client.enqueue(queue, "t").id
    worker, events = start(client, queue, transport, handlers={"t": stubborn})
    assert running.wait(30)
    worker.close(timeout_ms=200)
    assert isinstance(reasons[0], sepp.SeppError) and reasons[0].code == "cancelled"
    [failed] = events.of("failed")
    assert failed.nack and failed.nack.state == "ready", "nacked for an immediate retry elsewhere"
    info = client.get_job(job_id)
    assert (info.state, info.attempt) == ("ready", 1) and "shutting down" in (info.last_error or "")


WORKER_SCRIPT = textwrap.dedent("""
    import logging, sys, time
    import sepp

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    client = sepp.Client(sys.argv[1], api_key=sys.argv[2])

    def slow(job):
        print("started", job.id, flush=True)
        time.sleep(1.0)  # a job that finishes on its own after the signal
        print("finished", job.id, flush=True)

    client.worker([sys.argv[3]], handlers={"slow": slow}, transport=sys.argv[4]).run()
    client.close()
    print("exited cleanly", flush=True)
""")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sigterm_lets_the_running_job_finish_then_exits_0(server: ServerProcess, client: sepp.Client, queue: str,
                                                          transport: str) -> None:
    job_id = client.enqueue(queue, "slow").id
    child = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, server.address, ADMIN_KEY, queue, transport],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == f"started {job_id}\n"
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert out == f"finished {job_id}\nexited cleanly\n"
    assert "SIGTERM: finishing 1 running jobs" in err
    assert counts(client, queue) == sepp.StateCounts(0, 0, 0, 0, 0), "the job was acked before the exit"


STUBBORN_SCRIPT = textwrap.dedent("""
    import logging, sys
    import sepp

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    client = sepp.Client(sys.argv[1], api_key=sys.argv[2])

    def stubborn(job):
        print("started", job.id, flush=True)
        job.cancelled.wait(60)
        print("cancelled:", job.cancel_reason, flush=True)
        job.raise_if_cancelled()

    client.worker([sys.argv[3]], handlers={"slow": stubborn}, shutdown_timeout_ms=60_000).run()
""")


def test_a_second_signal_stops_waiting_for_running_jobs(server: ServerProcess, client: sepp.Client, queue: str) -> None:
    job_id = client.enqueue(queue, "slow").id
    child = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_SCRIPT, server.address, ADMIN_KEY, queue],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert child.stdout is not None and child.stderr is not None
        stderr: IO[str] = child.stderr
        assert child.stdout.readline() == f"started {job_id}\n"
        child.send_signal(signal.SIGTERM)
        eventually(lambda: "finishing 1 running jobs" in stderr.readline(), "the worker to start closing")
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert out.startswith("cancelled: the worker is shutting down")
    info = client.get_job(job_id)
    assert (info.state, info.attempt) == ("ready", 1), "nacked for an immediate retry elsewhere"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_restart_under_a_running_worker(restartable_server: ServerProcess, queue: str, transport: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """The server stops (gracefully) while a job runs and comes back on the same address: the
    worker logs the outage, reconnects with backoff, settles the job it was running (its
    lease survived the restart) and takes new jobs."""
    caplog.set_level(logging.INFO, logger="sepp.worker")
    running, release = threading.Event(), threading.Event()
    done: list[str] = []

    def handler(job: sepp.WorkerJob) -> None:
        if job.data == "during":
            running.set()
            assert release.wait(60)
        done.append(job.data)

    with sepp.Client(restartable_server.address, api_key=ADMIN_KEY) as client:
        client.enqueue(queue, "t", json="during")
        # Two slots, so the unary worker has a Reserve poll that meets the outage too.
        worker, events = start(client, queue, transport, concurrency=2, lease_ms=60_000,
                               reconnect_max_delay_ms=500, handlers={"t": handler})
        try:
            assert running.wait(30)
            restartable_server.restart()
            events.wait("error")  # The worker noticed the outage.
            if transport == "stream":
                # No message comes while the job runs (but the answer to its lease's extend, 20 s on):
                # the new stream counts as connected once it has been open a second on a ready channel.
                eventually(lambda: any("connected to sepp" in r.getMessage() for r in caplog.records) or None,
                           "the worker connected again", timeout_s=10)
            release.set()
            events.wait("completed")
            client.enqueue(queue, "t", json="after")
            events.wait("completed", 2)
        finally:
            worker.close()
        assert done == ["during", "after"]
        assert counts(client, queue) == sepp.StateCounts(0, 0, 0, 0, 0)
    messages = [r.getMessage() for r in caplog.records]
    assert any("cannot work with sepp" in m and "UNAVAILABLE" in m for m in messages), messages
    if transport == "stream":
        assert any("connected to sepp" in m and "again" in m for m in messages), messages


def test_an_unreachable_server_stops_run_after_max_unavailable_ms(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sepp.worker")
    with socket.socket() as probe:  # A port nothing listens on.
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    errors: list[BaseException] = []
    with sepp.Client(address) as client:
        worker = client.worker(["q"], handlers={"t": lambda job: None}, max_unavailable_ms=1500,
                               reconnect_max_delay_ms=300)

        def run() -> None:
            try:
                worker.run(handle_signals=False)
            except BaseException as error:  # noqa: BLE001
                errors.append(error)

        runner = threading.Thread(target=run)
        runner.start()
        runner.join(60)
    assert not runner.is_alive()
    assert isinstance(errors[0], sepp.UnavailableError) and "max_unavailable_ms" in str(errors[0])
    warnings = [r for r in caplog.records if "cannot work with sepp" in r.getMessage()]
    assert len(warnings) >= 2, "every failed reconnect is logged"
    assert worker.state == "closed"


def test_max_unavailable_ms_is_checked(client: sepp.Client) -> None:
    for limit in (0, -1, 1.5, True, "60000"):
        with pytest.raises(ValueError, match="max_unavailable_ms must be a positive integer number of ms"):
            client.worker(["q"], max_unavailable_ms=limit, fallback=print)
    assert client.worker(["q"], max_unavailable_ms=1, fallback=print).state == "idle"


def test_closing_the_client_closes_its_workers(server: ServerProcess, queue: str) -> None:
    done = threading.Event()
    client = sepp.Client(server.address, api_key=ADMIN_KEY)
    client.enqueue(queue, "t")
    worker = client.worker([queue], handlers={"t": lambda job: done.set()}).start()
    assert done.wait(30)
    client.close()
    assert worker.state == "closed"
    with pytest.raises(sepp.SeppError, match="closed"):
        client.enqueue(queue, "t")
