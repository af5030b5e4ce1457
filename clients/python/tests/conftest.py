"""Fixtures: a real sepp server process on port 0 with a temporary data
directory, and clients of it.

The server runs as `SEPP_SERVER_COMMAND serve …`: a JSON list, default
`["node", "--import", "tsx", "src/cli/main.ts"]` run in the repository root
(tests/interop/python-client.test.ts passes a bundle, which starts faster).
Its address is read from its `server.started` log line. A test that needs
PostgreSQL takes a cluster of its own (`postgres_cluster`), which the
repository's TypeScript helper starts. Tests wait on
conditions (`eventually`) with generous limits that only guard against hangs.
"""
from __future__ import annotations

import contextlib
import itertools
from concurrent import futures
import json
import logging
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Callable, Iterator, TypeVar

import grpc
import pytest

import sepp
from sepp.v1 import job_pb2, queue_service_pb2_grpc, work_pb2

REPO = pathlib.Path(__file__).resolve().parents[3]
T = TypeVar("T")

ADMIN_KEY = "py-admin-key-0123456789"
PRODUCER_KEY = "py-producer-key-0123456789"
UNKNOWN_KEY = "py-unknown-key-0123456789"
"""A key the server does not know: sent, so it must not be logged either."""
SCOPED_KEY = "py-scoped-key-0123456789"
"""A worker key held to the queue py-scoped."""

# API keys, so every client sends one; short retry delays without jitter, so retries happen
# within a test at the delay it expects; a queue that holds one job.
SERVER_TOML = f"""
[[grpc.api_keys]]
name = "admin"
role = "admin"
key = "{ADMIN_KEY}"

[[grpc.api_keys]]
name = "producer"
role = "producer"
key = "{PRODUCER_KEY}"

[[grpc.api_keys]]
name = "scoped"
role = "worker"
key = "{SCOPED_KEY}"
queues = ["py-scoped"]

[queue_defaults]
backoff_base_ms = "200ms"
backoff_jitter = 0

[queues.py-full]
max_depth = 1

[queues.py-kept-stream]
completed_retention_ms = "1h"

[queues.py-kept-unary]
completed_retention_ms = "1h"

[queues.py-kept-restart]
completed_retention_ms = "1h"
[queues.py-tenants]
max_leased = 3
group_max_leased = 1
rate_limit_leases = 1000
"""


LOG_DIR = os.environ.get("SEPP_TEST_LOG_DIR") or None
"""Set by the npm test run: server logs go to LOG_DIR/logs and every secret the tests use to
LOG_DIR/secrets, and after the run no captured line may hold a secret (scripts/secret-grep.mjs)."""
_log_files = itertools.count()


def _capture_file(source: str) -> pathlib.Path | None:
    if LOG_DIR is None:
        return None
    (pathlib.Path(LOG_DIR) / "logs").mkdir(parents=True, exist_ok=True)
    return pathlib.Path(LOG_DIR) / "logs" / f"{source}-{os.getpid()}-{next(_log_files)}.log"


def _register_secrets() -> None:
    if LOG_DIR is None:
        return
    (pathlib.Path(LOG_DIR) / "secrets").mkdir(parents=True, exist_ok=True)
    with open(pathlib.Path(LOG_DIR) / "secrets" / f"{os.getpid()}.jsonl", "a") as out:
        for key in (ADMIN_KEY, PRODUCER_KEY, UNKNOWN_KEY, SCOPED_KEY):
            out.write(json.dumps({"kind": "python test API key", "value": key}) + "\n")


@pytest.fixture(scope="session", autouse=True)
def capture_client_logs() -> Iterator[None]:
    """The client's own log lines go to the run's log directory too."""
    path = _capture_file("python-client")
    if path is None:
        yield
        return
    _register_secrets()
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("sepp")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()


class ServerProcess:
    """`sepp serve` in a child process; `restart()` stops it and starts it again on the same
    data directory and port."""

    def __init__(self, data_dir: pathlib.Path, extra_toml: str = "") -> None:
        self.data_dir = data_dir
        self.config = data_dir.parent / f"{data_dir.name}.toml"
        self.config.write_text(SERVER_TOML + extra_toml)
        self.port = 0
        self.logs = ""
        self.process: subprocess.Popen[str] | None = None
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        command = json.loads(os.environ.get("SEPP_SERVER_COMMAND", '["node", "--import", "tsx", "src/cli/main.ts"]'))
        self.process = subprocess.Popen(
            [*command, "serve", "--config", str(self.config), "--data-dir", str(self.data_dir),
             "--grpc-listen", f"127.0.0.1:{self.port}", "--admin-listen", "127.0.0.1:0", "--log-format", "json"],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "SEPP_CONFIG": ""},
        )
        started = threading.Event()
        capture = _capture_file("python-server")

        def read(stderr: object) -> None:
            assert self.process is not None and self.process.stderr is not None
            for line in self.process.stderr:
                self.logs += line
                if capture is not None:
                    with open(capture, "a") as out:
                        out.write(line)
                if '"server.started"' in line:
                    self.port = int(json.loads(line)["grpc"].rsplit(":", 1)[1])
                    started.set()

        threading.Thread(target=read, args=(self.process.stderr,), daemon=True).start()
        deadline = time.monotonic() + 120
        while not started.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sepp did not start (exit {self.process.poll()}):\n{self.logs}")

    def stop(self) -> int:
        """Graceful shutdown (SIGTERM); returns the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def restart(self) -> None:
        assert self.stop() == 0, self.logs
        self.start()


@contextlib.contextmanager
def running_server(extra_toml: str = "") -> Iterator[ServerProcess]:
    """A server of its own, with `extra_toml` added to its configuration."""
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="sepp-py-"))
    process = ServerProcess(data_dir, extra_toml)
    try:
        yield process
    finally:
        process.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        process.config.unlink(missing_ok=True)


class PostgresCluster:
    """A running PostgreSQL cluster with a database of the test's own (postgres_cluster)."""

    def __init__(self, url: str, password_file: str) -> None:
        self.url = url
        self.password_file = password_file

    def store_toml(self, schema: str) -> str:
        """The `[store]` section of a server keeping its jobs in `schema` of this database."""
        return (f'[store]\nkind = "postgres"\nurl = "{self.url}"\npassword_file = "{self.password_file}"\n'
                f'schema = "{schema}"\n')


@contextlib.contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster of the test's own, made by the helper the TypeScript tests use
    (tests/helpers/postgres-cluster-child.ts, from Debian's postgresql-15), removed after: the
    child closes it when its stdin ends, also when this process dies first."""
    child = subprocess.Popen(["node", "--import", "tsx", "tests/helpers/postgres-cluster-child.ts"], cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    line = child.stdout.readline()
    if not line:
        child.stdin.close()
        raise RuntimeError(f"PostgreSQL did not start (exit {child.wait(60)}):\n{child.stderr.read()}")
    started = json.loads(line)
    try:
        yield PostgresCluster(started["url"], started["passwordFile"])
    finally:
        child.stdin.close()
        child.wait(60)


def settled_ok(settlement: work_pb2.WorkRequest.Settlement) -> work_pb2.WorkResponse:
    """A Work stream's answer that `settlement` went through: a nack puts its job back to ready,
    the rest ack (for stand-ins)."""
    if settlement.WhichOneof("kind") == "nack":
        return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
            request_id=settlement.request_id, code=0,
            nack=work_pb2.NackResponse(state=job_pb2.JOB_STATE_READY)))
    return work_pb2.WorkResponse(settled=work_pb2.WorkResponse.Settled(
        request_id=settlement.request_id, code=0, ack=work_pb2.AckResponse()))


@contextlib.contextmanager
def stand_in_server(servicer: queue_service_pb2_grpc.QueueServiceServicer) -> Iterator[str]:
    """A gRPC server in this process answering with `servicer` (a stand-in for sepp, for what a
    real one cannot be made to do on cue); yields its address."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    queue_service_pb2_grpc.add_QueueServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """One server for the tests of a pytest process (each uses its own queues)."""
    with running_server() as process:
        yield process


@pytest.fixture(scope="session")
def small_message_server() -> Iterator[ServerProcess]:
    """A server that takes gRPC messages of at most 1200 KiB, the smallest it allows with its
    default 1 MiB payloads, for the tests of a pytest process that send messages around that size
    (each on queues of its own). `grpc.max_message_bytes` is set at a start, not by a reload."""
    with running_server('[grpc]\nmax_message_bytes = "1200KiB"\n') as process:
        yield process


def reload(server: ServerProcess, toml: str) -> None:
    """Makes `toml` the server's configuration: writes its file and reloads it (the ReloadConfig
    call answers once the new settings are in force)."""
    server.config.write_text(toml)
    with sepp.Client(server.address, api_key=ADMIN_KEY) as admin:
        report = admin.reload_config()
    assert report.applied, report.problems


@contextlib.contextmanager
def reconfigured(server: ServerProcess, extra_toml: str) -> Iterator[ServerProcess]:
    """The session server with `extra_toml` added to its configuration by a reload, for a test of
    a setting a reload changes (docs/configuration.md, "`[limits]` on a reload"); another reload
    puts its configuration back after the test. A reload takes milliseconds where a server of the
    test's own took a start; tests run one at a time, so no other test sees the change."""
    original = server.config.read_text()
    reload(server, original + extra_toml)
    try:
        yield server
    finally:
        reload(server, original)


@pytest.fixture
def restartable_server(server: ServerProcess) -> Iterator[ServerProcess]:
    """The session server, for a test that stops or restarts it: `restart()` brings it back on
    the same address and data directory, so the tests after it find it as before (tests run
    one at a time, each on its own queues). One server start per restart, where a server of
    the test's own took two; a test that needs another configuration uses `running_server`."""
    yield server
    if server.process is None or server.process.poll() is not None:
        server.start()  # The test failed with the server stopped.


@pytest.fixture
def client(server: ServerProcess) -> Iterator[sepp.Client]:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as c:
        yield c


@pytest.fixture
def queue(request: pytest.FixtureRequest) -> str:
    """A queue name of the test's own, so tests on one server never see each other's jobs."""
    return re.sub(r"[^A-Za-z0-9._:-]", "-", request.node.name)[:100]


def eventually(check: Callable[[], T | None], what: str, timeout_s: float = 30.0) -> T:
    """Polls `check` until it returns something other than None or False; fails after
    `timeout_s` (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def counts(client: sepp.Client, queue: str) -> sepp.StateCounts | None:
    """A queue's counts by state (None before the queue exists)."""
    return next((q.counts for q in client.list_queues() if q.name == queue), None)
