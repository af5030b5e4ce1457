"""CreateBatch and AddToBatch under refusals, with the client's `retry` set, by the policy enqueue
follows (_enqueue.py); without it, each is one call.

- A member refused `queue_full` stored nothing (each member is enqueued on its own merits): it is
  added to the batch again after a backoff, with the members refused with it, until the queues have
  room, the tries run out or the deadline nears; the outcome of its last try replaces its refusal.
- A keyless member gets one of the SDK's idempotency keys (`sepp-retry:<uuid>`) before it is first
  sent, as an enqueued job does (a debounced one takes none). An AddToBatch whose members are all
  keyed (or debounced) is then safe to repeat after UNAVAILABLE: a member the lost send stored is
  found by its key and answered as that job, and a duplicate never joins the batch twice (batches.ts
  on the server).
- A CreateBatch is never repeated after UNAVAILABLE: it may have created the batch, and a repeat
  would create a second one. A call the server refused with an answer marked "later" stored
  nothing: it is sent again as it was.
- `seal` waits for the members refused for now, since a sealed batch takes members only from its
  own running members. The first call (CreateBatch or AddToBatch) asks the server to seal only if
  every member was stored (`seal_if_all_stored`): with nothing refused that one call is all.
  Otherwise the batch is left open, the refused members are added again, and SealBatch seals it
  once they are in or given up. A server older than the field ignores it and answers the batch
  open: it is sealed by SealBatch too. An AddToBatch with the field repeated after UNAVAILABLE
  whose first send sealed the batch is answered as that send (the server finds every member by
  its key in the batch).
- A SealBatch that fails leaves the batch open: its error is a BatchLeftOpenError, which carries
  the batch's id.

The TypeScript SDK's batch-retries.ts does the same.
"""
from __future__ import annotations

import time
import uuid
from typing import Callable, Protocol, Sequence

import grpc

from ._connection import Connection, later_retry_delay_s
from ._enqueue import SDK_RETRY_KEY_PREFIX
from .errors import BatchLeftOpenError, SeppError
from .v1 import batch_pb2, job_pb2


class BatchAnswer(Protocol):
    """A CreateBatch's or AddToBatch's answer."""

    @property
    def batch(self) -> batch_pb2.Batch: ...

    @property
    def results(self) -> Sequence[job_pb2.EnqueueResult]: ...


First = Callable[[list[job_pb2.EnqueueJob], bool, bool, bool], BatchAnswer]
"""The call as asked: (members, seal, repeatable: safe to repeat after UNAVAILABLE, seal if all
stored: seal only if no member is refused)."""
Again = Callable[[str, list[job_pb2.EnqueueJob]], BatchAnswer]
"""Adds members to the batch it made again (unsealed); safe to repeat after UNAVAILABLE."""


def _refused_for_now(results: Sequence[job_pb2.EnqueueResult]) -> list[int]:
    """The members of `results` refused `queue_full`, by index."""
    return [i for i, r in enumerate(results)
            if r.WhichOneof("outcome") == "rejection" and r.rejection.reason == job_pb2.REJECTION_REASON_QUEUE_FULL]


def send_batch_members(conn: Connection, first: First, again: Again, jobs: list[job_pb2.EnqueueJob], *,
                       seal: bool, create: bool,
                       deadline_ms: int | None) -> tuple[batch_pb2.Batch, list[job_pb2.EnqueueResult]]:
    """Sends a batch's members (see the top): `create` says whether the first call creates the
    batch (never repeated after UNAVAILABLE)."""
    retry = conn.retry
    if retry is None:
        answer = first(jobs, seal, False, False)
        return answer.batch, list(answer.results)
    deadline_at = time.monotonic() + conn.timeout_s(deadline_ms)
    for job in jobs:
        if not job.idempotency_key and not job.debounce_key:
            job.idempotency_key = f"{SDK_RETRY_KEY_PREFIX}{uuid.uuid4()}"
    retries = 0
    while True:
        try:
            answer = first(jobs, False, not create, seal)
            break
        except SeppError as error:
            # Answered "later" by the server (not a lost answer): nothing was stored.
            later = error.retry == "later" and error.grpc_code != grpc.StatusCode.UNAVAILABLE and not conn.closed
            delay_s = later_retry_delay_s(retry, retries, deadline_at) if later else None
            if delay_s is None:
                raise
            time.sleep(delay_s)
            retries += 1
    results = list(answer.results)
    batch = answer.batch
    refused = _refused_for_now(results)
    while refused and batch.id:
        delay_s = None if conn.closed else later_retry_delay_s(retry, retries, deadline_at)
        if delay_s is None:
            break
        time.sleep(delay_s)
        retries += 1
        added = again(batch.id, [jobs[i] for i in refused])
        for i, result in zip(refused, added.results):
            results[i] = result
        batch = added.batch
        refused = _refused_for_now(results)
    # Open: members were refused, or the server predates seal_if_all_stored.
    if seal and batch.state == batch_pb2.BATCH_STATE_OPEN:
        try:
            sealed = conn.invoke(conn.stub.SealBatch, batch_pb2.SealBatchRequest(batch_id=batch.id),
                                 deadline_ms=deadline_ms, retry_safe=True)
        except SeppError as error:
            raise BatchLeftOpenError(batch.id, error) from error
        batch = sealed.batch
    return batch, results
