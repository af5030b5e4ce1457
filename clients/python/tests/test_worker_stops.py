"""When a Worker stops and when it retries (docs/protocol.md, "What stops a Worker"): a Work
stream or Reserve refused with a status in FATAL_STATUSES, or marked `sepp-retry: never`, stops the
worker (said once, `run()` raises it); every other status (`sepp-retry: operator` too) is reported
and retried with backoff. Each status a real server
answers is shown on one, over both transports (UNAVAILABLE by a restart is
test_worker_lifecycle.py's test_a_server_restart_under_a_running_worker); the rest, and a stream
the server ends with OK, on a stand-in server that answers whatever status it is asked for. A
settlements batch the server refuses after a reload lowered `limits.max_batch_jobs` is cut again
and sent once instead, and the worker goes on (the Re-cut of _work_stream.py). The TypeScript
SDK's tests of the same are in tests/client/worker-stops.test.ts and worker-recut.test.ts."""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any, Iterator

import grpc
import pytest
from conftest import ADMIN_KEY, PRODUCER_KEY, SCOPED_KEY, UNKNOWN_KEY, ServerProcess, eventually, reconfigured, \
    stand_in_server
from test_worker import TRANSPORTS, Events

import sepp
from sepp._work_transport import FATAL_STATUSES
from sepp.v1 import admin_pb2, job_pb2, queue_service_pb2_grpc, work_pb2

STOPS = frozenset({
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
})
"""The table of docs/protocol.md: these stop a worker, every other status is retried."""

FAST_RECONNECTS: dict[str, Any] = {"reconnect_base_delay_ms": 1, "reconnect_max_delay_ms": 20}


def stops_with(client: sepp.Client, queues: list[str], transport: str,
               **options: Any) -> tuple[sepp.SeppError | None, Events, sepp.Worker]:
    """Runs a worker until it stops by itself and returns what `run()` raised; one that asks
    again instead (a second `error` event) is closed, and `run()` raises nothing."""
    events = Events()

    def on_event(event: sepp.WorkerEvent) -> None:
        events(event)
        if event.kind == "error" and len(events.of("error")) == 2:
            threading.Thread(target=worker.close, daemon=True).start()

    worker = client.worker(queues, transport=transport,
                           on_event=on_event, fallback=lambda job: None, **FAST_RECONNECTS, **options)
    try:
        worker.run(handle_signals=False)
    except sepp.SeppError as error:
        return error, events, worker
    return None, events, worker


def assert_stops(caplog: pytest.LogCaptureFixture, stopped: tuple[sepp.SeppError | None, Events, sepp.Worker],
                 code: grpc.StatusCode, message: str, what: str) -> None:
    error, events, worker = stopped
    assert error is not None, f"{what}: asked again instead of stopping"
    assert error.grpc_code == code, f"{what}: {error.grpc_code} {error.message}"
    assert re.search(message, error.message), f"{what}: {error.message}"
    assert worker.state == "closed", what
    assert len(events.of("error")) == 1, f"{what}: said once"
    stopping = [r for r in caplog.records if "stopping" in r.getMessage() and r.levelno == logging.ERROR]
    assert len(stopping) == 1, f"{what}: {[r.getMessage() for r in caplog.records]}"
    caplog.clear()


def assert_retries(client: sepp.Client, queues: list[str], transport: str, code: grpc.StatusCode, what: str,
                   **options: Any) -> list[sepp.WorkerEvent]:
    """The worker reports `code` and asks again, still running; closed afterwards."""
    events = Events()
    worker = client.worker(queues, transport=transport,
                           on_event=events, fallback=lambda job: None, **FAST_RECONNECTS, **options).start()
    try:
        eventually(lambda: len(events.of("error")) >= 2 or worker.state == "closed", f"{what}: a retry")
        errors = events.of("error")
        assert worker.state == "running" and len(errors) >= 2, f"{what}: stopped by {errors[-1].error}"
        assert isinstance(errors[0].error, sepp.SeppError) and errors[0].error.grpc_code == code, \
            f"{what}: {errors[0].error}"
        return errors
    finally:
        worker.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refusals_asking_again_cannot_change_stop_the_worker(server: ServerProcess, transport: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="sepp.worker")
    cases = [
        ("a key the server does not know", UNKNOWN_KEY, ["q"], grpc.StatusCode.UNAUTHENTICATED, "API key"),
        ("a key whose role may not take jobs", PRODUCER_KEY, ["q"], grpc.StatusCode.PERMISSION_DENIED,
         "role producer, which may not call (Work|Reserve)"),
        ("a queue outside the key's queues", SCOPED_KEY, ["py-scoped", "elsewhere"],
         grpc.StatusCode.PERMISSION_DENIED, "may use only the queues py-scoped"),
        ("a queue name the server refuses", ADMIN_KEY, ["no spaces allowed"], grpc.StatusCode.INVALID_ARGUMENT,
         "may use only letters, digits"),
    ]
    for what, key, queues, code, message in cases:
        with sepp.Client(server.address, api_key=key) as client:
            assert_stops(caplog, stops_with(client, queues, transport), code, message, f"{transport}, {what}")


@pytest.fixture
def limited_server(server: ServerProcess) -> Iterator[ServerProcess]:
    """The session server with lower limits for the test: 4 jobs per reserve or stream, one long
    poll at a time (none of an earlier test's still held)."""
    with reconfigured(server, "\n[limits]\nmax_reserve_jobs = 4\nmax_waiters = 1\n"), \
            sepp.Client(server.address, api_key=ADMIN_KEY) as client:
        eventually(lambda: client.list_workers_page().waiting_reserves == 0, "no long poll held")
        yield server


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_more_jobs_at_once_than_max_reserve_jobs_stops_the_worker(limited_server: ServerProcess, transport: str,
                                                                  queue: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="sepp.worker")
    with sepp.Client(limited_server.address, api_key=ADMIN_KEY) as client:
        stopped = stops_with(client, [queue], transport, concurrency=2, prefetch=8)
    assert_stops(caplog, stopped, grpc.StatusCode.INVALID_ARGUMENT,
                 r"the limit is 4 \(limits\.max_reserve_jobs\)|from 1 to 4 \(limits\.max_reserve_jobs\)", transport)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resource_exhausted_is_reported_and_retried_until_it_passes(limited_server: ServerProcess, transport: str,
                                                                    queue: str) -> None:
    busy = f"{queue}-busy"
    with sepp.Client(limited_server.address, api_key=ADMIN_KEY) as client:
        client.enqueue(busy, "later", delay_ms=3_600_000)  # The queue exists, with nothing ready.
        holder = client.worker([busy], fallback=lambda job: None).start()  # Takes the one place to wait.
        try:
            eventually(lambda: next((q.waiting_workers for q in client.list_queues() if q.name == busy), 0) == 1,
                       "the holder's long poll")
            events = Events()
            worker = client.worker([queue], transport=transport,
                                   on_event=events, fallback=lambda job: None, **FAST_RECONNECTS).start()
            try:
                errors = events.wait("error", 2)
                assert isinstance(errors[0].error, sepp.SeppError)
                assert errors[0].error.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "limits.max_waiters" in errors[0].error.message
                assert errors[0].error.retry == "later"  # The server's `sepp-retry` trailer.
                assert worker.state == "running"
                holder.close()
                job_id = client.enqueue(queue, "t").id
                events.wait("completed")
                assert client.get_job(job_id).state == "completed"
            finally:
                worker.close()
        finally:
            holder.close()


# ---------------------------------------------------------------------------------------------- stand-in

_STATUS_OF = {code.value[0]: code for code in grpc.StatusCode}


class _AnswersWhatItIsAsked(queue_service_pb2_grpc.QueueServiceServicer):
    """Ends every Work stream and Reserve with the status its `worker_id` names (`status-N`);
    `status-0` ends the stream with OK, as no sepp does while a worker still asks for jobs;
    `status-N-ADVICE` adds the trailer `sepp-retry: ADVICE`."""

    @staticmethod
    def _answer(worker_id: str, context: grpc.ServicerContext) -> grpc.StatusCode:
        number, _, retry = worker_id.removeprefix("status-").partition("-")
        if retry:
            context.set_trailing_metadata((("sepp-retry", retry),))
        return _STATUS_OF[int(number)]

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        first = next(request_iterator, None)
        code = self._answer(first.subscribe.worker_id, context) if first else grpc.StatusCode.INTERNAL
        if code != grpc.StatusCode.OK:
            context.abort(code, f"stand-in answers {code.name}")
        yield from ()

    def Reserve(self, request: work_pb2.ReserveRequest,  # noqa: N802 - the RPC's name
                context: grpc.ServicerContext) -> work_pb2.ReserveResponse:
        code = self._answer(request.worker_id, context)
        context.abort(code, f"stand-in answers {code.name}")
        raise AssertionError("abort() raises")


@pytest.fixture(scope="module")
def stand_in() -> Iterator[str]:
    with stand_in_server(_AnswersWhatItIsAsked()) as address:
        yield address


def test_the_table() -> None:
    assert FATAL_STATUSES == STOPS


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_fatal_status_stops_the_worker_and_any_other_is_retried(stand_in: str, transport: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="sepp.worker")
    with sepp.Client(stand_in) as client:
        for code in grpc.StatusCode:
            if code == grpc.StatusCode.OK:
                continue
            what = f"{transport}, {code.name}"
            worker_id = f"status-{code.value[0]}"
            if code in STOPS:
                assert_stops(caplog, stops_with(client, ["q"], transport, worker_id=worker_id), code,
                             "stand-in answers|API key", what)
            else:
                assert_retries(client, ["q"], transport, code, what, worker_id=worker_id)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_status_marked_sepp_retry_never_stops_the_worker(stand_in: str, transport: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="sepp.worker")
    with sepp.Client(stand_in) as client:
        for code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE):
            stopped = stops_with(client, ["q"], transport, worker_id=f"status-{code.value[0]}-never")
            assert_stops(caplog, stopped, code, "stand-in answers", f"{transport}, {code.name}, never")
            assert stopped[0] is not None and stopped[0].retry == "never"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unavailable_marked_sepp_retry_operator_is_retried(stand_in: str, transport: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    # A server whose storage someone must fix (a refused login, a schema a newer sepp migrated):
    # the worker keeps backing off, to reach a newer server or this one once fixed.
    caplog.set_level(logging.ERROR, logger="sepp.worker")
    code = grpc.StatusCode.UNAVAILABLE
    with sepp.Client(stand_in) as client:
        errors = assert_retries(client, ["q"], transport, code, f"{transport}, operator",
                                worker_id=f"status-{code.value[0]}-operator")
    error = errors[0].error
    assert isinstance(error, sepp.SeppError) and error.retry == "operator" and error.retryable
    assert [r.getMessage() for r in caplog.records if "stopping" in r.getMessage()] == []


def test_a_work_stream_the_server_ends_with_ok_is_reported_as_unavailable_and_opened_again(stand_in: str) -> None:
    with sepp.Client(stand_in) as client:
        errors = assert_retries(client, ["q"], "stream", grpc.StatusCode.UNAVAILABLE, "OK", worker_id="status-0")
    assert "the server ended the Work stream" in str(errors[0].error)


# ---------------------------------------------------------------------------------------------- re-cut


def test_settlements_refused_after_a_reload_lowered_max_batch_jobs_are_cut_again_and_sent_once(
        server: ServerProcess, queue: str) -> None:
    rounds, concurrency = 5, 4
    with sepp.Client(server.address, api_key=ADMIN_KEY) as client:
        # The client reads the server's max_batch_jobs (1000) before its first batch leaves; the
        # reload lowers it to 1 after that, so a batch of two acks or more is over the bound.
        ids = [client.enqueue(queue, "t").id for _ in range(rounds * concurrency)]
        with reconfigured(server, "\n[limits]\nmax_batch_jobs = 1\n"):
            # Each round of four jobs ends together, so its acks leave in a batch or a few.
            barrier = threading.Barrier(concurrency)
            events = Events()
            worker = client.worker([queue], transport="stream", concurrency=concurrency, on_event=events,
                                   fallback=lambda job: barrier.wait(30), **FAST_RECONNECTS).start()
            try:
                completed = events.wait("completed", len(ids))
                jobs = [client.get_job(id) for id in ids]
                assert [(job.state, job.attempt) for job in jobs] == [("completed", 1)] * len(ids)
                assert events.of("failed") == []
                assert sorted(e.job.id for e in completed if e.job is not None) == sorted(ids), "each acked once"
                assert worker.state == "running", "the worker went on"
                errors = [e.error for e in events.of("error")]
                assert errors, "no batch of acks was refused"
                for error in errors:
                    assert isinstance(error, sepp.SeppError)
                    assert (error.grpc_code, error.retry) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "never")
                    assert "the limit is 1 (limits.max_batch_jobs)" in error.message
            finally:
                worker.close()


class _LowersItsBound(queue_service_pb2_grpc.QueueServiceServicer):
    """A stand-in whose GetServerInfo says `max_batch_jobs` 1000, then 1 (lowered once: a re-cut),
    then 1 again (not lowered), and which answers a unary Ack OK and keeps it."""

    def __init__(self) -> None:
        self.streams = 0
        self.acks: list[tuple[str, int]] = []
        self.infos = 0

    def Ack(self, request: work_pb2.AckRequest,  # noqa: N802 - the RPC's name
            context: grpc.ServicerContext) -> work_pb2.AckResponse:
        self.acks.append((request.job_id, request.attempt))
        return work_pb2.AckResponse()

    def GetServerInfo(self, request: admin_pb2.GetServerInfoRequest,  # noqa: N802 - the RPC's name
                      context: grpc.ServicerContext) -> admin_pb2.GetServerInfoResponse:
        self.infos += 1
        limits = admin_pb2.ServerLimits(max_batch_jobs=1000 if self.infos == 1 else 1, max_message_bytes=4 << 20)
        return admin_pb2.GetServerInfoResponse(limits=limits)


class _RefusesEverySettlement(_LowersItsBound):
    """A Work stream that pushes one job on the first stream and refuses every batch of
    settlements as over `limits.max_batch_jobs` (RESOURCE_EXHAUSTED, never), as sepp does."""

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        self.streams += 1
        first_stream = self.streams == 1
        for request in request_iterator:
            kind = request.WhichOneof("kind")
            if kind == "batch" and request.batch.settlements:
                context.set_trailing_metadata((("sepp-retry", "never"),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              "batch.settlements: the limit is 0 (limits.max_batch_jobs)")
            if first_stream and (kind == "credit" or (kind == "batch" and request.batch.credit > 0)):
                first_stream = False
                yield work_pb2.WorkResponse(job=job_pb2.LeasedJob(
                    job_id="job-1", queue="q", type="t", attempt=1, max_attempts=3,
                    lease_deadline_ms=int(time.time() * 1000) + 60_000))



def test_a_settlement_refused_again_after_its_re_cut_goes_unary_and_unexplained_the_worker_stops() -> None:
    servicer = _RefusesEverySettlement()
    with stand_in_server(servicer) as address, sepp.Client(address) as client:
        stopped = stops_with(client, ["q"], "stream")
    error, events, worker = stopped
    assert error is not None and (error.grpc_code, error.retry) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "never")
    assert worker.state == "closed"
    assert servicer.streams == 2, "one stream refused, one more for the re-cut, then none"
    assert servicer.acks == [("job-1", 1)], "refused twice, the ack went by a unary call, once"
    assert len(events.of("error")) == 2, "the re-cut said, then the stop"


class _TakesOneAckThenRefuses(_LowersItsBound):
    """The first Work stream pushes job-1 and job-2, takes the first batch of settlements without
    answering it (as a server applies a batch whose answer the refusal after it cuts off), and
    refuses the next as over `limits.max_batch_jobs`; the next stream answers job-1's ack (or nack)
    "not leased" (its first send went through) and the others OK. GetJob answers `read` (else
    NOT_FOUND); a unary Nack is counted and refused."""

    def __init__(self, read: job_pb2.Job | None = None) -> None:
        super().__init__()
        self.settled: list[tuple[str, str]] = []
        self.first_held = threading.Event()
        self.read = read
        self.nacks: list[str] = []

    def GetJob(self, request: admin_pb2.GetJobRequest,  # noqa: N802 - the RPC's name
               context: grpc.ServicerContext) -> admin_pb2.GetJobResponse:
        if self.read is not None:
            return admin_pb2.GetJobResponse(job=self.read)
        context.abort(grpc.StatusCode.NOT_FOUND, "stand-in")
        raise AssertionError("abort() raises")

    def Nack(self, request: work_pb2.NackRequest,  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> work_pb2.NackResponse:
        self.nacks.append(request.job_id)
        context.abort(grpc.StatusCode.NOT_FOUND, "stand-in")
        raise AssertionError("abort() raises")

    def Work(self, request_iterator: Iterator[work_pb2.WorkRequest],  # noqa: N802 - the RPC's name
             context: grpc.ServicerContext) -> Iterator[work_pb2.WorkResponse]:
        self.streams += 1
        stream = self.streams
        pushed = False
        for request in request_iterator:
            kind = request.WhichOneof("kind")
            settlements = list(request.batch.settlements) if kind == "batch" else []
            if stream == 1 and settlements and self.first_held.is_set():
                context.set_trailing_metadata((("sepp-retry", "never"),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              "batch.settlements: the limit is 1 (limits.max_batch_jobs)")
            if stream == 1 and settlements:
                self.first_held.set()
            for settlement in settlements if stream > 1 else []:
                job_id = getattr(settlement, settlement.WhichOneof("kind")).job_id
                code = grpc.StatusCode.NOT_FOUND if job_id == "job-1" else grpc.StatusCode.OK
                self.settled.append((job_id, code.name))
                yield work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
                    request_id=settlement.request_id, code=code.value[0], message="stand-in",
                    error_code="not_found" if code == grpc.StatusCode.NOT_FOUND else ""))
            if stream == 1 and not pushed and (kind == "credit" or (kind == "batch" and request.batch.credit > 0)):
                pushed = True
                for job_id in ("job-1", "job-2"):
                    yield work_pb2.WorkResponse(job=job_pb2.LeasedJob(
                        job_id=job_id, queue="q", type="t", attempt=1, max_attempts=3,
                        lease_deadline_ms=int(time.time() * 1000) + 60_000))



def test_an_ack_taken_before_the_refusal_and_answered_not_found_when_sent_again_is_its_own() -> None:
    servicer = _TakesOneAckThenRefuses()

    def handle(job: sepp.Job) -> None:
        if job.id != "job-1":
            assert servicer.first_held.wait(30)

    events = Events()
    with stand_in_server(servicer) as address, sepp.Client(address) as client:
        worker = client.worker(["q"], transport="stream", concurrency=2, on_event=events, fallback=handle,
                               **FAST_RECONNECTS).start()
        try:
            completed = events.wait("completed", 2)
            assert sorted(e.job.id for e in completed if e.job is not None) == ["job-1", "job-2"]
            assert events.of("failed") == []
            assert sorted(servicer.settled) == [("job-1", "NOT_FOUND"), ("job-2", "OK")]
            assert servicer.acks == [], "no unary ack"
            assert servicer.streams == 2
            assert len(events.of("error")) == 1, "the refusal, said once"
            assert worker.state == "running"
        finally:
            worker.close()


def test_a_nack_taken_before_the_refusal_answered_not_found_when_sent_again_is_applied_where_the_job_proves_it(
) -> None:
    # As the test above, with job-1 failing: sent again, its nack is answered "not leased", and the
    # job read shows this attempt's entry with the nack's own message and class: the nack is
    # reported applied, with the job's state (_repeated_settlement.py).
    run_at_ms = int(time.time() * 1000) + 60_000
    servicer = _TakesOneAckThenRefuses(job_pb2.Job(
        job_id="job-1", state=job_pb2.JOB_STATE_SCHEDULED, attempt=1, run_at_ms=run_at_ms,
        errors=[job_pb2.AttemptError(attempt=1, error="boom", error_class="ValueError")]))

    def handle(job: sepp.Job) -> None:
        if job.id == "job-1":
            raise sepp.RetryAfter(60_000, "boom") from ValueError("boom")
        assert servicer.first_held.wait(30)

    events = Events()
    with stand_in_server(servicer) as address, sepp.Client(address) as client:
        worker = client.worker(["q"], transport="stream", concurrency=2, on_event=events, fallback=handle,
                               **FAST_RECONNECTS).start()
        try:
            [failed] = events.wait("failed")
            events.wait("completed")
            assert failed.job is not None and failed.job.id == "job-1"
            assert failed.nack == sepp.NackResult("scheduled", run_at_ms)
            assert sorted(servicer.settled) == [("job-1", "NOT_FOUND"), ("job-2", "OK")]
            assert servicer.nacks == [], "no unary nack"
            assert len(events.of("error")) == 1, "the refusal, said once"
        finally:
            worker.close()
