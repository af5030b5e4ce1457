"""Event kinds: every kind the protocol has is known to the client, and a kind newer than the
client (a newer server, which the client asks for every kind with `all_kinds`) is passed over,
not a broken stream. A stand-in server sends the kinds, as a real one only sends the ones it has."""
from __future__ import annotations

import threading
from typing import Any, Iterator

from conftest import stand_in_server

import sepp
from sepp.events import _KIND_NAMES
from sepp.v1 import events_pb2, job_pb2, queue_service_pb2_grpc

NEWER_KIND = 999
"""A kind no client knows: one a later server might add."""


class Events(queue_service_pb2_grpc.QueueServiceServicer):
    """Answers Events with a caught-up message, then `kinds` (one event each), then holds the stream."""

    def __init__(self, kinds: list[int]) -> None:
        self.kinds = kinds
        self.requests: list[events_pb2.EventsRequest] = []
        self.done = threading.Event()

    def Events(self, request: Any, context: Any) -> Iterator[events_pb2.EventsResponse]:  # noqa: N802
        self.requests.append(request)
        yield events_pb2.EventsResponse(stream_id="s", caught_up=True, sequence=0)
        events = [
            events_pb2.JobEvent(sequence=i + 1, kind=events_pb2.JobEventKind.ValueType(kind), job_id=f"j{i + 1}", queue="q", type="t", attempt=1,
                                state=job_pb2.JOB_STATE_READY)
            for i, kind in enumerate(self.kinds)
        ]
        yield events_pb2.EventsResponse(stream_id="s", events=events)
        self.done.wait(10)


def test_every_protocol_kind_has_a_name() -> None:
    named = set(_KIND_NAMES)
    protocol = {v.number for v in events_pb2.JobEventKind.DESCRIPTOR.values if v.number != 0}
    assert named == protocol
    assert _KIND_NAMES[events_pb2.JOB_EVENT_KIND_LEASE_UNDONE] == "lease_undone"


def test_a_kind_newer_than_the_client_is_passed_over() -> None:
    servicer = Events([events_pb2.JOB_EVENT_KIND_LEASED, NEWER_KIND, events_pb2.JOB_EVENT_KIND_LEASE_UNDONE])
    with stand_in_server(servicer) as address, sepp.Client(address) as client:
        with client.events() as stream:
            seen = []
            for event in stream:
                seen.append((event.kind, event.job_id, event.state))
                if len(seen) == 2:
                    break
            # Past the kind it does not know: resumes from there, not before it.
            assert stream.position == sepp.EventPosition("s", 3)
        servicer.done.set()
    assert seen == [("leased", "j1", "ready"), ("lease_undone", "j3", "ready")]
    assert servicer.requests[0].all_kinds
