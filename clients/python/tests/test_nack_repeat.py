"""A nack the server applied whose answer was lost, sent again (_repeated_settlement.py): the repeat
is answered "not leased" (or, its retry leased again since, "lease lost"), and the SDK reads the job
— its error history holds this attempt's entry with the nack's own message — so the nack is
reported applied, with where the job went. A repeat the job does not prove applied (the lease ran
out before the nack: the entry is the server's "lease expired") is still the refusal. An ack alike
(the client's, and a worker's over unary calls): repeated and answered "not leased", it is acked
unless the job disproves it (not completed on that attempt). Through a proxy that cuts the connection carrying the answer, in
front of a real server. The TypeScript SDK's tests of the same are in
tests/client/nack-repeat.test.ts."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from conftest import ADMIN_KEY, ServerProcess, eventually
from tcp_proxy import Pair, ProxyOver, Verdict, served
from test_worker import Events

import sepp

RETRY = sepp.RetryOptions(max_attempts=4, base_delay_ms=1, max_delay_ms=5)


class AnswerCutProxy(ProxyOver):
    """A TCP proxy to `target_port` that loses one answer on command: once armed, the first bytes
    the server sends while `when()` holds are not forwarded, and that connection is closed on both
    sides — a network drop between the server's commit and the client's read."""

    def __init__(self, target_port: int) -> None:
        super().__init__(target_port, self._verdict)
        self._when: Callable[[], bool] | None = None
        self._lock = threading.Lock()
        self.cuts = 0

    def cut_next_answer(self, when: Callable[[], bool]) -> None:
        with self._lock:
            self._when = when

    def _verdict(self, _: Pair, from_server: bool) -> Verdict:
        with self._lock:
            when = self._when if from_server else None
        if when is None or not when():
            return "pass"
        with self._lock:
            self._when = None
            self.cuts += 1
        return "cut"


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[AnswerCutProxy]:
    yield from served(AnswerCutProxy(server.port))


def _not_leased(direct: sepp.Client, job_id: str) -> Callable[[], bool]:
    return lambda: direct.get_job(job_id).state != "leased"


def test_a_nack_whose_answer_was_lost_repeated_is_applied_where_the_nack_put_it(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-nack-repeat", "t").id
        [lease] = client.reserve(["py-nack-repeat"])
        proxy.cut_next_answer(_not_leased(direct, job_id))
        result = client.nack(lease, error=TypeError("boom"), retry_after_ms=60_000)
        assert proxy.cuts == 1, "the first answer was lost"
        job = direct.get_job(job_id)
        assert result == sepp.NackResult("scheduled", job.run_at_ms)
        assert [(e.attempt, e.error_class, e.error) for e in job.errors] == [(1, "TypeError", "TypeError: boom")], \
            "applied once"


def test_a_repeat_the_job_does_not_prove_applied_is_the_refusal(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-nack-expired", "t").id
        [lease] = client.reserve(["py-nack-expired"], lease_ms=1000)
        eventually(lambda: [e.error for e in direct.get_job(job_id).errors] == ["lease expired"] or None,
                   "the lease ran out")
        proxy.cut_next_answer(lambda: True)
        with pytest.raises(sepp.LeaseLostError) as refused:
            client.nack(lease, error="boom")
        assert proxy.cuts == 1, "the first answer was lost"
        assert refused.value.code == "not_found"
        assert [(e.attempt, e.error) for e in direct.get_job(job_id).errors] == [(1, "lease expired")]


def test_a_workers_nack_whose_answer_the_broken_work_stream_took_is_failed_not_an_error(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-nack-worker", "t").id

        def handler(job: Any) -> None:
            proxy.cut_next_answer(_not_leased(direct, job.id))
            raise sepp.RetryAfter(60_000, "handler failed")

        events = Events()
        worker = client.worker(["py-nack-worker"], transport="stream", on_event=events, fallback=handler,
                               reconnect_base_delay_ms=1, reconnect_max_delay_ms=20).start()
        try:
            [failed] = events.wait("failed")
        finally:
            worker.close()
        assert proxy.cuts == 1, "the answer was lost"
        job = direct.get_job(job_id)
        assert failed.job is not None and failed.job.id == job_id
        assert failed.nack is not None and failed.nack.state == job.state == "scheduled"
        assert not [e for e in events.of("error") if isinstance(e.error, sepp.LeaseLostError)], \
            "the repeat reported no lost lease"
        assert [(e.attempt, e.error) for e in job.errors] == [(1, "handler failed")]


def test_a_nack_whose_answer_was_lost_its_job_leased_again_before_the_repeat_is_applied_ready(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-nack-again", "t").id
        [lease] = client.reserve(["py-nack-again"])

        def leased_again() -> bool:
            if direct.get_job(job_id).state == "leased":
                return False
            assert [j.attempt for j in direct.reserve(["py-nack-again"])] == [2]
            return True

        proxy.cut_next_answer(leased_again)
        result = client.nack(lease, error="boom", retry_after_ms=0)
        assert proxy.cuts == 1, "the first answer was lost"
        job = direct.get_job(job_id)
        assert (job.state, job.attempt) == ("leased", 2)
        assert result == sepp.NackResult("ready", job.run_at_ms)


def _completed(direct: sepp.Client, job_id: str) -> Callable[[], bool]:
    return lambda: direct.get_job(job_id).state == "completed"


def test_an_ack_whose_answer_was_lost_repeated_is_acked_and_one_the_job_disproves_is_the_lost_lease(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-ack-repeat", "t").id
        [lease] = client.reserve(["py-ack-repeat"])
        proxy.cut_next_answer(_completed(direct, job_id))
        client.ack(lease, result="done")
        assert proxy.cuts == 1, "the first answer was lost"
        assert direct.get_job(job_id).state == "completed"

        # The lease ran out before the ack: the job, read, is not completed on that attempt.
        late_id = client.enqueue("py-ack-expired", "t").id
        [late] = client.reserve(["py-ack-expired"], lease_ms=1000)
        eventually(lambda: [e.error for e in direct.get_job(late_id).errors] == ["lease expired"] or None,
                   "the lease ran out")
        proxy.cut_next_answer(lambda: True)
        with pytest.raises(sepp.LeaseLostError) as refused:
            client.ack(late)
        assert proxy.cuts == 2, "the first answer was lost"
        assert refused.value.code == "not_found"


def test_a_unary_workers_ack_whose_answer_was_lost_is_completed_not_a_lost_lease(
        server: ServerProcess, proxy: AnswerCutProxy) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as direct, \
            sepp.Client(proxy.address, api_key=ADMIN_KEY, retry=RETRY) as client:
        job_id = client.enqueue("py-ack-worker", "t").id

        def handler(job: Any) -> str:
            proxy.cut_next_answer(_completed(direct, job.id))
            return "done"

        events = Events()
        worker = client.worker(["py-ack-worker"], transport="unary", on_event=events, fallback=handler).start()
        try:
            [completed] = events.wait("completed")
        finally:
            worker.close()
        assert proxy.cuts == 1, "the answer was lost"
        assert completed.job is not None and completed.job.id == job_id
        assert not [e for e in events.of("error") if isinstance(e.error, sepp.LeaseLostError)], \
            "the repeat reported no lost lease"
        assert direct.get_job(job_id).state == "completed"
