"""Client keepalive: a Worker whose connection goes silent without closing (a NAT or load balancer
that dropped the flow, the server's machine lost) notices it by its pings, within about
keepalive_ms + keepalive_timeout_ms, and works again over a fresh connection. A TCP proxy between
the client and a real server turns its open connections into a blackhole on command: it stops
forwarding in both directions and closes nothing. The TypeScript SDK's test of the same is
tests/client/worker-keepalive.test.ts."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import ADMIN_KEY, ServerProcess
from tcp_proxy import ProxyOver, served, shut
from test_worker import TRANSPORTS, start

import sepp


class BlackholeProxy(ProxyOver):
    """A TCP proxy to `target_port`; `blackhole()` silences the connections open now, new ones pass."""

    def __init__(self, target_port: int) -> None:
        super().__init__(target_port, lambda pair, _: "drop" if pair.silent else "pass")

    def blackhole(self) -> int:
        """Stops forwarding on every open connection, in both directions; nothing is closed."""
        with self._proxy.lock:
            for pair in self._proxy.pairs:
                pair.silent = True
            return len(self._proxy.pairs)

    def end_silenced_upstreams(self) -> None:
        """Closes the server's side of the silenced connections, as the server's own keepalive would."""
        with self._proxy.lock:
            for pair in self._proxy.pairs:
                if pair.silent:
                    shut(pair.upstream)


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[BlackholeProxy]:
    yield from served(BlackholeProxy(server.port))


KEEPALIVE_MS = 200
# Long enough that a loaded machine (CI runs two test slots on two cores) answers every ping of the
# healthy connection in time: at 300 ms one run lost its connection before the blackhole.
KEEPALIVE_TIMEOUT_MS = 1500
LEASE_MS = 2_000


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_keepalive_pings_fail_a_silent_connection_and_the_worker_works_again(
        client: sepp.Client, proxy: BlackholeProxy, queue: str, transport: str) -> None:
    with sepp.Client(proxy.address, api_key=ADMIN_KEY, keepalive_ms=KEEPALIVE_MS,
                     keepalive_timeout_ms=KEEPALIVE_TIMEOUT_MS) as through_proxy:
        # lease_ms: see below, where the server's side of the silent connection ends.
        worker, events = start(through_proxy, queue, transport, reconnect_base_delay_ms=50,
                               reconnect_max_delay_ms=100, lease_ms=LEASE_MS, handlers={"t": lambda job: None})
        try:
            client.enqueue(queue, "t")
            events.wait("completed")
            # The worker waits for work (on its Work stream, or a Reserve long-poll) for several keepalive
            # periods: the server answers pings this often. On the stream no data is sent meanwhile, and
            # grpc's C core, unless told, sends no ping after 2 (~3 s in): the stream waits past that.
            time.sleep((15 if transport == "stream" else 4) * KEEPALIVE_MS / 1000)
            assert events.of("error") == [], "pings every 200 ms on an open call bring no GOAWAY"

            silenced_at = time.monotonic()
            assert proxy.blackhole() >= 1, "the worker has a connection through the proxy"
            error = events.wait("error")[0].error
            noticed_ms = (time.monotonic() - silenced_at) * 1000
            assert isinstance(error, sepp.UnavailableError), repr(error)
            # One ping may have just been answered: the next goes out keepalive_ms later and times out.
            assert noticed_ms < KEEPALIVE_MS + KEEPALIVE_TIMEOUT_MS + 1000, f"noticed after {noticed_ms:.0f} ms"

            # Until the server's own pings notice the silence (grpc.keepalive_ms, 30 s by default,
            # then grpc.keepalive_timeout_ms, 20 s, for the answer), it still counts the old stream
            # as a worker waiting for jobs and would lease it the next one, to be redelivered when
            # that lease expires; the test ends the server's side now. The server learns of that end on
            # its own time, so the next job may still be leased on the old stream (seen in CI): it comes
            # back when its lease of LEASE_MS ends, to the worker's new connection.
            proxy.end_silenced_upstreams()
            # The worker reconnects through the proxy on a fresh connection and takes the next job.
            client.enqueue(queue, "t")
            events.wait("completed", 2)
            assert worker.state == "running"
        finally:
            worker.close()


def test_keepalive_options_are_checked(server: ServerProcess) -> None:
    for name in ("keepalive_ms", "keepalive_timeout_ms"):
        for value in (0, -1, 1.5, True, "30000", 2**31):
            with pytest.raises(ValueError, match=f"^{name} must be a positive integer number of ms, at most 2147483647$"):
                sepp.Client(server.address, **{name: value})  # type: ignore[arg-type]
    sepp.Client(server.address, keepalive_ms=1, keepalive_timeout_ms=2**31 - 1).close()
