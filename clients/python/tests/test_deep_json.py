"""JSON nested deeper than Python's json module reads (about 1,000 levels; the server keeps
any valid JSON within the size limits, as a JavaScript worker reads it): a producer's payload
of 5,000 nested arrays (10 KB) raised RecursionError out of the worker's Work stream, which
broke it and lost the leases it carried, again at each delivery (attack7). Now such a payload
sends its job to the dead letters as JSON that does not parse does, and a result or progress
that deep is handed over as bytes or text, as one that does not parse is."""
from __future__ import annotations

import threading

import sepp
from conftest import eventually

DEEP = "[" * 5000 + "]" * 5000


def test_a_payload_too_deep_is_dead_lettered_and_the_worker_goes_on(client: sepp.Client, queue: str) -> None:
    deep = client.enqueue(queue, "t", DEEP.encode(), content_type="application/json")
    fine = client.enqueue(queue, "t", json={"ok": 1})
    handled: list[str] = []
    worker = client.worker([queue], handlers={"t": lambda job: handled.append(job.id)}).start()
    try:
        eventually(lambda: fine.id in handled or None, "the other job is handled")
        dead = eventually(lambda: (j := client.get_job(deep.id)).state == "dead" and j or None, "dead-lettered")
        assert "nested too deep" in (dead.last_error or ""), dead.last_error
        assert deep.id not in handled
    finally:
        threading.Thread(target=worker.close, daemon=True).start()


def test_a_result_too_deep_reaches_readers_as_bytes(client: sepp.Client, queue: str) -> None:
    first = client.enqueue(queue, "t")
    after = client.enqueue(queue, "t", depends_on=[first.id])
    [leased] = client.reserve([queue], lease_ms=60_000)
    client.ack(leased, result=sepp.JobResult(DEEP, "application/json"))
    assert client.get_job(first.id).result == DEEP.encode()
    [waiting] = client.reserve([queue], lease_ms=60_000)
    assert waiting.id == after.id
    assert [d.result for d in waiting.dependency_results] == [DEEP.encode()]
    client.ack(waiting)
