"""Two servers on one PostgreSQL database, as docs/postgres.md describes them to a user of the
Python client: an outcome wait on one server ends when the job is settled through the other
(the waiting server looks at the database every 250 ms while waits name jobs), with the
outcome the other committed. The server side, and the TypeScript SDK's waits, are tested in
tests/store/postgres-servers.test.ts."""
from __future__ import annotations

import re
import threading
import urllib.request

from conftest import ADMIN_KEY, ServerProcess, eventually, postgres_cluster, running_server

import sepp

# Ends kept in the database, so the waiting server reads the outcome from the job's row.
KEPT = '[queues.py-pg]\ncompleted_retention_ms = "1h"\ndead_retention_ms = "1h"\n'


def _subscribers(server: ServerProcess) -> float:
    """The server's Events streams open now (sepp_events_subscribers, on its admin port)."""
    [started] = [line for line in server.logs.splitlines() if '"server.started"' in line]
    metrics = re.search(r'"metrics":"([^"]+)"', started)
    assert metrics is not None, started
    with urllib.request.urlopen(f"http://{metrics.group(1)}", timeout=10) as answer:
        text = answer.read().decode()
    found = re.search(r"^sepp_events_subscribers(?:\{[^}]*\})? (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_a_wait_on_one_server_ends_when_the_job_is_settled_through_another() -> None:
    with postgres_cluster() as cluster:
        store = cluster.store_toml("py_outcomes") + KEPT
        with running_server(store) as a, running_server(store) as b, \
                sepp.Client(a.address, api_key=ADMIN_KEY) as on_a, \
                sepp.Client(b.address, api_key=ADMIN_KEY) as on_b:
            for settle in ("ack", "nack"):
                job = on_a.enqueue("py-pg", "t", max_attempts=1)
                [lease] = on_b.reserve(["py-pg"])
                assert lease.id == job.id
                outcome: dict[str, sepp.JobOutcome] = {}
                waiter = threading.Thread(
                    target=lambda: outcome.setdefault("o", on_a.wait_for(job.id, timeout_ms=60_000)))
                waiter.start()
                # Settled through b only once the wait is open on a, so that a hears of it from the
                # database, not from its own reads at the wait's start.
                eventually(lambda: _subscribers(a) >= 1 or None, "the wait subscribed on a")
                if settle == "ack":
                    on_b.ack(lease, result={"n": 7})
                else:
                    on_b.nack(lease, error="boom")
                waiter.join(60)
                done = outcome["o"]
                if settle == "ack":
                    assert (done.state, done.result) == ("completed", {"n": 7})
                else:
                    assert (done.state, done.error, done.dead_reason) == ("dead", "boom", "attempts_exhausted")
                eventually(lambda: _subscribers(a) == 0 or None, "the wait closed on a")
