"""Enqueues the server takes, and the server's advice acted on (docs/protocol.md, "Whether to repeat
a call"): the client cuts a batch by the UTF-8 bytes of what it sends, not by characters; a refusal
for a full queue (`queue_full`, RESOURCE_EXHAUSTED) carries `retry == "later"`, and with retries on
it is repeated until the queue has room. The TypeScript SDK's tests of the same are in
tests/client/enqueue-advice.test.ts."""
from __future__ import annotations

import grpc
import pytest
from conftest import ADMIN_KEY, ServerProcess, eventually

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
