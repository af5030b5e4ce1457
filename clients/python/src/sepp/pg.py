"""Enqueue a job inside your own PostgreSQL transaction, when sepp keeps its jobs in
the same database (docs/postgres.md, "Enqueue in your own transaction"):

    import psycopg2
    from sepp.pg import enqueue_in_transaction

    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO orders (id, total) VALUES (%s, %s)", (42, 1999))
        enqueue_in_transaction(cur, "emails", "send_receipt", json={"order": 42})
    # the job exists once the `with` block committed, and never if it rolled back

It calls the SQL function `sepp.enqueue` on the DB-API cursor you pass (psycopg2's,
Debian's python3-psycopg2; psycopg 3's works too: both take `%s` parameters), so this
module imports no driver. A refusal is the driver's error: its `pgcode` (psycopg2) is
the SQLSTATE and its `diag.message_detail` sepp's rejection reason.
"""
from __future__ import annotations

import json as _json
import re
from collections.abc import Mapping
from typing import Any, Protocol

from ._convert import time_ms
from .models import UNSET, Enqueued, Payload, TimeInput

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_TEXT_TYPE = "text/plain; charset=utf-8"


class Cursor(Protocol):
    """What enqueue_in_transaction needs of a DB-API cursor."""

    def execute(self, query: str, vars: Any = ..., /) -> Any: ...

    def fetchone(self) -> Any: ...


def enqueue_in_transaction(
    cursor: Cursor,
    queue: str,
    type: str,
    payload: Payload | None = None,
    *,
    json: Any = UNSET,
    content_type: str | None = None,
    priority: int | None = None,
    run_at: TimeInput | None = None,
    delay_ms: int | None = None,
    max_attempts: int | None = None,
    lease_ms: int | None = None,
    execution_timeout_ms: int | None = None,
    idempotency_key: str | None = None,
    unique_while_active: bool | None = None,
    ttl_ms: int | None = None,
    expires_at: TimeInput | None = None,
    metadata: Mapping[str, str] | None = None,
    traceparent: str | None = None,
    tracestate: str | None = None,
    group: str | None = None,
    schema: str = "sepp",
) -> Enqueued:
    """Enqueues a job in the transaction open on `cursor`'s connection; it exists once that
    transaction commits. The options are `Client.enqueue`'s (without dependencies), plus
    `lease_ms` and `schema` (sepp's `store.schema`, default `sepp`). `execution_timeout_ms` is the
    protocol's `timeout_ms` (the job's own hard timeout per attempt)."""
    if not _SCHEMA.match(schema):
        raise ValueError(f'schema "{schema}" is not a plain identifier')
    if payload is not None and json is not UNSET:
        raise ValueError("give payload or json, not both")
    data: bytes
    if json is not UNSET:
        data = _json.dumps(json, separators=(",", ":")).encode()
        content_type = content_type or "application/json"
    elif isinstance(payload, str):
        data = payload.encode()
        content_type = content_type or _TEXT_TYPE
    else:
        data = bytes(payload or b"")
    options: dict[str, Any] = {
        "content_type": content_type,
        "priority": priority,
        "run_at_ms": None if run_at is None else time_ms(run_at, "run_at"),
        "delay_ms": delay_ms,
        "max_attempts": max_attempts,
        "lease_ms": lease_ms,
        "timeout_ms": execution_timeout_ms,
        "idempotency_key": idempotency_key,
        "unique_while_active": unique_while_active,
        "ttl_ms": ttl_ms,
        "expires_at_ms": None if expires_at is None else time_ms(expires_at, "expires_at"),
        "metadata": None if metadata is None else dict(metadata),
        "traceparent": traceparent,
        "tracestate": tracestate,
        "group": group,
    }
    given = {key: value for key, value in options.items() if value is not None}
    cursor.execute(
        f"SELECT job_id, deduplicated FROM {schema}.enqueue(%s, %s, %s::bytea, %s::jsonb)",
        (queue, type, data, _json.dumps(given)),
    )
    row = cursor.fetchone()
    if row is None:
        raise RuntimeError(f"{schema}.enqueue returned no row")
    return Enqueued(str(row[0]), bool(row[1]))
