"""Debounce by key against a real server: while a job with the key waits (never leased), an
enqueue with the same key is absorbed by it (it takes the payload, `debounced` says so and the
id is that job's); the job shows its key and cap; a bad combination is refused; and with retries
on, a debounced job gets no SDK idempotency key (the server refuses a debounce key with one)."""
from __future__ import annotations

import pytest
from conftest import ADMIN_KEY, ServerProcess

import sepp


def test_a_second_enqueue_is_absorbed_by_the_waiting_job(client: sepp.Client, queue: str) -> None:
    first = client.enqueue(queue, "reindex", json={"v": 1}, debounce_key="doc-7", debounce_ms=60_000,
                           debounce_max_ms=300_000)
    assert first.debounced is False
    second = client.enqueue(queue, "reindex", json={"v": 2}, debounce_key="doc-7", debounce_ms=60_000,
                            debounce_max_ms=300_000)
    assert second == sepp.Enqueued(first.id, False, True)
    job = client.get_job(first.id)
    assert job.state == "scheduled"
    assert job.json() == {"v": 2}
    assert job.debounce_key == "doc-7"
    assert job.debounce_until_ms is not None and job.debounce_until_ms - job.enqueued_at_ms == 300_000
    outcomes = client.enqueue_batch([
        sepp.JobSpec(queue, "reindex", json={"v": 3}, debounce_key="doc-7", debounce_ms=60_000),
        sepp.JobSpec(queue, "reindex", json={"v": 4}, debounce_key="doc-8", debounce_ms=60_000),
    ])
    assert [(o.id == first.id, o.debounced) for o in outcomes] == [(True, True), (False, False)]


def test_a_debounce_key_with_an_idempotency_key_is_refused(client: sepp.Client, queue: str) -> None:
    with pytest.raises(sepp.JobRejectedError) as raised:
        client.enqueue(queue, "t", b"x", debounce_key="k", idempotency_key="i")
    assert raised.value.rejections[0].reason == "invalid_job"
    assert "debounce_key cannot have an idempotency_key" in str(raised.value)


def test_with_retries_on_a_debounced_job_is_sent_without_an_sdk_key(server: ServerProcess, queue: str) -> None:
    retry = sepp.RetryOptions(max_attempts=3, base_delay_ms=10)
    with sepp.Client(server.address, api_key=ADMIN_KEY, retry=retry) as client:
        first = client.enqueue(queue, "t", b"1", debounce_key="k", debounce_ms=60_000)
        again = client.enqueue(queue, "t", b"2", debounce_key="k", debounce_ms=60_000)
        assert again.id == first.id and again.debounced
        assert client.get_job(first.id).idempotency_key is None
