"""Runtime guards: while orchestration code is replayed, clock/random/uuid reads are reported and real
effects are stopped.

``guarded(modules)`` is a context manager. While it is active *on the current thread*, calls made from
orchestration code are recorded on the returned ``GuardState`` as ``NondeterministicCall`` trips (one
per call and line), of three kinds:

* ``value`` — ``time.time/time_ns/monotonic/perf_counter``, ``datetime.now/utcnow/today``,
  ``date.today``, module-level ``random.*``, ``uuid.uuid1/uuid4``, ``os.urandom``, ``secrets.*``.
  The call is recorded and *returns a real value* (the engine recorded none, so there is nothing to
  feed back), so the replay goes on matching commands and the first real divergence is found too.
  They trip only when the *immediate caller* is project code, so the standard library reading the
  clock for its own purposes (``logging`` timestamps, ``asyncio``'s loop) keeps working.
* ``effect`` — sockets (creation, ``connect``), processes (``subprocess.Popen``, ``os.system``,
  ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``, ``os.fork``/``forkpty``, ``pty.spawn``/``fork``),
  file writes (``open``/``io.open`` for writing, appending or creating, ``os.open`` with write or
  create flags; pathlib's ``write_text``/``write_bytes``/``open``/``touch`` go through these) and
  changes (``os.remove/unlink/rename/replace/rmdir/removedirs/mkdir/makedirs/truncate/link/symlink``,
  ``shutil`` copies, moves and ``rmtree``). The call *raises* ``NondeterministicCall`` (a
  ``BaseException``, so a workflow's ``except Exception`` cannot swallow it) before anything happens.
  Sockets and processes trip when the nearest non-library frame on the stack is project code (a
  workflow calling ``urllib`` is caught though the socket is made deep inside the standard library);
  file writes trip when project code asks for them directly or through the standard library's file
  APIs (pathlib, shutil, tempfile, io, os, codecs, the archive modules), so ``logging``'s file
  handlers, a saver in site-packages and replaytest's own cache keep writing. Reads stay allowed.
* ``step-body`` — a function registered with ``step_bodies`` (a step, activity or task body the
  replayer found) runs on the guarded thread: replay feeds recorded results back, so a body that runs
  was called directly by orchestration code. Its code object is swapped for a trampoline while the
  guard is active, so every route to it is seen (a global name, an attribute, a closure); the body is
  stopped like an effect. Builtins and callables without Python code cannot be swapped.

"Library" means the standard library, site-packages and replaytest itself; everything else is project
code, and so are the folders of the orchestration modules handed to ``guarded`` wherever they live.
Other threads (pytest-xdist's execnet threads, a test's HTTP server) always pass straight through.
Calls spelled ``time.time()`` are caught by patching the source modules; names imported into an
orchestration module (``from datetime import datetime``, ``from os import system``) are caught by
swapping that module's globals for guarded stand-ins. Everything is restored when the last guard on
any thread exits, exceptions included. Not seen: code that runs when a module is imported (before the
guard), C extensions doing their own I/O or clock reads, other threads and processes.

``settle_hazards`` turns a replay's trips into the result's ``hazards`` under the ``hazards`` policy.
"""

from __future__ import annotations

import builtins
import datetime as _datetime
import inspect
import io
import os
import pathlib
import random
import secrets
import shutil
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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from replaytest.config import HazardPolicy
from replaytest.replay.divergence import Divergence, ReplayResult, SourcePosition

TripKind = Literal["value", "effect", "step-body"]

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
try:
    import pty
except ImportError:  # pragma: no cover - Windows has no pty (nor fork)
    pty = None  # type: ignore[assignment]

# Process creation outside subprocess (every subprocess entry point goes through Popen).
_PROCESS_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    os: (
        "system", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
        "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
        "posix_spawn", "posix_spawnp", "fork", "forkpty",
    ),
    **({pty: ("spawn", "fork")} if pty is not None else {}),
}  # fmt: skip
# Changes to the file system other than writing through ``open``.
_FILE_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    os: ("remove", "unlink", "rename", "renames", "replace", "rmdir", "removedirs", "mkdir", "makedirs",
         "truncate", "link", "symlink"),
    shutil: ("copyfile", "copy", "copy2", "copytree", "copymode", "copystat", "move", "rmtree"),
}  # fmt: skip
_WRITE_MODES = frozenset("wax+")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# The standard library's file APIs: a write asked for through them is the caller's write.
_FILE_API_MODULES = ("os", "io", "_pyio", "codecs", "pathlib", "shutil", "tempfile", "gzip", "bz2", "lzma",
                     "zipfile", "tarfile", "fileinput", "genericpath", "posixpath", "ntpath")  # fmt: skip


# The lint category of each guarded call, by the call's full name or else its module: a replayer names
# the framework's replacement for it from its profile's ``replacements``, the vocabulary the linter uses.
CALL_CATEGORIES: dict[str, str] = {
    "time": "clock",
    "datetime": "clock",
    "date": "clock",
    "random": "random",
    "secrets": "random",
    "os.urandom": "random",
    "uuid": "uuid",
    "socket": "network",
    "subprocess": "concurrency",
    "pty": "concurrency",
    "os": "filesystem",
    "open": "filesystem",
    "io": "filesystem",
    "shutil": "filesystem",
    **{f"os.{name}": "concurrency" for name in _PROCESS_FUNCTIONS[os]},
}


class NondeterministicCall(BaseException):
    """A guarded call made by orchestration code during replay. ``call`` names it (``time.time``),
    ``category`` is its lint category (``clock``), ``kind`` says what the guard did: ``value`` (recorded,
    a real value returned), ``effect`` or ``step-body`` (stopped: raised before anything happened)."""

    def __init__(
        self, call: str, source: SourcePosition | None, position: int | None = None, kind: TripKind = "value"
    ) -> None:
        self.call = call
        self.kind = kind
        self.category = CALL_CATEGORIES.get(call, CALL_CATEGORIES.get(call.split(".")[0], ""))
        self.source = source
        self.position = position  # the history position the replay had reached, when known
        where = f" at {source}" if source else ""
        if kind == "step-body":
            super().__init__(f"step body {call}() ran during replay (called directly from orchestration code){where}")
        else:
            super().__init__(f"{call}() called from orchestration code during replay{where}")

    @property
    def stopped(self) -> bool:
        """True when the call was stopped (the run ended there), False when it returned a real value."""
        return self.kind != "value"


@dataclass
class GuardState:
    """What the guard saw on one thread: every trip in order, one per call and line.
    ``position`` (given by the replayer) tells each trip where in the history the replay was."""

    position: Callable[[], int] | None = None
    # Folders of the orchestration modules: project code even when the project is installed into
    # site-packages (a CI that installs the app as a wheel), where the library rule would skip it.
    project_prefixes: tuple[str, ...] = ()
    trips: list[NondeterministicCall] = field(default_factory=list)
    _seen: set[tuple[str, str, int]] = field(default_factory=set, repr=False)

    def is_orchestration(self, filename: str) -> bool:
        return filename.startswith(self.project_prefixes) or is_project_file(filename)

    @property
    def stopped(self) -> NondeterministicCall | None:
        """The effect or step body that stopped the run, if one did."""
        return next((trip for trip in self.trips if trip.stopped), None)


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


def _file_api_locations() -> tuple[frozenset[str], tuple[str, ...]]:
    """``co_filename`` spellings of the file-API modules, from the standard library's folder (so a module
    imported only later, during a replay, is known too): ``<frozen os>``, ``…/shutil.py``, and the folder
    of those that are packages (pathlib on 3.13)."""
    stdlib = os.path.dirname(os.__file__)
    files = {f"<frozen {name}>" for name in _FILE_API_MODULES}
    files.update(os.path.join(stdlib, f"{name}.py") for name in _FILE_API_MODULES)
    folders = tuple(os.path.join(stdlib, name) + os.sep for name in _FILE_API_MODULES)
    return frozenset(files), folders


_FILE_API_FILES, _FILE_API_DIRS = _file_api_locations()


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


def _trip(state: GuardState, call: str, frame: types.FrameType, kind: TripKind) -> None:
    """Record a trip (once per call and line); raise it when the call must be stopped."""
    key = (call, frame.f_code.co_filename, frame.f_lineno)
    if kind == "value" and key in state._seen:
        return
    state._seen.add(key)
    error = NondeterministicCall(call, _position(frame), state.position() if state.position else None, kind)
    state.trips.append(error)
    if error.stopped:
        raise error


def _copy_metadata(guard: Callable[..., Any], name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    guard.__name__ = getattr(original, "__name__", name)
    guard.__qualname__ = getattr(original, "__qualname__", name)
    guard.__doc__ = getattr(original, "__doc__", None)
    guard.__wrapped__ = original  # type: ignore[attr-defined]
    return guard


def _value_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None:
            caller = sys._getframe(1)
            if state.is_orchestration(caller.f_code.co_filename):
                _trip(state, name, caller, "value")
        return original(*args, **kwargs)

    return _copy_metadata(guard, name, original)


def _project_caller(state: GuardState, frame: types.FrameType | None) -> types.FrameType | None:
    """The nearest frame of orchestration code above ``frame`` before replaytest's own (sockets, processes)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if state.is_orchestration(filename):
            return frame
        if _is_replaytest_file(filename):
            return None  # reached replaytest itself (the engine or a runtime): not orchestration code
        frame = frame.f_back
    return None


def _effect_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None:
            caller = _project_caller(state, sys._getframe(1))
            if caller is not None:
                _trip(state, name, caller, "effect")
        return original(*args, **kwargs)

    return _copy_metadata(guard, name, original)


def _file_caller(state: GuardState, frame: types.FrameType | None) -> types.FrameType | None:
    """The orchestration frame that asked for a file change directly or through the file APIs, if any."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in _FILE_API_FILES or filename.startswith(_FILE_API_DIRS):
            frame = frame.f_back
            continue
        return frame if state.is_orchestration(filename) else None
    return None


def _file_wrapper(name: str, original: Callable[..., Any], writes: Callable[..., bool] | None = None) -> Callable[..., Any]:
    """A file change (``writes`` decides from the arguments whether the call changes anything)."""

    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None and (writes is None or writes(*args, **kwargs)):
            caller = _file_caller(state, sys._getframe(1))
            if caller is not None:
                _trip(state, name, caller, "effect")
        return original(*args, **kwargs)

    return _copy_metadata(guard, name, original)


def _opens_for_writing(file: Any = None, mode: Any = "r", *args: Any, **kwargs: Any) -> bool:
    mode = kwargs.get("mode", mode)
    return isinstance(mode, str) and not _WRITE_MODES.isdisjoint(mode)


def _os_open_writes(path: Any = None, flags: Any = 0, *args: Any, **kwargs: Any) -> bool:
    flags = kwargs.get("flags", flags)
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


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


# Wrappers made once per process and reused by every guard (a replay of a short history is dominated
# by installing them): (qualified name, id of the original) -> (the original, kept alive; its wrapper).
_wrapper_cache: dict[tuple[str, int], tuple[Any, Callable[..., Any]]] = {}


def _wrapper(qualified: str, original: Any, make: Callable[[str, Any], Callable[..., Any]]) -> Callable[..., Any]:
    cached = _wrapper_cache.get((qualified, id(original)))
    if cached is None or cached[0] is not original:
        cached = _wrapper_cache[(qualified, id(original))] = (original, make(qualified, original))
    return cached[1]


def _patch(module: Any, name: str, make: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(module, name, None)
    if original is None:
        return  # not in this Python version or on this platform (randbytes, uuid7, os.fork on Windows, …)
    qualified = f"{module.__name__}.{name}"
    wrapper = _wrapper(qualified, original, make)
    _originals[id(original)] = (qualified, wrapper)
    _installed.append((module, name, original))
    setattr(module, name, wrapper)


def _install() -> None:
    for module, names in _VALUE_FUNCTIONS.items():
        for name in names:
            _patch(module, name, _value_wrapper)
    for module, names in _PROCESS_FUNCTIONS.items():
        for name in names:
            _patch(module, name, _effect_wrapper)
    for module, names in _FILE_FUNCTIONS.items():
        for name in names:
            _patch(module, name, _file_wrapper)
    # builtins.open is io.open: one wrapper for both names (and for ``from io import open``).
    real_open = builtins.open
    open_guard = _wrapper("open", real_open, lambda name, original: _file_wrapper(name, original, _opens_for_writing))
    _originals[id(real_open)] = ("open", open_guard)
    opens: tuple[Any, ...] = (builtins, io)
    for module in opens:
        _installed.append((module, "open", module.open))
        setattr(module, "open", open_guard)
    _patch(os, "open", lambda name, original: _file_wrapper(name, original, _os_open_writes))
    # Python 3.10's pathlib calls io.open and the os functions through an accessor class that captured
    # them when pathlib was imported: give it the guards too (as static methods, as they are plain there).
    accessor = getattr(pathlib, "_NormalAccessor", None)
    for name, captured in (vars(accessor).items() if accessor is not None else ()):
        guard = _originals.get(id(captured))
        if guard is not None:
            _installed.append((accessor, name, captured))
            setattr(accessor, name, staticmethod(guard[1]))
    for owner, name, label in _EFFECT_METHODS:
        # connect/connect_ex are inherited from the C base class: restore by deleting the override.
        _installed.append((owner, name, owner.__dict__.get(name, _INHERITED)))
        setattr(owner, name, _wrapper(label, getattr(owner, name), _effect_wrapper))


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


# --- step bodies -----------------------------------------------------------------------------------

# The trampolines' way back into this module: a builtins name, found by any function's globals lookup.
_BODY_HOOK = "__replaytest_step_body_called__"
# id(function) -> [function, its real code, the qualified name, a copy that runs the real code, users]
_bodies: dict[int, list[Any]] = {}
_trampolines: dict[tuple[types.CodeType, int], types.CodeType] = {}


def _trampoline(code: types.CodeType, key: int) -> types.CodeType:
    """A code object with ``code``'s free-variable count (a function's closure must fit its code) that
    hands the call to ``_body_called``; async for a coroutine function, so callers still await it."""
    cached = _trampolines.get((code, key))
    if cached is not None:
        return cached
    free = [f"_free{index}" for index in range(len(code.co_freevars))]
    is_async = bool(code.co_flags & inspect.CO_COROUTINE)
    lines = ["def _outer():"]
    if free:
        lines.append("    " + " = ".join(free) + " = None")
    lines.append(f"    {'async ' if is_async else ''}def body(*args, **kwargs):")
    if free:
        lines.append("        " + ", ".join(free))  # referenced, so they are this code's free variables
    lines.append(f"        return {'await ' if is_async else ''}{_BODY_HOOK}({key}, args, kwargs)")
    lines.append("    return body")
    module = compile("\n".join(lines), "<replaytest step-body guard>", "exec")
    outer = next(const for const in module.co_consts if isinstance(const, types.CodeType))
    body = next(const for const in outer.co_consts if isinstance(const, types.CodeType))
    renamed = body.replace(co_name=code.co_name)
    if sys.version_info >= (3, 11):
        renamed = renamed.replace(co_qualname=code.co_qualname)
    _trampolines[(code, key)] = renamed
    return renamed


def _body_called(key: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    entry = _bodies.get(key)
    if entry is None:  # pragma: no cover - a trampoline outlived its guard: cannot happen, restore is atomic
        raise RuntimeError("a replay step-body guard was left installed")
    state = _active.get(threading.get_ident())
    if state is not None:
        frame = sys._getframe(2)  # the caller of the body (the trampoline is frame 1)
        caller = _project_caller(state, frame) or frame
        _trip(state, entry[2], caller, "step-body")
    return entry[3](*args, **kwargs)


def _install_bodies(state: GuardState, functions: Iterable[Any]) -> list[int]:
    keys: list[int] = []
    for function in functions:
        code = getattr(function, "__code__", None)
        if not isinstance(function, types.FunctionType) or not isinstance(code, types.CodeType):
            continue  # builtins, partials, callable objects: no code to swap
        if not state.is_orchestration(code.co_filename):
            continue  # a library function used as a step (``requests.get``): its effects are guarded instead
        key = id(function)
        if key in keys:
            continue
        entry = _bodies.get(key)
        if entry is None:
            copy = types.FunctionType(code, function.__globals__, function.__name__, function.__defaults__, function.__closure__)
            copy.__kwdefaults__ = function.__kwdefaults__
            name = f"{function.__module__}.{function.__qualname__}" if function.__module__ else function.__qualname__
            entry = _bodies[key] = [function, code, name, copy, 0]
            function.__code__ = _trampoline(code, key)
        entry[4] += 1
        keys.append(key)
    if _bodies:
        setattr(builtins, _BODY_HOOK, _body_called)
    return keys


def _uninstall_bodies(keys: Iterable[int]) -> None:
    for key in keys:
        entry = _bodies[key]
        entry[4] -= 1
        if entry[4] == 0:
            entry[0].__code__ = entry[1]
            del _bodies[key]
    if not _bodies and hasattr(builtins, _BODY_HOOK):
        delattr(builtins, _BODY_HOOK)


def plain_functions(objects: Iterable[Any]) -> list[types.FunctionType]:
    """The innermost Python functions behind ``objects`` (``functools.wraps`` chains followed)."""
    found: list[types.FunctionType] = []
    for obj in objects:
        for candidate in (obj, inspect.unwrap(obj) if callable(obj) else obj):
            if isinstance(candidate, types.FunctionType) and candidate not in found:
                found.append(candidate)
    return found


# --- modules ---------------------------------------------------------------------------------------


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
    by_top_level = _names_by_top_level()
    for top_level in top_levels:
        for name in by_top_level.get(top_level, ()):
            module = sys.modules.get(name)
            if module is None:
                continue
            filename = getattr(module, "__file__", None)
            if filename and not _is_replaytest_file(filename):
                chosen[name] = module
    return [chosen[name] for name in sorted(chosen)]


# ((len(sys.modules), its last-inserted name) when built, {top-level package: loaded module names}): every
# replay asks for its workflow's modules, and walking all of sys.modules each time cost a pytest run (well
# over a thousand modules: pytest, its plugins, the SDKs) milliseconds per history. sys.modules keeps
# insertion order, so an import adds a new last name and a removal changes the size: either rebuilds the
# index. Module objects are always taken from sys.modules itself, so a reloaded module is the current one.
_top_level_index: tuple[tuple[int, str | None], dict[str, list[str]]] | None = None


def _names_by_top_level() -> dict[str, list[str]]:
    global _top_level_index
    modules = sys.modules
    stamp = (len(modules), next(reversed(modules), None))
    if _top_level_index is None or _top_level_index[0] != stamp:
        index: dict[str, list[str]] = {}
        for name in list(modules):
            index.setdefault(name.partition(".")[0], []).append(name)
        _top_level_index = (stamp, index)
    return _top_level_index[1]


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
    modules: Iterable[types.ModuleType] = (),
    position: Callable[[], int] | None = None,
    step_bodies: Iterable[Any] = (),
) -> Iterator[GuardState]:
    """Activate the guards on the current thread for the duration of the block. ``modules`` are the
    orchestration modules whose imported names are swapped; ``position`` reports the replay position;
    ``step_bodies`` are the functions no replay may run (steps, activities, tasks: see the module docstring)."""
    ident = threading.get_ident()
    modules = list(modules)
    state = GuardState(position, _module_prefixes(modules))
    with _lock:
        if ident in _active:
            raise RuntimeError("replay guards are already active on this thread (nested replay)")
        if not _active:
            _install()
        swapped = _swap_globals(modules)
        body_keys = _install_bodies(state, step_bodies)
        _active[ident] = state
    try:
        yield state
    finally:
        with _lock:
            del _active[ident]
            _uninstall_bodies(body_keys)
            for namespace, name, value in reversed(swapped):
                namespace[name] = value
            if not _active:
                _uninstall()


# --- reporting -------------------------------------------------------------------------------------


def settle_hazards(
    result: ReplayResult,
    divergence: Divergence | None,
    trips: Iterable[NondeterministicCall],
    describe: Callable[[NondeterministicCall], Divergence],
    policy: HazardPolicy,
) -> Divergence | None:
    """Put a replay's guard trips on ``result.hazards`` (``describe`` makes each one's divergence of kind
    ``nondeterministic-call``) and return the primary divergence. A stopped effect or step body is always
    an error (the run ended there, so what follows was not checked); a value read fails under ``fail`` and
    is a warning under ``warn`` (then listed in ``result.warnings`` too). The command divergence, when there
    is one, stays the primary one — it is what the change breaks; else the stopped call, where the comparison
    ended; else the first failing hazard."""
    settled: list[Divergence] = []
    stop: Divergence | None = None
    for trip in trips:
        hazard = describe(trip)
        if not trip.stopped:
            # Described after the run, the matcher's context shows where the run ended, not the read.
            hazard = replace(hazard, recorded_context=(), issued_context=())
        if policy == "warn" and not trip.stopped:
            hazard = replace(hazard, severity="warning")
            result.warnings.append(hazard)
        if trip.stopped:
            stop = hazard
        settled.append(hazard)
    result.hazards = settled
    if divergence is not None:
        return divergence
    if stop is not None:
        return stop  # where the comparison ended
    return next((hazard for hazard in settled if hazard.severity == "error"), None)


def hazard_message(trip: NondeterministicCall, instead: str, version_guard: str) -> str:
    """The report for one trip: what was called, whether it was stopped or returned a real value, what to
    use instead, and for a value read — whose fix adds a recorded command, so runs already in flight no
    longer match — the engine's version guard (``version_guard``) that keeps them replaying."""
    if trip.kind == "step-body":
        return (
            f"stopped the step body {trip.call}(), called directly from orchestration code during replay "
            f"(nothing ran, the replay ended there); call it through {instead}"
        )
    if trip.kind == "effect":
        return (
            f"stopped {trip.call}(), called from orchestration code during replay (nothing ran, the replay "
            f"ended there); use {instead}"
        )
    return (
        f"orchestration code called {trip.call}() during replay (it returned a real value and the replay went "
        f"on); use {instead} — which adds a recorded command, a breaking change for runs already in flight: "
        f"{version_guard}"
    )
