"""Runtime guards: while orchestration code is replayed, clock/random/uuid reads and real effects raise.

``guarded(modules)`` is a context manager. While it is active *on the current thread*, these calls made
from orchestration code raise ``NondeterministicCall`` (a ``BaseException``, so a workflow's
``except Exception`` cannot swallow it; the first trip is also recorded on the returned ``GuardState``):

* values — ``time.time/time_ns/monotonic/perf_counter``, ``datetime.now/utcnow/today``,
  ``date.today``, module-level ``random.*``, ``uuid.uuid1/uuid4``, ``os.urandom``, ``secrets.*``:
  they trip only when the *immediate caller* is project code, so the standard library reading the
  clock for its own purposes (``logging`` timestamps, ``asyncio``'s loop) keeps working;
* effects — socket creation and ``connect``, ``subprocess.Popen``: they trip when the nearest
  non-library frame on the stack is project code, so a workflow calling ``urllib`` is caught even
  though the socket is made deep inside the standard library.

"Library" means the standard library, site-packages and replaytest itself; everything else is project
code, and so are the folders of the orchestration modules handed to ``guarded`` wherever they live. Other threads (pytest-xdist's execnet threads, a test's HTTP server) always pass straight
through. Calls spelled ``time.time()`` are caught by patching the source modules; names imported
into an orchestration module (``from datetime import datetime``, ``from time import time``) are
caught by swapping that module's globals for guarded stand-ins. Everything is restored when the last
guard on any thread exits, exceptions included.
"""

from __future__ import annotations

import datetime as _datetime
import os
import random
import secrets
import site
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from replaytest.replay.divergence import SourcePosition

_VALUE_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    time: ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"),
    random: (
        "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "getrandbits",
        "randbytes", "gauss", "triangular", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
        "gammavariate", "betavariate", "paretovariate", "weibullvariate", "binomialvariate",
    ),
    uuid: ("uuid1", "uuid4", "uuid6", "uuid7"),
    os: ("urandom",),
    secrets: ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits"),
}  # fmt: skip
_EFFECT_METHODS: tuple[tuple[type, str, str], ...] = (
    (socket.socket, "__init__", "socket.socket"),
    (socket.socket, "connect", "socket.connect"),
    (socket.socket, "connect_ex", "socket.connect_ex"),
    (subprocess.Popen, "__init__", "subprocess.Popen"),
)


# The lint category of each guarded call, by the call's module: a replayer names the framework's
# replacement for it from its profile's ``replacements``, the same vocabulary the linter reports in.
CALL_CATEGORIES: dict[str, str] = {
    "time": "clock",
    "datetime": "clock",
    "date": "clock",
    "random": "random",
    "secrets": "random",
    "os": "random",  # os.urandom is the only guarded os call
    "uuid": "uuid",
    "socket": "network",
    "subprocess": "concurrency",
}


class NondeterministicCall(BaseException):
    """A guarded call made by orchestration code during replay. ``call`` names it (``time.time``),
    ``category`` is its lint category (``clock``)."""

    def __init__(self, call: str, source: SourcePosition | None, position: int | None = None) -> None:
        self.call = call
        self.category = CALL_CATEGORIES.get(call.split(".")[0], "")
        self.source = source
        self.position = position  # the history position the replay had reached, when known
        where = f" at {source}" if source else ""
        super().__init__(f"{call}() called from orchestration code during replay{where}")


@dataclass
class GuardState:
    """What the guard saw on one thread: every trip in order (the first one is the divergence).
    ``position`` (given by the replayer) tells each trip where in the history the replay was."""

    position: Callable[[], int] | None = None
    # Folders of the orchestration modules: project code even when the project is installed into
    # site-packages (a CI that installs the app as a wheel), where the library rule would skip it.
    project_prefixes: tuple[str, ...] = ()
    trips: list[NondeterministicCall] = field(default_factory=list)

    def is_orchestration(self, filename: str) -> bool:
        return filename.startswith(self.project_prefixes) or is_project_file(filename)


_lock = threading.RLock()
_active: dict[int, GuardState] = {}
_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) to restore
_originals: dict[int, tuple[str, Any]] = {}  # id(original function) -> (qualified name, wrapper)
_user_cache: dict[str, bool] = {}
_INHERITED = object()  # marks an attribute that was inherited, not set on the patched class


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    prefixes.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the replaytest package
    prefixes.add(os.path.dirname(os.__file__))
    # Distribution layouts put packages elsewhere too (Debian's dist-packages, the user site).
    prefixes.update(getattr(site, "getsitepackages", lambda: [])())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        prefixes.add(site.USER_SITE)
    return tuple(os.path.normcase(os.path.abspath(p)) + os.sep for p in prefixes)


_LIBRARY_PREFIXES = _library_prefixes()


def is_project_file(filename: str) -> bool:
    """True for code that is neither the standard library, site-packages, replaytest nor synthetic."""
    cached = _user_cache.get(filename)
    if cached is None:
        if filename.startswith("<"):
            cached = False
        else:
            normal = os.path.normcase(os.path.abspath(filename))
            cached = not normal.startswith(_LIBRARY_PREFIXES)
        _user_cache[filename] = cached
    return cached


def _position(frame: types.FrameType) -> SourcePosition:
    return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def _trip(state: GuardState, call: str, frame: types.FrameType) -> None:
    error = NondeterministicCall(call, _position(frame), state.position() if state.position else None)
    state.trips.append(error)
    raise error


def _value_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None:
            caller = sys._getframe(1)
            if state.is_orchestration(caller.f_code.co_filename):
                _trip(state, name, caller)
        return original(*args, **kwargs)

    guard.__name__ = getattr(original, "__name__", name)
    guard.__qualname__ = getattr(original, "__qualname__", name)
    guard.__doc__ = getattr(original, "__doc__", None)
    guard.__wrapped__ = original  # type: ignore[attr-defined]
    return guard


def _effect_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None:
            frame: types.FrameType | None = sys._getframe(1)
            while frame is not None:
                filename = frame.f_code.co_filename
                if state.is_orchestration(filename):
                    _trip(state, name, frame)
                if _is_replaytest_file(filename):
                    break  # reached replaytest itself (the engine or a runtime): not orchestration code
                frame = frame.f_back
        return original(*args, **kwargs)

    guard.__name__ = getattr(original, "__name__", name)
    guard.__qualname__ = getattr(original, "__qualname__", name)
    guard.__wrapped__ = original  # type: ignore[attr-defined]
    return guard


_REPLAYTEST_PREFIX = os.path.normcase(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _is_replaytest_file(filename: str) -> bool:
    return not filename.startswith("<") and os.path.normcase(os.path.abspath(filename)).startswith(_REPLAYTEST_PREFIX)


class _ClassProxy:
    """Stands in for ``datetime.datetime`` / ``datetime.date`` inside an orchestration module's globals:
    guarded ``now/utcnow/today``, everything else (construction, isinstance, class attributes) delegated."""

    def __init__(self, real: type, guarded: dict[str, Callable[..., Any]]) -> None:
        self._real = real
        self._guarded = guarded

    def __getattr__(self, name: str) -> Any:
        if name in self._guarded:
            return self._guarded[name]
        return getattr(self._real, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._real(*args, **kwargs)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self._real)

    def __subclasscheck__(self, subclass: type) -> bool:
        return issubclass(subclass, self._real)

    def __repr__(self) -> str:
        return repr(self._real)


def _datetime_proxies() -> dict[int, Any]:
    """Guarded stand-ins keyed by id of the real object they replace (the classes and the module)."""
    real_datetime, real_date = _datetime.datetime, _datetime.date
    datetime_proxy = _ClassProxy(
        real_datetime,
        {
            "now": _value_wrapper("datetime.now", real_datetime.now),
            "utcnow": _value_wrapper("datetime.utcnow", real_datetime.utcnow),
            "today": _value_wrapper("datetime.today", real_datetime.today),
        },
    )
    date_proxy = _ClassProxy(real_date, {"today": _value_wrapper("date.today", real_date.today)})
    module_proxy = types.ModuleType("datetime", _datetime.__doc__)
    module_proxy.__dict__.update(_datetime.__dict__)
    module_proxy.datetime = datetime_proxy  # type: ignore[attr-defined]
    module_proxy.date = date_proxy  # type: ignore[attr-defined]
    return {id(real_datetime): datetime_proxy, id(real_date): date_proxy, id(_datetime): module_proxy}


def _install() -> None:
    for module, names in _VALUE_FUNCTIONS.items():
        for name in names:
            original = getattr(module, name, None)
            if original is None:
                continue  # not in this Python version (randbytes, binomialvariate, uuid7, …)
            qualified = f"{module.__name__}.{name}"
            wrapper = _value_wrapper(qualified, original)
            _originals[id(original)] = (qualified, wrapper)
            _installed.append((module, name, original))
            setattr(module, name, wrapper)
    for owner, name, label in _EFFECT_METHODS:
        # connect/connect_ex are inherited from the C base class: restore by deleting the override.
        _installed.append((owner, name, owner.__dict__.get(name, _INHERITED)))
        setattr(owner, name, _effect_wrapper(label, getattr(owner, name)))


def _uninstall() -> None:
    while _installed:
        owner, name, original = _installed.pop()
        if original is _INHERITED:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    _originals.clear()


def _swap_globals(modules: Iterable[types.ModuleType]) -> list[tuple[dict[str, Any], str, Any]]:
    """Replace names an orchestration module imported directly (``from time import time``) by guards."""
    proxies = _datetime_proxies()
    swapped: list[tuple[dict[str, Any], str, Any]] = []
    for module in modules:
        namespace = module.__dict__
        for name, value in list(namespace.items()):
            replacement = proxies.get(id(value))
            if replacement is None and id(value) in _originals:
                replacement = _originals[id(value)][1]
            if replacement is not None:
                swapped.append((namespace, name, value))
                namespace[name] = replacement
    return swapped


def orchestration_modules(objects: Iterable[Any]) -> list[types.ModuleType]:
    """The loaded modules whose globals orchestration code reads: the modules defining ``objects`` and
    the other loaded modules of the same top-level package (helpers the workflow calls). Objects
    defined by replaytest itself (a ``WorkflowDef`` wrapper) are skipped: their ``fn`` is passed too."""
    roots: set[str] = set()
    for obj in objects:
        module_name = getattr(obj, "__module__", None)
        filename = getattr(sys.modules.get(module_name or ""), "__file__", None)
        if module_name and filename and not _is_replaytest_file(filename):
            roots.add(module_name)
    top_levels = {name.split(".")[0] for name in roots}
    chosen: dict[str, types.ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in top_levels:
            continue
        filename = getattr(module, "__file__", None)
        if filename and not _is_replaytest_file(filename):
            chosen[name] = module
    return [chosen[name] for name in sorted(chosen)]


def _module_prefixes(modules: Iterable[types.ModuleType]) -> tuple[str, ...]:
    """The folders holding ``modules`` (as ``co_filename`` spells them), replaytest's own excluded."""
    prefixes = set()
    for module in modules:
        filename = getattr(module, "__file__", None)
        if filename and not _is_replaytest_file(filename):
            prefixes.add(os.path.dirname(filename) + os.sep)
    return tuple(sorted(prefixes))


@contextmanager
def guarded(
    modules: Iterable[types.ModuleType] = (), position: Callable[[], int] | None = None
) -> Iterator[GuardState]:
    """Activate the guards on the current thread for the duration of the block. ``modules`` are the
    orchestration modules whose imported names are swapped; ``position`` reports the replay position."""
    ident = threading.get_ident()
    modules = list(modules)
    state = GuardState(position, _module_prefixes(modules))
    with _lock:
        if ident in _active:
            raise RuntimeError("replay guards are already active on this thread (nested replay)")
        if not _active:
            _install()
        swapped = _swap_globals(modules)
        _active[ident] = state
    try:
        yield state
    finally:
        with _lock:
            del _active[ident]
            for namespace, name, value in reversed(swapped):
                namespace[name] = value
            if not _active:
                _uninstall()
