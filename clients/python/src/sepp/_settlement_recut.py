"""The re-cut of a Worker's settlements after the server's bounds went down (used by
_work_stream.py). A Work stream ended as over a bound of the call (over_call_bound: a batch of more
settlements than a reload left in `limits.max_batch_jobs`, a message over a restart's
`grpc.max_message_bytes`) keeps its settlements not answered; the server's bounds are asked again,
and if they are lower than the ones the stream's batches were cut by (an enqueue's refusal may have
lowered them already: that the ask lowered them is not enough to know), the next stream opens at
once and sends them again, cut by the new bounds — each once. A settlement refused a second time,
or bounds that did not go down, take the transport's broken path (unary calls).

Each settlement is fenced by its attempt, so a repeat of one the server applied before the refusal
changes nothing: one written before the refusal is "repeated", and its answer is read as
_repeated_settlement.py says. The TypeScript SDK's settlement-recut.ts does the same.

Not thread-safe: the transport calls it under its own lock (except `lowered`, which blocks on a
call and touches none of its state).
"""
from __future__ import annotations

from typing import Iterable

from ._connection import Connection


class SettlementRecut:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._sent_again: set[int] = set()
        """Request ids of settlements sent again after a refusal (never twice)."""
        self._written: set[int] = set()
        """Those of them written before the refusal: the server may have applied them."""

    def repeated(self, request_id: int) -> bool:
        """Whether this settlement is a repeat of one written before a refusal (it may have been applied)."""
        return bool(self._written) and request_id in self._written

    def done(self, request_id: int) -> None:
        """The settlement was answered or given up: forgotten."""
        if self._sent_again:
            self._sent_again.discard(request_id)
            self._written.discard(request_id)

    def refused(self, waiting: Iterable[tuple[int, bool]]) -> tuple[list[int], list[int]]:
        """The stream was refused over a bound: of the settlements waiting for answers (request id,
        and whether it was written), in order, those not sent again before are returned first (to
        send again; marked repeated when written), the others second (lost)."""
        again: list[int] = []
        lost: list[int] = []
        for request_id, written in waiting:
            if request_id in self._sent_again:
                lost.append(request_id)
                continue
            again.append(request_id)
            self._sent_again.add(request_id)
            if written:
                self._written.add(request_id)
        return again, lost

    def lowered(self, cut_by: tuple[int, int]) -> bool:
        """Asks the server's bounds again: whether they went down below `cut_by` (max_batch_jobs,
        max_message_bytes), the bounds the refused stream cut its batches by."""
        self._conn.relearn_server_bounds()
        jobs, size = cut_by
        return self._conn.max_batch_jobs < jobs or self._conn.max_message_bytes < size
