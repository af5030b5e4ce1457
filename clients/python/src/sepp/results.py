"""Job results and progress as the client sends and reads them.

A result is bytes with a content type, like a payload: a handler's return
value (or `Client.ack`'s `result`) is encoded by its type, and a result read
back (`wait_for`, `get_job`, events) is decoded by its content type.
"""
from __future__ import annotations

import json as _json
import re
from dataclasses import dataclass
from typing import Any

import grpc

from .errors import SeppError
from .v1 import job_pb2

_TEXT_TYPE = "text/plain; charset=utf-8"
_JSON_CONTENT_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json\s*(?:;|$)", re.IGNORECASE)


def is_json_content_type(content_type: str) -> bool:
    """True for `application/json` and `application/*+json`, with or without parameters."""
    return _JSON_CONTENT_TYPE.match(content_type) is not None
_TEXT = re.compile(r"^text/", re.IGNORECASE)


@dataclass(frozen=True)
class JobResult:
    """A result given as bytes with its own content type: return one from a handler to choose both."""

    data: bytes | str
    """The result; a str is sent as UTF-8."""
    content_type: str = "application/octet-stream"
    """Its MIME type."""


def encode_result(value: Any) -> job_pb2.JobResult | None:
    """A handler's return value as the protocol's result: None is no result; a JobResult as
    given; bytes as `application/octet-stream`; a str as text; anything else as JSON. Raises
    SeppError (invalid_argument) for a value with no JSON form."""
    if value is None:
        return None
    if isinstance(value, JobResult):
        data = value.data.encode("utf-8") if isinstance(value.data, str) else bytes(value.data)
        return job_pb2.JobResult(data=data, content_type=value.content_type)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return job_pb2.JobResult(data=bytes(value))
    if isinstance(value, str):
        return job_pb2.JobResult(data=value.encode("utf-8"), content_type=_TEXT_TYPE)
    try:
        text = _json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise SeppError(grpc.StatusCode.INVALID_ARGUMENT, f"the result cannot be sent as JSON: {error}") from error
    return job_pb2.JobResult(data=text.encode("utf-8"), content_type="application/json")


def decode_result(data: bytes, content_type: str) -> Any:
    """Bytes decoded by their content type: JSON → the parsed value (the bytes when they do not
    parse, or nest deeper than Python's json module reads), `text/*` → str, anything else → bytes."""
    if is_json_content_type(content_type):
        try:
            return _json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            return data
    if _TEXT.match(content_type):
        return data.decode("utf-8", errors="replace")
    return data


@dataclass(frozen=True)
class JobProgress:
    """How far along a job is, as its worker last reported."""

    percent: float | None
    """0 to 100, or None when the worker reported no percentage."""
    data: Any
    """The JSON document the worker reported (parsed), or None."""
    reported_at_ms: int
    """When it was last reported."""


def progress_from_proto(progress: job_pb2.JobProgress, present: bool) -> JobProgress | None:
    if not present:
        return None
    data: Any = None
    if progress.json:
        try:
            data = _json.loads(progress.json)
        except (ValueError, RecursionError):
            data = progress.json
    return JobProgress(progress.percent if progress.has_percent else None, data, progress.reported_at_ms)


def progress_fields(percent: float | None, data: Any, data_given: bool) -> dict[str, Any]:
    """A progress report's fields; raises ValueError for a bad one."""
    if percent is not None and not (isinstance(percent, (int, float)) and not isinstance(percent, bool)
                                    and 0 <= percent <= 100):
        raise ValueError(f"progress: the percentage must be a number from 0 to 100, not {percent!r}")
    json_text = ""
    if data_given:
        try:
            json_text = _json.dumps(data, separators=(",", ":"))
        except (TypeError, ValueError) as error:
            raise ValueError(f"progress: the document has no JSON form: {error}") from error
    if percent is None and not json_text:
        raise ValueError("progress: give a percentage (0 to 100), a JSON document, or both")
    return {"percent": float(percent or 0), "has_percent": percent is not None, "json": json_text}
