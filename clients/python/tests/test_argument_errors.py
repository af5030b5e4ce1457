"""A value the protocol cannot carry (a float, NaN or a string where an integer goes, an
integer past the field's range), given to the Python SDK against a real server: a
`SeppError` with code `invalid_argument` naming the call, raised before anything is sent
(docs/python.md, "Errors"), not protobuf's TypeError or ValueError; the client goes on."""
from __future__ import annotations

from typing import Any, Callable

import pytest

import sepp

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
