"""A value the protocol cannot carry, refused as INVALID_ARGUMENT: protobuf refuses it
while the SDK builds the request (a float or a string where an integer goes, an integer
past the field's range) with a TypeError or ValueError; `checked_arguments` turns exactly
those into a `SeppError` naming the call, as every other refused argument is."""
from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Callable, TypeVar

import grpc

from .errors import SeppError

_T = TypeVar("_T")

# protobuf's words for a value a field cannot hold (python3-protobuf 3.21, upb and pure Python).
_PROTOBUF_REFUSAL = re.compile(r"has type [\w.]+, but expected one of|^Value out of range|^Unknown enum value")


def protobuf_refusal(call: str, error: BaseException) -> SeppError | None:
    """INVALID_ARGUMENT naming `call` for protobuf's refusal of a field's value; None for any other error."""
    if not isinstance(error, (TypeError, ValueError)) or not _PROTOBUF_REFUSAL.search(str(error)):
        return None
    return SeppError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"{call}: the request holds a value the protocol cannot carry ({error}): counts, page sizes, "
        "limits, priorities and ms are integers",
    )


def _checked(call: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (TypeError, ValueError) as error:
            refused = protobuf_refusal(call, error)
            if refused is None:
                raise
            raise refused from error

    return checked


def checked_arguments(cls: type[_T]) -> type[_T]:
    """Wraps each public method of `cls` (not generators, properties or static methods) with protobuf_refusal."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(member) or inspect.isgeneratorfunction(member):
            continue
        setattr(cls, name, _checked(f"{cls.__name__}.{name}", member))
    return cls
