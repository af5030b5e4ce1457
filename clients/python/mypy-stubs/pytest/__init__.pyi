# The part of pytest's API the tests use, as pytest 7.2 (Debian 12's python3-pytest) declares
# it, for mypy only: pytest itself runs the tests. Without it, mypy checks pytest's own typed
# sources with the tests (~100 modules: 4.8 of a cold run's 8 s of CPU, which CI's fresh clone
# pays every run); with it our code is checked as strictly, against these same signatures.
# A test using more of pytest fails mypy with "Module has no attribute": add it here, copied
# from pytest's declaration.
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from re import Pattern
from types import TracebackType
from typing import Any, AnyStr, Generic, Literal, NoReturn, TypeVar, overload

_F = TypeVar("_F", bound=Callable[..., object])
_Markable = TypeVar("_Markable", bound=Callable[..., object] | type)
_E = TypeVar("_E", bound=BaseException)
_ScopeName = Literal["session", "package", "module", "class", "function"]

class FixtureFunctionMarker:
    def __call__(self, function: _F) -> _F: ...

@overload
def fixture(
    fixture_function: _F,
    *,
    scope: _ScopeName = ...,
    params: Iterable[object] | None = ...,
    autouse: bool = ...,
    ids: Sequence[object | None] | Callable[[Any], object | None] | None = ...,
    name: str | None = ...,
) -> _F: ...
@overload
def fixture(
    fixture_function: None = ...,
    *,
    scope: _ScopeName = ...,
    params: Iterable[object] | None = ...,
    autouse: bool = ...,
    ids: Sequence[object | None] | Callable[[Any], object | None] | None = ...,
    name: str | None = None,
) -> FixtureFunctionMarker: ...

class MarkDecorator:
    def __call__(self, arg: _Markable) -> _Markable: ...

class _ParametrizeMarkDecorator(MarkDecorator):
    def __call__(  # type: ignore[override]
        self,
        argnames: str | Sequence[str],
        argvalues: Iterable[Sequence[object] | object],
        *,
        indirect: bool | Sequence[str] = ...,
        ids: Iterable[None | str | float | int | bool] | Callable[[Any], object | None] | None = ...,
        scope: _ScopeName | None = ...,
    ) -> MarkDecorator: ...

class MarkGenerator:
    parametrize: _ParametrizeMarkDecorator

mark: MarkGenerator

class ExceptionInfo(Generic[_E]):
    @property
    def value(self) -> _E: ...
    @property
    def type(self) -> type[_E]: ...
    @property
    def tb(self) -> TracebackType: ...
    def match(self, regexp: str | Pattern[str]) -> Literal[True]: ...

class RaisesContext(Generic[_E]):
    def __enter__(self) -> ExceptionInfo[_E]: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool: ...

@overload
def raises(
    expected_exception: type[_E] | tuple[type[_E], ...],
    *,
    match: str | Pattern[str] | None = ...,
) -> RaisesContext[_E]: ...
@overload
def raises(
    expected_exception: type[_E] | tuple[type[_E], ...],
    func: Callable[..., Any],
    *args: Any,
    **kwargs: Any,
) -> ExceptionInfo[_E]: ...

class CaptureResult(Generic[AnyStr]):
    out: AnyStr
    err: AnyStr
    def __iter__(self) -> Iterator[AnyStr]: ...

class CaptureFixture(Generic[AnyStr]):
    def readouterr(self) -> CaptureResult[AnyStr]: ...

class LogCaptureFixture:
    @property
    def records(self) -> list[logging.LogRecord]: ...
    @property
    def text(self) -> str: ...
    @property
    def messages(self) -> list[str]: ...
    def set_level(self, level: int | str, logger: str | None = None) -> None: ...
    def clear(self) -> None: ...

class MonkeyPatch:
    def setenv(self, name: str, value: str, prepend: str | None = None) -> None: ...
    def delenv(self, name: str, raising: bool = True) -> None: ...

class FixtureRequest:
    # pytest declares no type for it (the collection node of the request's scope).
    @property
    def node(self) -> Any: ...

def skip(reason: str = ..., *, allow_module_level: bool = ...) -> NoReturn: ...
