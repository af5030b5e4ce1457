"""Events turned off (`limits.max_event_subscribers = 0`) is an operator's decision, not a load that
passes: the server refuses an Events stream with UNAVAILABLE and `sepp-retry: operator`, and the
client's subscription stops on it instead of reconnecting, also one that was up when a reload
turned events off and ended it. The TypeScript SDK's test (and the HTTP API's 503) is in
tests/rpc/events-off.test.ts."""
from __future__ import annotations

import grpc
import pytest
from conftest import ADMIN_KEY, SCOPED_KEY, SERVER_TOML, ServerProcess, reload

import sepp


def test_a_subscription_that_was_up_stops_when_a_reload_turns_events_off(server: ServerProcess) -> None:
    try:
        with sepp.Client(server.address, api_key=SCOPED_KEY) as client:
            with client.events(queues=["py-scoped"]) as stream:
                assert stream.caught_up.wait(30)
                # One reload turns events off and changes the key's queues, which ends its stream
                # (UNAVAILABLE): the subscription opens it again and is refused.
                # Widening a key's queues takes an explicit downgrade (SIGHUP would refuse it).
                server.config.write_text(
                    SERVER_TOML.replace('queues = ["py-scoped"]', 'queues = ["py-scoped", "py-scoped-2"]')
                    + "[limits]\nmax_event_subscribers = 0\n")
                with sepp.Client(server.address, api_key=ADMIN_KEY) as admin:
                    assert admin.reload_config(allow_security_downgrade=True).applied
                with pytest.raises(sepp.SeppError) as ended:
                    while True:
                        if stream.next_item(30) is None:
                            raise AssertionError("the subscription neither ended nor got anything in 30 s")
    finally:
        reload(server, SERVER_TOML)  # The session server as the other tests know it.
    assert ended.value.grpc_code == grpc.StatusCode.UNAVAILABLE
    assert ended.value.retry == "operator"
    assert "events are turned off on this server" in ended.value.message
