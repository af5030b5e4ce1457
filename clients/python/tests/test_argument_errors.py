"""A value the protocol cannot carry (a float, NaN or a string where an integer goes, an
integer past the field's range), given to the Python SDK against a real server: a
`SeppError` with code `invalid_argument` naming the call, raised before anything is sent
(docs/python.md, "Errors"), not protobuf's TypeError or ValueError; the client goes on.
A handler's RetryAfter whose delay is not a number of ms retries with the queue's backoff
instead of failing its nack; the other jobs complete."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import sepp
from test_worker import TRANSPORTS, start

BAD_INTEGERS: list[Any] = [1.5, float("nan"), "3", 2**40]


@pytest.mark.parametrize("value", BAD_INTEGERS, ids=["fraction", "nan", "string", "past-int32"])
def test_integer_options_are_invalid_argument_naming_the_call(
        client: sepp.Client, queue: str, value: Any) -> None:
    calls: list[tuple[str, Callable[[], object]]] = [
        ("Client.enqueue", lambda: client.enqueue(queue, "t", priority=value)),
        ("Client.list_workers_page", lambda: client.list_workers_page(page_size=value)),
        ("Client.reserve", lambda: client.reserve([queue], max_jobs=value)),
        ("Queues.list_page", lambda: client.queues.list_page(page_size=value)),
    ]
    for name, call in calls:
        with pytest.raises(sepp.SeppError) as raised:
            call()
        assert raised.value.code == "invalid_argument", (name, raised.value)
        assert raised.value.message.startswith(f"{name}: the request holds a value the protocol cannot carry")
    assert client.enqueue(queue, "t").id


def test_a_type_error_of_the_sdk_itself_is_left_alone(client: sepp.Client) -> None:
    with pytest.raises(TypeError, match="queues: give a list of queue names"):
        client.reserve("not-a-list")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_retry_after_that_is_not_a_number_of_ms_fails_no_other_job(
        client: sepp.Client, queue: str, transport: str) -> None:
    client.enqueue(queue, "bad", max_attempts=2)
    client.enqueue(queue, "good")

    def bad(job: sepp.WorkerJob) -> None:
        raise sepp.RetryAfter(float("nan"))  # type: ignore[arg-type]

    worker, events = start(client, queue, transport, concurrency=2,
                           handlers={"bad": bad, "good": lambda job: None})
    try:
        assert [e.job.type for e in events.wait("completed", 1) if e.job] == ["good"]
        assert events.wait("failed", 1)
    finally:
        worker.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60, "3"], ids=["nan", "inf", "huge", "string"])
def test_a_deadline_that_is_not_a_number_of_ms_is_invalid_argument(
        client: sepp.Client, queue: str, value: Any) -> None:
    calls: list[Callable[[], object]] = [
        lambda: client.get_server_info(deadline_ms=value),
        lambda: client.enqueue(queue, "t", deadline_ms=value),
    ]
    for call in calls:
        with pytest.raises(sepp.SeppError) as raised:
            call()
        assert raised.value.code == "invalid_argument"
        assert raised.value.message.startswith("deadline_ms: ")
    assert client.enqueue(queue, "t").id
