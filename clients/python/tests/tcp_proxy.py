"""A TCP proxy between a client and a real server, for tests of what the network does to calls:
each connection accepted gets one to the server, and every chunk either way goes through a
`verdict` that passes it, drops it (the connection stays open: a blackhole), or cuts the connection
on both sides. test_keepalive.py and test_nack_repeat.py build their proxies on it (ProxyOver)."""
from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Callable, Literal, TypeVar

Verdict = Literal["pass", "drop", "cut"]


def shut(end: socket.socket) -> None:
    """Ends a connection; its forwarding threads then close both sockets of the pair."""
    try:
        end.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # its other side closed it already


class Pair:
    """A client's connection and the proxy's to the server."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.silent = False
        self.forwarding = 2


class TcpProxy:
    """A TCP proxy to `target_port`; `verdict(pair, from_server)` says what becomes of each chunk."""

    def __init__(self, target_port: int, verdict: Callable[[Pair, bool], Verdict]) -> None:
        self._target_port = target_port
        self._verdict = verdict
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.pairs: list[Pair] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self._target_port))
            pair = Pair(client, upstream)
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self._forward, args=(pair, client, upstream, False), daemon=True).start()
            threading.Thread(target=self._forward, args=(pair, upstream, client, True), daemon=True).start()

    def _forward(self, pair: Pair, source: socket.socket, sink: socket.socket, from_server: bool) -> None:
        try:
            while chunk := source.recv(65536):
                verdict = self._verdict(pair, from_server)
                if verdict == "cut":
                    break
                if verdict == "pass":
                    sink.sendall(chunk)
        except OSError:
            pass
        # Shutting down (not closing) both ends wakes the other direction's recv; the last to end closes.
        shut(pair.client)
        shut(pair.upstream)
        with self.lock:
            pair.forwarding -= 1
            if pair.forwarding > 0:
                return
            self.pairs.remove(pair)
        pair.client.close()
        pair.upstream.close()

    def close(self) -> None:
        self._listener.close()
        with self.lock:
            for pair in self.pairs:
                for end in (pair.client, pair.upstream):
                    shut(end)


class ProxyOver:
    """A test's proxy made on a TcpProxy with its `verdict`: its `address`, and `close()`."""

    def __init__(self, target_port: int, verdict: Callable[[Pair, bool], Verdict]) -> None:
        self._proxy = TcpProxy(target_port, verdict)
        self.address = self._proxy.address

    def close(self) -> None:
        self._proxy.close()


_P = TypeVar("_P", bound=ProxyOver)


def served(proxy: _P) -> Iterator[_P]:
    """A fixture's proxy, closed when its test ends: `yield from served(Proxy(server.port))`."""
    yield proxy
    proxy.close()
