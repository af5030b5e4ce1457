"""Enqueues the server takes, and the server's advice acted on (docs/protocol.md, "Whether to repeat
a call"): the client cuts a batch by the UTF-8 bytes of what it sends, not by characters; a refusal
for a full queue (`queue_full`, RESOURCE_EXHAUSTED) carries `retry == "later"`, and with retries on
it is repeated until the queue has room — a single job, a best-effort batch's refused jobs, a flow;
a batch refused as over `limits.max_batch_jobs` after a reload lowered it is cut again by the new
bound and sent once more. The TypeScript SDK's tests of the same are in
tests/client/enqueue-advice.test.ts."""
from __future__ import annotations

import threading

import grpc
import pytest
from conftest import ADMIN_KEY, SERVER_TOML, ServerProcess, eventually

import sepp

RETRY = sepp.RetryOptions(max_attempts=1000, base_delay_ms=5, max_delay_ms=20)


def test_a_batch_of_multi_byte_text_is_cut_by_its_utf8_bytes(small_message_server: ServerProcess, queue: str) -> None:
    with sepp.Client(small_message_server.address, api_key=ADMIN_KEY) as client:
        # 15,000 bytes of metadata in 5,000 characters each: the hundred jobs are about 510,000
        # characters, under the 1200 KiB message, and about 1,510,000 bytes, over it.
        note = "中" * 5000
        specs = [sepp.JobSpec(queue, "t", f"é{i}🙂", metadata={"note": note}) for i in range(100)]
        outcomes = client.enqueue_batch(specs)
        assert [o.ok or o.message for o in outcomes] == [True] * 100
        assert client.stats().batches == 2, "two messages, not one"
        first = outcomes[0]
        assert first.ok and first.id is not None
        assert client.get_job(first.id).metadata == {"note": note}
        # Enqueues gathered while a message is on its way are cut by the same count.
        futures = [client.enqueue_future(spec) for spec in specs]
        assert all(f.result(timeout=30).id for f in futures)


def test_a_full_queue_says_later_and_is_retried_until_it_drains(server: ServerProcess) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as once, \
            sepp.Client(server.address, api_key=ADMIN_KEY, retry=RETRY) as retried:
        queue = "py-full"  # max_depth = 1 (conftest.py)
        try:
            first = once.enqueue(queue, "t", "first")
            batches = once.stats().batches
            with pytest.raises(sepp.QueueFullError) as full:
                once.enqueue(queue, "t", "second")
            assert full.value.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert full.value.retry == "later", "what the server's sepp-retry trailer says of it"
            with pytest.raises(sepp.QueueFullError) as atomic:
                once.enqueue_atomic([sepp.JobSpec(queue, "t")])
            assert atomic.value.retry == "later"
            assert once.stats().batches == batches + 2, "each sent once"

            # Retries on: refused and sent again until a worker takes the first job off the queue.
            second = retried.enqueue_future(sepp.JobSpec(queue, "t", "second"))
            eventually(lambda: retried.stats().batches >= 3 or None, "the enqueue refused and sent again")
            [lease] = once.reserve([queue])
            assert lease.id == first.id
            once.ack(lease)
            stored = second.result(timeout=30)
            assert once.get_job(stored.id).state == "ready"
        finally:
            for job in once.reserve([queue], max_jobs=2):
                once.ack(job)


def _drain_one(client: sepp.Client, queue: str) -> str:
    """Takes a job of `queue` off it (reserve and ack), so that a full queue has room for one more."""
    [lease] = client.reserve([queue])
    client.ack(lease)
    return lease.id


def _steady_stats(client: sepp.Client) -> sepp.ClientStats:
    """The client's counters read twice alike: a send counts its jobs, then its batch."""
    for _ in range(1000):
        first, second = client.stats(), client.stats()
        if first == second:
            return second
    raise AssertionError("the client's counters never held still")


def test_a_batchs_refused_jobs_and_a_refused_flow_are_sent_again_until_the_queue_has_room(
        server: ServerProcess) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as once, \
            sepp.Client(server.address, api_key=ADMIN_KEY, retry=RETRY) as retried:
        queue = "py-full"  # max_depth = 1 (conftest.py)
        specs = [sepp.JobSpec(queue, "a"), sepp.JobSpec(queue, "b")]
        plain = once.enqueue_batch(specs)
        assert [o.ok or o.reason for o in plain] == [True, "queue_full"], "retries off: the refusal is an outcome"
        _drain_one(once, queue)

        # Retries on: `b` alone is sent again until a job leaves the queue; its outcome takes its place.
        done: list[list[sepp.EnqueueOutcome]] = []
        thread = threading.Thread(target=lambda: done.append(retried.enqueue_batch(specs)))
        thread.start()
        eventually(lambda: retried.stats().batches >= 2 or None, "the refused job sent again")
        # Each retry sends `b` alone while the queue stays full, and may have gone again by now
        # (the fresh clone of 784870b6 read 3 batches): whatever their number, never `a` again.
        sent = _steady_stats(retried)
        assert sent.enqueued_jobs == 2 + (sent.batches - 1), "the stored job is not sent again"
        _drain_one(once, queue)
        thread.join(30)
        [stored] = done
        assert [once.get_job(o.id).type for o in stored if o.id is not None] == ["a", "b"], "in the order given"

        # A flow refused for a full queue alone stored nothing: sent again the same way.
        with pytest.raises(sepp.QueueFullError) as refused:
            once.enqueue_flow(sepp.Flow().add("only", sepp.JobSpec(queue, "t")))
        assert refused.value.retry == "later"
        messages = retried.stats().produce_messages
        flowed: list[dict[str, sepp.Enqueued]] = []
        thread = threading.Thread(target=lambda: flowed.append(
            retried.enqueue_flow(sepp.Flow().add("only", sepp.JobSpec(queue, "t")))))
        thread.start()
        eventually(lambda: retried.stats().produce_messages >= messages + 2 or None, "the refused flow sent again")
        _drain_one(once, queue)
        thread.join(30)
        [ids] = flowed
        assert once.get_job(ids["only"].id).state == "ready"
        _drain_one(once, queue)


def test_a_batch_over_max_batch_jobs_lowered_by_a_reload_is_cut_by_the_new_bound_once(server: ServerProcess) -> None:
    with sepp.Client(server.address, api_key=ADMIN_KEY) as streamed, \
            sepp.Client(server.address, api_key=ADMIN_KEY, transport="unary") as unary:
        clients = [streamed, unary]
        for client in clients:
            client.enqueue("py-bounds", "t")  # Each learns the bound: 1000.
        try:
            server.config.write_text(SERVER_TOML + "[limits]\nmax_batch_jobs = 4\n")
            report = streamed.reload_config()
            assert report.applied and not report.problems
            specs = [sepp.JobSpec("py-bounds", "t", f"{i}") for i in range(10)]
            for client in clients:
                before = client.stats().batches
                # A batch cut at 1000 (one message of 10), refused, asked again and sent as 4 + 4 + 2.
                outcomes = client.enqueue_batch(specs)
                assert [o.ok or o.message for o in outcomes] == [True] * 10
                assert client.stats().batches == before + 4, "refused once, then three batches"
                assert [client.get_job(o.id).payload for o in outcomes if o.id is not None] == \
                    [f"{i}".encode() for i in range(10)]
                # Never twice: an atomic batch over the bound is refused once, and the refusal is the answer.
                with pytest.raises(sepp.SeppError) as atomic:
                    client.enqueue_atomic(specs)
                assert atomic.value.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert atomic.value.retry == "never"
                assert "the limit is 4 (limits.max_batch_jobs)" in atomic.value.message
                assert client.stats().batches == before + 5, "sent once"
        finally:
            server.config.write_text(SERVER_TOML)
            streamed.reload_config()
