"""Events turned off (`limits.max_event_subscribers = 0`) is an operator's decision, not a load that
passes: the server refuses an Events stream with UNAVAILABLE and `sepp-retry: operator`, and the
client's subscription stops on it instead of reconnecting, also one that was up when the server
came back with events off. The TypeScript SDK's test (and the HTTP API's 503) is in
tests/rpc/events-off.test.ts."""
from __future__ import annotations

import grpc
import pytest
from conftest import ADMIN_KEY, SERVER_TOML, running_server

import sepp


def test_a_subscription_that_was_up_stops_when_the_server_comes_back_with_events_off() -> None:
    with running_server() as process, sepp.Client(process.address, api_key=ADMIN_KEY) as client:
        with client.events(queues=["q"]) as stream:
            assert stream.caught_up.wait(30)
            process.config.write_text(SERVER_TOML + "[limits]\nmax_event_subscribers = 0\n")
            process.restart()
            with pytest.raises(sepp.SeppError) as ended:
                for _ in stream:
                    raise AssertionError("an event from a server with events off")
        assert ended.value.grpc_code == grpc.StatusCode.UNAVAILABLE
        assert ended.value.retry == "operator"
        assert "events are turned off on this server" in ended.value.message
        # A new subscription is refused alike, at once.
        with pytest.raises(sepp.SeppError) as refused, client.events() as fresh:
            next(iter(fresh))
        assert refused.value.retry == "operator"
