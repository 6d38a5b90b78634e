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
* ``effect`` — sockets (creation, ``connect``, ``bind``, every send), processes (``subprocess.Popen``,
  ``os.system``, ``os.exec*``/``spawn*``/``posix_spawn*``/``fork``/``forkpty``/``kill``, ``pty``,
  multiprocessing's spawn through ``_posixsubprocess``), threads (``Thread.start``, executors' ``submit``),
  ``signal.signal``/``setitimer``/``alarm`` and ``atexit.register`` called by orchestration code itself,
  file writes (``open``/``io.open``/``os.open``/``dbm.open`` for writing, appending or creating) and
  changes (``os.remove/unlink/rename/…/chmod``, ``shutil``), a write through a ``sqlite3`` connection
  held in an orchestration module's globals (``_DatabaseProxy``; a read there is a ``value`` trip). The
  call *raises* ``NondeterministicCall`` (a ``BaseException``, so a workflow's ``except Exception``
  cannot swallow it) before anything happens. An effect trips when the nearest frame outside the
  standard library and site-packages is orchestration code (``_effect_caller``: a workflow calling
  ``urllib`` or ``shelve`` is caught though the socket or file is made deep inside), unless replaytest
  itself, the import machinery or a logging handler emitting a record comes first (its cache, bytecode
  caches and the app's log file keep writing); thread starts count through the standard library only
  (an SDK's own worker pool is its business). Reads stay allowed.
  Under the patches, an audit hook (PEP 578, installed with the first guard, never removable) stops
  the interpreter's effect events no patch saw (``posix.system``, ``io.FileIO``, ``_io.open``, a
  function unwrapped or captured before the replay, ``sqlite3.connect`` to a file, ``ctypes.dlopen``):
  see "the audit layer" below.
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
guard), C extensions doing their own I/O or clock reads (a database driver's C client), writes through
descriptors opened before the replay, other threads and processes.

``settle_hazards`` turns a replay's trips into the result's ``hazards`` under the ``hazards`` policy.
"""

from __future__ import annotations

import _thread
import atexit
import builtins
import datetime as _datetime
import inspect
import io
import logging
import os
import pathlib
import random
import re
import secrets
import shutil
import signal
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
    # A socket made at import (a kept-alive HTTP connection, a metrics client) and used during replay.
    *((socket.socket, name, f"socket.{name}") for name in ("send", "sendall", "sendto", "sendmsg", "sendfile", "bind")),
    (subprocess.Popen, "__init__", "subprocess.Popen"),
    # A thread started from orchestration code runs its body unguarded, after the replay moved on.
    (threading.Thread, "start", "threading.Thread.start"),
)
# Methods of modules that may not be loaded when the guards go on: patched only if they are, since
# importing them here would slow every lint run; the audit hook below stands behind each of them.
_LOADED_EFFECT_METHODS: tuple[tuple[str, str, str, str], ...] = (
    *(("ssl", "SSLSocket", name, f"ssl.SSLSocket.{name}") for name in ("send", "sendall", "sendto", "sendmsg", "sendfile")),
    ("concurrent.futures.thread", "ThreadPoolExecutor", "submit", "concurrent.futures.ThreadPoolExecutor.submit"),
    ("concurrent.futures.process", "ProcessPoolExecutor", "submit", "concurrent.futures.ProcessPoolExecutor.submit"),
    ("multiprocessing.process", "BaseProcess", "start", "multiprocessing.Process.start"),
)
try:
    import pty
except ImportError:  # pragma: no cover - Windows has no pty (nor fork)
    pty = None  # type: ignore[assignment]
try:
    import _posixsubprocess
except ImportError:  # pragma: no cover - Windows
    _posixsubprocess = None  # type: ignore[assignment]

# Process creation outside subprocess (every subprocess entry point goes through Popen).
_PROCESS_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    os: (
        "system", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
        "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
        "posix_spawn", "posix_spawnp", "fork", "forkpty", "kill", "killpg",
    ),
    **({pty: ("spawn", "fork")} if pty is not None else {}),
    # multiprocessing's "spawn" start method execs through this, not through subprocess or os.
    **({_posixsubprocess: ("fork_exec",)} if _posixsubprocess is not None else {}),
    _thread: ("start_new_thread", "start_joinable_thread"),
    signal: ("pthread_kill", "raise_signal"),
}  # fmt: skip
# Changes to the process that the standard library also makes for its own purposes (asyncio.run installs
# a SIGINT handler, concurrent.futures registers an exit hook): stopped when project code calls them itself.
_DIRECT_EFFECT_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    signal: ("signal", "setitimer", "alarm", "siginterrupt"),
    atexit: ("register",),  # the function would run after the replay, outside every guard
}
# Changes to the file system other than writing through ``open``.
_FILE_FUNCTIONS: dict[Any, tuple[str, ...]] = {
    os: ("remove", "unlink", "rename", "renames", "replace", "rmdir", "removedirs", "mkdir", "makedirs",
         "truncate", "link", "symlink"),
    shutil: ("copyfile", "copy", "copy2", "copytree", "copymode", "copystat", "move", "rmtree"),
}  # fmt: skip
_WRITE_MODES = frozenset("wax+")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

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
    **dict.fromkeys(("ssl", "http", "urllib", "smtplib", "ftplib", "imaplib", "poplib", "nntplib", "telnetlib",
                     "webbrowser", "sqlite3"), "network"),
    **dict.fromkeys(("subprocess", "pty", "_posixsubprocess", "multiprocessing", "threading", "_thread",
                     "concurrent", "signal"), "concurrency"),
    "os": "filesystem",
    "open": "filesystem",
    "io": "filesystem",
    "shutil": "filesystem",
    **{f"os.{name}": "concurrency" for name in (*_PROCESS_FUNCTIONS[os], "exec", "spawn")},
    # atexit and ctypes have no category: each engine names its step for them.
}  # fmt: skip


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
_SWAPPABLE_TYPES = frozenset((types.BuiltinFunctionType, types.FunctionType, type, types.ModuleType))
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
    # No ``__wrapped__``: ``inspect.unwrap(open)`` would hand orchestration code the unguarded original.
    guard.__name__ = getattr(original, "__name__", name)
    guard.__qualname__ = getattr(original, "__qualname__", name)
    guard.__doc__ = getattr(original, "__doc__", None)
    return guard


def _caller_wrapper(kind: TripKind) -> Callable[[str, Callable[..., Any]], Callable[..., Any]]:
    """Wrappers stopped when the *immediate* caller is orchestration code: a value read (``kind="value"``:
    a clock, random) or a direct effect (``"effect"``: ``signal.signal``, ``atexit.register``)."""

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def guard(*args: Any, **kwargs: Any) -> Any:
            state = _active.get(threading.get_ident())
            if state is not None:
                caller = sys._getframe(1)
                if state.is_orchestration(caller.f_code.co_filename):
                    _trip(state, name, caller, kind)
            return original(*args, **kwargs)

        return _copy_metadata(guard, name, original)

    return wrap


_value_wrapper = _caller_wrapper("value")
_direct_effect_wrapper = _caller_wrapper("effect")


_IMPORT_MACHINERY = ("<frozen importlib.", "<frozen zipimport>")
_LOGGING_DIR = os.path.dirname(logging.__file__) + os.sep
# asyncio's own package (not imported here: lint loads this module and needs no event loop).
_ASYNCIO_DIR = os.path.join(os.path.dirname(os.__file__), "asyncio") + os.sep


def _effect_caller(
    state: GuardState, frame: types.FrameType | None, file_write: bool = False, stdlib_only: bool = False
) -> types.FrameType | None:
    """The orchestration frame an effect is made for: the nearest frame of orchestration code above
    ``frame``, through any library (a workflow calling ``urllib`` or ``shelve`` is caught though the
    socket or file is made deep inside). None — the library's own business — when replaytest itself (the
    engine, a runtime, the cache), the import machinery (writing bytecode caches) or an asyncio event loop
    waking itself comes first; for a
    file write made by a logging handler emitting a record (the app's log file keeps its lines); and, with
    ``stdlib_only``, when a third-party library comes first (threads: an engine's SDK runs its own
    bookkeeping on worker threads, DBOS's async steps do; a workflow's ``asyncio.to_thread`` is caught)."""
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if state.is_orchestration(filename):
            return frame
        if filename.startswith(_IMPORT_MACHINERY) or _is_replaytest_file(filename):
            return None
        if file_write and filename.startswith(_LOGGING_DIR) and code.co_name in ("emit", "handle"):
            return None
        if code.co_name == "_write_to_self" and filename.startswith(_ASYNCIO_DIR):
            # An event loop waking itself through its own socket pair (``call_soon_threadsafe``; awaiting
            # ``asyncio.to_thread`` work that finished before the await does it): no effect.
            return None
        if stdlib_only and not _is_stdlib_file(filename):
            return None
        frame = frame.f_back
    return None


_STDLIB_PREFIXES = tuple(
    {os.path.normcase(os.path.abspath(path)) + os.sep for key, path in sysconfig.get_paths().items() if key in ("stdlib", "platstdlib")}
    | {os.path.normcase(os.path.dirname(os.path.abspath(os.__file__))) + os.sep}
)
_SITE_PACKAGES = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _is_stdlib_file(filename: str) -> bool:
    if filename.startswith("<"):
        return True  # frozen standard-library modules
    normal = os.path.normcase(os.path.abspath(filename))
    return normal.startswith(_STDLIB_PREFIXES) and not any(part in normal for part in _SITE_PACKAGES)


def _effect_wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    stdlib_only = name in _THREAD_STARTS

    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None:
            caller = _effect_caller(state, sys._getframe(1), stdlib_only=stdlib_only)
            if caller is not None:
                _trip(state, name, caller, "effect")
        return original(*args, **kwargs)

    return _copy_metadata(guard, name, original)


# Calls that start a thread or hand work to one (judged through the standard library only: see above).
_THREAD_STARTS = frozenset((
    "threading.Thread.start", "_thread.start_new_thread", "_thread.start_joinable_thread",
    "concurrent.futures.ThreadPoolExecutor.submit",
))  # fmt: skip


def _file_wrapper(name: str, original: Callable[..., Any], writes: Callable[..., bool] | None = None) -> Callable[..., Any]:
    """A file change (``writes`` decides from the arguments whether the call changes anything)."""

    def guard(*args: Any, **kwargs: Any) -> Any:
        state = _active.get(threading.get_ident())
        if state is not None and (writes is None or writes(*args, **kwargs)):
            caller = _effect_caller(state, sys._getframe(1), file_write=True)
            if caller is not None:
                _trip(state, name, caller, "effect")
        return original(*args, **kwargs)

    return _copy_metadata(guard, name, original)


def _dbm_opens_for_writing(file: Any = None, flag: Any = "r", *args: Any, **kwargs: Any) -> bool:
    flag = kwargs.get("flag", flag)
    return not (isinstance(flag, str) and flag.startswith("r"))


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


def _datetime_proxies() -> dict[Any, Any]:
    """Guarded stand-ins keyed by the real object they replace (the classes and the module)."""
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
    return {real_datetime: datetime_proxy, real_date: date_proxy, _datetime: module_proxy}


# The patches, planned once per process and applied by every guard (a replay of a short history is
# dominated by installing them): (owner, attribute, what it held, its guard). A plan holds while every
# planned attribute still holds what it held then (a test's monkeypatch replaces one: planned anew) and
# the optional modules it patched are the ones loaded. ``_swaps`` maps each original (and datetime's
# classes and module) to its guarded stand-in, for orchestration modules' imported names.
_Plan = tuple[list[tuple[Any, str, Any, Any]], tuple[Any, ...], dict[Any, Any]]
_plan: _Plan | None = None
_OPTIONAL_MODULES = ("dbm", *sorted({module for module, _, _, _ in _LOADED_EFFECT_METHODS}))


def _held(owner: Any, name: str) -> Any:
    return owner.__dict__.get(name, _INHERITED)


def _make_plan(optional: tuple[Any, ...]) -> _Plan:
    entries: list[tuple[Any, str, Any, Any]] = []
    swaps: dict[Any, Any] = {}

    def patch(owner: Any, name: str, label: str, make: Callable[[str, Any], Callable[..., Any]]) -> Any:
        original = getattr(owner, name, None)
        if original is None:
            return None  # not in this Python version or on this platform (randbytes, uuid7, os.fork on Windows, …)
        guard = make(label, original)
        entries.append((owner, name, _held(owner, name), guard))
        return guard

    def patch_function(module: Any, name: str, make: Callable[[str, Any], Callable[..., Any]]) -> None:
        original = getattr(module, name, None)
        guard = patch(module, name, f"{module.__name__}.{name}", make)
        if guard is not None:
            swaps[original] = guard

    for table, make in ((_VALUE_FUNCTIONS, _value_wrapper), (_PROCESS_FUNCTIONS, _effect_wrapper),
                        (_DIRECT_EFFECT_FUNCTIONS, _direct_effect_wrapper), (_FILE_FUNCTIONS, _file_wrapper)):  # fmt: skip
        for module, names in table.items():
            for name in names:
                patch_function(module, name, make)
    # builtins.open is io.open: one guard for both names (and for ``from io import open``).
    real_open = builtins.open
    open_guard = _file_wrapper("open", real_open, _opens_for_writing)
    swaps[real_open] = open_guard
    for module in (builtins, io):
        entries.append((module, "open", _held(module, "open"), open_guard))
    patch_function(os, "open", lambda name, original: _file_wrapper(name, original, _os_open_writes))
    # shelve opens through dbm, whose gnu/ndbm back ends write from C with no audit event.
    dbm = optional[0]
    if dbm is not None:
        patch_function(dbm, "open", lambda name, original: _file_wrapper(name, original, _dbm_opens_for_writing))
    # Python 3.10's pathlib calls io.open and the os functions through an accessor class that captured
    # them when pathlib was imported: give it the guards too (as static methods, as they are plain there).
    accessor = getattr(pathlib, "_NormalAccessor", None)
    for name, captured in list(vars(accessor).items()) if accessor is not None else ():
        if type(captured) in _SWAPPABLE_TYPES and captured in swaps:
            entries.append((accessor, name, captured, staticmethod(swaps[captured])))
    methods = list(_EFFECT_METHODS)
    for module_name, class_name, name, label in _LOADED_EFFECT_METHODS:
        owner = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(owner, type) and hasattr(owner, name):
            methods.append((owner, name, label))
    for owner, name, label in methods:
        # connect/send/… are inherited from the C base class: restored by deleting the override.
        patch(owner, name, label, _effect_wrapper)
    swaps.update(_datetime_proxies())
    return entries, optional, swaps


def _install() -> None:
    global _plan
    optional = tuple(sys.modules.get(name) for name in _OPTIONAL_MODULES)
    plan = _plan
    if (
        plan is None
        or any(loaded is not planned for loaded, planned in zip(optional, plan[1]))
        or any(_held(owner, name) is not previous for owner, name, previous, _ in plan[0])
    ):
        plan = _plan = _make_plan(optional)
    for owner, name, previous, guard in plan[0]:
        _installed.append((owner, name, previous))
        setattr(owner, name, guard)
    _install_audit_hook()


# --- the audit layer -------------------------------------------------------------------------------
# The patches above name the call at its line; they cannot see a route that does not go through the
# patched attribute (``posix.system``, ``io.FileIO``, ``_io.open``, a name unwrapped or captured before
# the replay, a socket's ``sendto`` from C). Under them, a PEP 578 audit hook — installed once, never
# removable — stops the interpreter's own audit events that are effects, with the same rule: raised on
# a replaying thread for orchestration code (through any library), stopped before anything happens.

_SQLITE_MEMORY = (":memory:", "")


def _opens_a_file_for_writing(args: tuple[Any, ...]) -> bool:
    mode, flags = (args[1], args[2]) if len(args) >= 3 else (None, 0)
    if isinstance(flags, int) and flags & _WRITE_FLAGS:
        return True
    return isinstance(mode, str) and not _WRITE_MODES.isdisjoint(mode)


def _connects_to_a_database_file(args: tuple[Any, ...]) -> bool:
    try:
        database = os.fsdecode(args[0]) if args else ""
    except TypeError:
        return True
    if database in _SQLITE_MEMORY:
        return False
    return not (database.startswith("file:") and ("mode=memory" in database or database.startswith("file::memory:")))


# audit event -> (the call named in the report, what decides from the event's arguments that it is an
# effect — None: always). Events of the standard library's own modules (``shutil.copyfile``) come with
# the patches' names too, so a route the patches miss reads the same in the report.
_AUDIT_EFFECTS: dict[str, tuple[str, Callable[[tuple[Any, ...]], bool] | None]] = {
    "open": ("open", _opens_a_file_for_writing),
    "sqlite3.connect": ("sqlite3.connect", _connects_to_a_database_file),
    **{event: (event, None) for event in (
        # processes and signals to them
        "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "subprocess.Popen",
        "os.kill", "os.killpg", "signal.pthread_kill",
        # threads (3.12+ raise these; Thread.start is patched for every version)
        "_thread.start_new_thread", "_thread.start_joinable_thread",
        # the network, at every layer that raises an event
        "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
        "http.client.connect", "http.client.send", "smtplib.connect", "smtplib.send", "ftplib.connect",
        "ftplib.sendcmd", "imaplib.open", "imaplib.send", "poplib.connect", "poplib.putline", "nntplib.connect",
        "nntplib.putline", "telnetlib.Telnet.open", "telnetlib.Telnet.write", "urllib.Request", "webbrowser.open",
        # changes to the file system besides opening for writing
        "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.link", "os.symlink", "os.truncate", "os.chmod",
        "os.chown", "os.chflags", "os.lchflags", "os.utime", "os.setxattr", "os.removexattr", "os.mkfifo",
        "os.mknod", "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
        "shutil.rmtree", "shutil.chown", "shutil.make_archive", "shutil.unpack_archive",
        # foreign code: a library loaded or a symbol looked up from orchestration code
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function",
    )},
}  # fmt: skip
_audit_hook_installed = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audited event of the process from now on (``sys._getframe``, reading a frame's
    # ``f_code``, ``id()``, ...): one lookup for an event that is no effect.
    effect = _AUDIT_EFFECTS.get(event)
    if effect is None or not _active:
        return
    state = _active.get(threading.get_ident())
    if state is None:
        return
    name, is_effect = effect
    if is_effect is not None and not is_effect(args):
        return
    caller = _effect_caller(state, sys._getframe(1), file_write=event in _FILE_EVENTS, stdlib_only=name in _THREAD_STARTS)
    if caller is not None:
        _trip(state, name, caller, "effect")


_FILE_EVENTS = frozenset(event for event in _AUDIT_EFFECTS if event == "open" or event.startswith(("os.", "shutil.")))


def _install_audit_hook() -> None:
    global _audit_hook_installed
    if not _audit_hook_installed:
        sys.addaudithook(_audit)
        _audit_hook_installed = True


def _uninstall() -> None:
    while _installed:
        owner, name, original = _installed.pop()
        if original is _INHERITED:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


class _DatabaseProxy:
    """Stands in for a ``sqlite3`` connection or cursor an orchestration module made at import (``DB =
    sqlite3.connect("app.db")``): no audit event marks a statement, so the guard must hold the object.
    A statement that writes (anything but ``SELECT``/``WITH`` without a write/``EXPLAIN``/``VALUES``/a
    ``PRAGMA`` without ``=``), ``executemany``, ``executescript`` and a ``commit`` with changes pending are
    stopped; a read is recorded like a clock read (a real value returned). Cursors it hands out are
    guarded too; ``isinstance`` still sees the real class."""

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_real", real)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # so isinstance(DB, sqlite3.Connection) holds
        return type(self._real)

    def _check(self, call: str, writes: bool) -> None:
        state = _active.get(threading.get_ident())
        if state is not None:
            caller = _effect_caller(state, sys._getframe(2))
            if caller is not None:
                _trip(state, call, caller, "effect" if writes else "value")

    def __getattr__(self, name: str) -> Any:
        real = self._real
        attribute = getattr(real, name)
        label = f"sqlite3.{type(real).__name__}.{name}"
        if name == "execute":
            def execute(sql: Any, *args: Any, **kwargs: Any) -> Any:
                self._check(label, _sql_writes(sql))
                result = attribute(sql, *args, **kwargs)
                return _DatabaseProxy(result) if result is not real else self
            return execute
        if name in ("executemany", "executescript"):
            def execute_writes(*args: Any, **kwargs: Any) -> Any:
                self._check(label, True)
                result = attribute(*args, **kwargs)
                return _DatabaseProxy(result) if result is not real else self
            return execute_writes
        if name == "commit":
            def commit() -> Any:
                if getattr(real, "in_transaction", False):
                    self._check(label, True)
                return attribute()
            return commit
        if name == "cursor":
            return lambda *args, **kwargs: _DatabaseProxy(attribute(*args, **kwargs))
        return attribute

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)

    def __enter__(self) -> _DatabaseProxy:
        self._real.__enter__()
        return self  # ``with DB as conn:`` keeps the guarded stand-in

    def __exit__(self, *exc: Any) -> Any:
        return self._real.__exit__(*exc)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._real)

    def __repr__(self) -> str:
        return repr(self._real)


_SQL_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
_SQL_KEYWORD = re.compile(r"[A-Za-z]+")
_SQL_WRITE_WORDS = re.compile(r"\b(?:INSERT|UPDATE|DELETE|REPLACE|UPSERT)\b", re.I)


def _sql_writes(sql: Any) -> bool:
    """Whether a statement may change the database (conservative: unknown means it may)."""
    if not isinstance(sql, str):
        return True
    text = sql[_SQL_COMMENTS.match(sql).end():]  # type: ignore[union-attr]
    first = _SQL_KEYWORD.match(text)
    keyword = first.group(0).upper() if first else ""
    if keyword in ("SELECT", "EXPLAIN", "VALUES"):
        return False
    if keyword == "WITH":
        return bool(_SQL_WRITE_WORDS.search(text))
    if keyword == "PRAGMA":
        return "=" in text
    return True


def _swap_globals(modules: Iterable[types.ModuleType]) -> list[tuple[dict[str, Any], str, Any]]:
    """Replace names an orchestration module imported directly (``from time import time``) by guards,
    and the sqlite3 connections and cursors it made at import by guarded stand-ins."""
    assert _plan is not None, "the guards are installed first"
    swaps = _plan[2]
    sqlite3 = sys.modules.get("sqlite3")  # an app holding a connection has imported it
    databases: tuple[type, ...] = (sqlite3.Connection, sqlite3.Cursor) if sqlite3 is not None else ()
    swapped: list[tuple[dict[str, Any], str, Any]] = []
    for module in modules:
        namespace = module.__dict__
        for name, value in list(namespace.items()):
            # Looked up by the object itself (``id`` raises an audit event: the hook would run for each
            # global), only for the kinds of object that are swapped, whose hash and equality are plain.
            if type(value) in _SWAPPABLE_TYPES:
                replacement = swaps.get(value)
            elif databases and isinstance(value, databases):
                replacement = _DatabaseProxy(value)
            else:
                continue
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
        caller = _effect_caller(state, frame) or frame
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
