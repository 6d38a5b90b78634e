"""Every use of DBOS's private names: a stand-in for its system-database object, fed from a history.

DBOS routes every recorded operation of a workflow — steps, ``DBOS.run_step``, datasource
transactions, ``DBOS.sleep``, ``recv``/``send``, events, patches, child workflows and their results —
through one object, ``DBOS._sys_db``, and assigns function ids in its own wrappers. Replay drives the
*current* workflow function through those wrappers with ``ReplaySystemDatabase`` in that place: each
check for a recorded operation is answered by an ``OperationSource`` (the replayer's, which matches it
against the history and raises at a divergence); nothing is written, no step body runs, and there is
no database. ``DBOS(config)`` is created without ``launch()`` when the application has not made one.

Tested with dbos 2.31.1 (oldest; the 2.x system-database layout), 3.0.0 and 3.4.0 (newest); ``SUPPORTED``
is the range the ``dbos`` extra pins.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version as installed_version
from typing import Any, Protocol

SUPPORTED = ((2, 31), (3, 5))  # [oldest, first unsupported): keep in step with pyproject's dbos extra
SERIALIZATION = "replaytest_replay"


# System-database names DBOS's stream functions reach for first (dbos 3.x), by the API a workflow called.
_STREAM_CALLS = {
    "write_stream_from_workflow": "DBOS.write_stream", "write_stream_from_step": "DBOS.write_stream",
    "close_stream_from_workflow": "DBOS.close_stream", "close_stream_from_step": "DBOS.close_stream",
    "register_stream_listener": "DBOS.read_stream", "_notification_listener_polling_interval_sec": "DBOS.read_stream",
    "read_stream": "DBOS.read_stream",
}


class UnsupportedOperation(BaseException):
    """The workflow used a DBOS API replay does not stand in for. A ``BaseException``: the workflow's
    own ``except Exception`` must not turn it into a recorded-looking failure."""


class OperationSource(Protocol):
    """What the replayer answers for the workflow being replayed (see ``dbos.replayer``)."""

    def recorded(self, function_id: int, function_name: str) -> tuple[Any, BaseException | None, str | None]:
        """(result, error to raise, child workflow id) recorded at ``function_id`` — or raise."""

    def skip(self, function_id: int, function_name: str) -> None:
        """Consume a row DBOS writes but never reads back on recovery (a recv/get_event timeout)."""

    def sleep(self, function_id: int, seconds: float) -> None:
        """A ``DBOS.sleep(seconds)`` at ``function_id`` (its recorded wake-up time is all DBOS reads back) — or raise."""

    def patched(self, function_id: int, patch_name: str, deprecated: bool) -> bool:
        """DBOS's answer at ``function_id``: True for the patch's marker (consumed) or for nothing recorded
        (``patch`` writes its marker there; ``deprecate_patch`` writes none and answers False), False
        for another operation."""

    def name_at(self, function_id: int) -> str | None:
        """The DBOS function name recorded at ``function_id`` (``None`` if nothing is)."""

    def child_result(self, child_workflow_id: str) -> tuple[Any, BaseException | None]:
        """The recorded result (or error) the parent got from a child workflow — or raise."""

    def finished(self, output: Any, error: BaseException | None) -> None:
        """The workflow returned ``output`` or raised ``error``."""


def dbos_version() -> tuple[int, int]:
    parts = installed_version("dbos").split(".")
    return int(parts[0]), int(parts[1])


def installed_dbos() -> str:
    """The installed dbos version string (``3.4.0``)."""
    return installed_version("dbos")


def check_version() -> str | None:
    """Why the installed dbos cannot be replayed with, or ``None``."""
    try:
        current = dbos_version()
    except Exception:  # not installed, or a version string without numbers
        return "dbos is not installed; install replaytest[dbos]"
    low, high = SUPPORTED
    if not low <= current < high:
        return (
            f"dbos {installed_version('dbos')} is outside the range replay was tested with "
            f"(>= {low[0]}.{low[1]}, < {high[0]}.{high[1]})"
        )
    return None


class _TokenSerializer:
    """A DBOS ``Serializer`` that never encodes anything: values pass through DBOS's wrappers as tokens
    naming Python objects held here, so recorded results reach the workflow without pickle or JSON."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._counter = itertools.count()

    def serialize(self, data: Any) -> str:
        token = f"replaytest:{next(self._counter)}"
        self._values[token] = data
        return token

    def deserialize(self, serialized_data: str) -> Any:
        return self._values[serialized_data]

    def name(self) -> str:
        return SERIALIZATION


def _serializer_class() -> type:
    from dbos._serialization import Serializer

    return type("ReplaySerializer", (_TokenSerializer, Serializer), {})


class ReplaySystemDatabase:
    """Stands in for ``dbos._sys_db.SystemDatabase`` while one workflow replays (methods by DBOS's names)."""

    def __init__(self, workflow_id: str, source: OperationSource, serializer: Any) -> None:
        self.workflow_id = workflow_id
        self.source = source
        self.serializer = serializer
        self.version = dbos_version()

    # -- the workflow itself ---------------------------------------------------------------------

    def init_workflow(self, status: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        if status["workflow_uuid"] != self.workflow_id:
            raise UnsupportedOperation(f"replay runs one workflow; the code started {status['workflow_uuid']!r} directly")
        if self.version < (3, 1):  # up to 3.0 it also returned the workflow's deadline
            return "PENDING", status.get("workflow_deadline_epoch_ms"), True
        return "PENDING", True

    def init_child_workflow(self, status: Any, *args: Any, **kwargs: Any) -> tuple[str, bool]:
        # Reached only for a child the history has no row for, which check_operation_execution
        # already turned into a divergence or the end of a running history.
        raise UnsupportedOperation(f"child workflow {status.get('name')!r} would start for real")

    def update_workflow_outcome(self, workflow_id: str, status: str, *args: Any, output: Any = None, error: Any = None, **kwargs: Any) -> bool:
        return True  # the replayer takes the outcome from the call itself

    def get_deduplicated_workflow(self, *args: Any, **kwargs: Any) -> None:
        return None

    # -- recorded operations --------------------------------------------------------------------------

    def check_operation_execution(self, workflow_id: str, function_id: int, function_name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._own(workflow_id)
        result, error, child = self.source.recorded(function_id, function_name)
        return self._recorded(result, error, child)

    def _recorded(self, result: Any, error: BaseException | None, child: str | None) -> dict[str, Any]:
        recorded = {
            "output": None if (error is not None or child is not None) else self.serializer.serialize(result),
            "error": None if error is None else self.serializer.serialize(error),
            "serialization": SERIALIZATION,
            "child_workflow_id": child,
            "child_shard_key": None,
        }
        return recorded

    def record_operation_result(self, result: Any, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedOperation(f"operation {result.get('function_name')!r} would be recorded for real")

    def record_get_result(self, result_workflow_id: str, output: Any, error: Any, serialization: Any, ctx: Any = None, **kwargs: Any) -> None:
        from dbos._context import get_local_dbos_context

        if ctx is None:
            ctx = get_local_dbos_context()
            if ctx is None or not ctx.is_workflow():
                return
            ctx.function_id += 1
        self._own(ctx.workflow_id)
        self.source.recorded(ctx.function_id, "DBOS.getResult")

    def call_function_as_step(self, fn: Callable[[], Any], function_name: str, ctx: Any) -> Any:
        if not (ctx and ctx.is_workflow()):
            raise UnsupportedOperation(f"{function_name} outside a workflow")
        self._own(ctx.workflow_id)
        result, error, _ = self.source.recorded(ctx.function_id, function_name)
        if error is not None:
            raise error
        return result

    async def call_coroutine_as_step(self, fn: Callable[[], Any], function_name: str, ctx: Any) -> Any:
        return self.call_function_as_step(fn, function_name, ctx)

    def call_txn_as_step(self, workflow_uuid: str, function_id: int, function_name: str, op: Any) -> Any:
        self._own(workflow_uuid)
        result, error, _ = self.source.recorded(function_id, function_name)
        if error is not None:
            raise error
        return result

    def await_workflow_result(self, workflow_id: str, *args: Any, **kwargs: Any) -> Any:
        result, error = self.source.child_result(workflow_id)
        if error is not None:
            raise error
        return result

    async def await_workflow_result_async(self, workflow_id: str, *args: Any, **kwargs: Any) -> Any:
        return self.await_workflow_result(workflow_id)

    def record_sleep(self, workflow_uuid: str, function_id: int, seconds: float, **kwargs: Any) -> float:
        self._own(workflow_uuid)
        self.source.sleep(function_id, seconds)
        return 0.0  # a replayed sleep is over at once

    def recv(self, workflow_uuid: str, function_id: int, timeout_function_id: int, topic: Any, timeout_seconds: float = 60) -> Any:
        self._own(workflow_uuid)
        result, error, _ = self.source.recorded(function_id, "DBOS.recv")
        self.source.skip(timeout_function_id, "DBOS.sleep")
        if error is not None:
            raise error
        return result

    async def recv_async(self, *args: Any, **kwargs: Any) -> Any:
        return self.recv(*args, **kwargs)

    def get_event(self, target_uuid: str, key: str, timeout_seconds: float = 60, caller_ctx: Any = None) -> Any:
        if not caller_ctx:
            raise UnsupportedOperation("DBOS.get_event outside a workflow")
        self._own(caller_ctx["workflow_uuid"])
        result, error, _ = self.source.recorded(caller_ctx["function_id"], "DBOS.getEvent")
        self.source.skip(caller_ctx["timeout_function_id"], "DBOS.sleep")
        if error is not None:
            raise error
        return result

    async def get_event_async(self, *args: Any, **kwargs: Any) -> Any:
        return self.get_event(*args, **kwargs)

    def set_event_from_workflow(self, workflow_uuid: str, function_id: int, key: str, message: Any, **kwargs: Any) -> None:
        self._own(workflow_uuid)
        _, error, _ = self.source.recorded(function_id, "DBOS.setEvent")
        if error is not None:
            raise error

    def send_bulk(self, messages: Any, *args: Any, workflow_id: str | None = None, function_id: int | None = None, function_name: str = "DBOS.send", **kwargs: Any) -> None:
        if workflow_id is None or function_id is None:
            raise UnsupportedOperation(f"{function_name} from a step or outside a workflow would send for real")
        self._own(workflow_id)
        _, error, _ = self.source.recorded(function_id, function_name)
        if error is not None:
            raise error

    def patch(self, *, workflow_id: str, function_id: int, patch_name: str) -> bool:
        self._own(workflow_id)
        return self.source.patched(function_id, patch_name, deprecated=False)

    def deprecate_patch(self, *, workflow_id: str, function_id: int, patch_name: str) -> bool:
        self._own(workflow_id)
        return self.source.patched(function_id, patch_name, deprecated=True)

    def get_checkpoint_name(self, *, workflow_id: str, function_id: int) -> str | None:
        self._own(workflow_id)
        return self.source.name_at(function_id)

    def get_queue(self, name: str, **kwargs: Any) -> Any:
        """``DBOS.retrieve_queue`` in the workflow: a queue of that name, as the queues table would hold it.
        DBOS does not checkpoint the read, and an enqueue uses only the name (its check compares the
        enqueued function, not the queue), so the registered settings the stand-in cannot read change nothing."""
        from dbos import _queue as queue_module

        token = getattr(queue_module, "_INTERNAL_QUEUE_CONSTRUCTION", None)  # since 3.4 only DBOS makes queues
        return queue_module.Queue(name, database_backed_queue=True, **({"token": token} if token is not None else {}))

    def get_workflow_owner(self, workflow_id: str) -> str | None:
        return None

    def _key_hint(self, workflow_id: str) -> None:
        return None

    def _own(self, workflow_id: str) -> None:
        if workflow_id != self.workflow_id:
            raise UnsupportedOperation(f"an operation of workflow {workflow_id!r} while replaying {self.workflow_id!r}")

    def __getattr__(self, name: str) -> Any:
        # Anything else DBOS reaches for would read or write a real database: name it and stop, naming the
        # DBOS API behind the call where it is known, since the system-database name means little to a user.
        api = _STREAM_CALLS.get(name)
        if api is not None:
            raise UnsupportedOperation(
                f"the workflow calls {api}, which replay has no stand-in for (DBOS system-database call {name!r}): "
                "this run is not checked"
            )
        raise UnsupportedOperation(f"replay has no stand-in for DBOS system-database call {name!r}")


_lock = threading.Lock()
_shared: list[ThreadPoolExecutor] = []


def _background_executor() -> ThreadPoolExecutor:
    if not _shared:
        _shared.append(ThreadPoolExecutor(max_workers=4, thread_name_prefix="replaytest-dbos"))
    return _shared[0]


def registered_workflow(name: str) -> Callable[..., Any] | None:
    """The current code's DBOS workflow registered under ``name`` (DBOS registers on decoration)."""
    from dbos._dbos import _get_or_create_dbos_registry

    return _get_or_create_dbos_registry().workflow_info_map.get(name)


def registered_workflow_names() -> list[str]:
    from dbos._dbos import _get_or_create_dbos_registry

    return sorted(_get_or_create_dbos_registry().workflow_info_map)


def step_bodies(namespaces: list[dict[str, Any]]) -> list[Any]:
    """The undecorated functions of the steps and transactions the namespaces (module globals) name,
    directly or as methods of their classes. DBOS marks both its wrapper and the function it wraps with
    ``dbos_function_name``; workflows carry it too and are left out (their bodies are what replay runs)."""
    workflows = set(registered_workflow_names())
    found: list[Any] = []
    for namespace in namespaces:
        candidates = list(namespace.values())
        for value in list(candidates):
            if isinstance(value, type):
                candidates.extend(vars(value).values())
        for value in candidates:
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if not isinstance(value, types.FunctionType):
                continue  # DBOS's wrappers are functions; other objects are not asked (a module's __getattr__)
            name = getattr(value, "dbos_function_name", None)
            if not isinstance(name, str) or name in workflows or name.startswith("<temp>."):
                continue
            body = getattr(value, "__wrapped__", value)  # the wrapper DBOS.step() returned, or the function itself
            if getattr(body, "dbos_function_name", None) == name and body not in found:
                found.append(body)
    return found


def bound_target(function: Callable[..., Any], class_name: str | None, config_name: str | None) -> tuple[Any, ...]:
    """The leading argument DBOS recovery passes a method (stored inputs lack it): the configured
    instance named by ``config_name``, else the class for a class method."""
    from dbos._dbos import _get_or_create_dbos_registry
    from dbos._registrations import DBOSFuncType, get_func_info

    registry = _get_or_create_dbos_registry()
    if config_name is not None:
        instance = registry.instance_info_map.get(f"{class_name}/{config_name}")
        if instance is None:
            raise UnsupportedOperation(f"no configured instance {config_name!r} of {class_name!r} in the current code")
        return (instance,)
    if class_name is not None:
        cls = registry.class_info_map.get(class_name)
        if cls is None:
            raise UnsupportedOperation(f"no DBOS class {class_name!r} in the current code")
        info = get_func_info(function)
        return () if info is not None and info.func_type == DBOSFuncType.Static else (cls,)
    return ()


@contextlib.contextmanager
def replaying(workflow_id: str, source: OperationSource) -> Iterator[Callable[..., Any]]:
    """Put the stand-in in place for one replay and yield ``call(function, *args, **kwargs)``, which
    runs the workflow under ``workflow_id`` (async workflows on a private event loop); restores DBOS."""
    import asyncio
    import inspect

    from dbos import DBOS, SetWorkflowID, _workflow_commands
    from dbos import _dbos as dbos_module

    with _lock:
        instance = dbos_module._dbos_global_instance
        if instance is None:
            # The application makes its DBOS object at launch time: make one (it does not connect).
            instance = DBOS(config={"name": "replaytest-replay", "system_database_url": "sqlite://"})
        serializer = _serializer_class()()
        saved = {
            name: instance.__dict__.get(name) for name in ("_sys_db_field", "_serializer", "_executor_field", "enable_patching")
        }
        # A finished workflow drops its datasource checkpoints in the application database (since 3.4).
        cleanups = [name for name in _CHECKPOINT_CLEANUPS if hasattr(_workflow_commands, name)]
        saved_cleanup = {name: getattr(_workflow_commands, name) for name in cleanups}
        try:
            instance._sys_db_field = ReplaySystemDatabase(workflow_id, source, serializer)  # type: ignore[assignment]
            instance._serializer = serializer
            instance.enable_patching = True  # DBOS.patch refuses to run without it before 3.4
            # Per replay: DBOS makes it the default executor of the loop an async workflow runs on, and
            # closing that loop shuts it down.
            instance._executor_field = ThreadPoolExecutor(max_workers=4, thread_name_prefix="replaytest-dbos")
            # Async steps and async workflows' outcome writes run on DBOS's background loop: a daemon
            # thread, started once (with an executor of its own) and left running for the next replay.
            loop = instance._background_event_loop
            if "executor" in inspect.signature(loop.start).parameters:  # since 3.4
                loop.start(_background_executor())
            else:
                loop.start()

            for name in cleanups:
                setattr(_workflow_commands, name, _no_cleanup_async if name.endswith("_async") else _no_cleanup)

            def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
                with SetWorkflowID(workflow_id):
                    result = function(*args, **kwargs)
                    if inspect.isawaitable(result):
                        loop = asyncio.new_event_loop()
                        entry = (result, threading.get_ident())
                        _running.append(entry)
                        try:
                            return loop.run_until_complete(_awaited(result))
                        finally:
                            _running.remove(entry)
                            loop.close()
                    return result

            yield call
        finally:
            if instance._executor_field is not None:
                instance._executor_field.shutdown(wait=False, cancel_futures=True)
            for name, value in saved.items():
                setattr(instance, name, value)
            for name, function in saved_cleanup.items():
                setattr(_workflow_commands, name, function)


# The async workflow coroutine being replayed, with the thread whose event loop runs it.
_running: list[tuple[Any, int]] = []

# How long a check made on another thread waits for the workflow's coroutine to reach its await.
_SUSPEND_WAIT_SECONDS = 2.0


def suspended_frames() -> list[Any]:
    """The frames of the async workflow being replayed, outermost first, down the chain of awaits it is
    suspended in (DBOS checks an async step's record on another thread, away from the workflow's stack)."""
    frames = []
    here = threading.get_ident()
    for awaitable, loop_thread in list(_running):
        while awaitable is not None:
            if loop_thread != here:
                # ``asyncio.to_thread`` hands the check to a worker before the coroutine reaches its
                # ``await``; until it does, the coroutine runs and its chain of awaits reads as empty.
                _wait_until_suspended(awaitable)
            frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
            if frame is not None:
                frames.append(frame)
            awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
            # A chain that awaits an asyncio Task goes on in the Task's coroutine (the Task has no frame).
            get_coro = getattr(awaitable, "get_coro", None)
            if get_coro is not None:
                awaitable = get_coro()
    return frames


def _wait_until_suspended(awaitable: Any) -> None:
    """Wait (a bounded time) while ``awaitable`` is executing on its event loop's thread."""
    deadline = time.monotonic() + _SUSPEND_WAIT_SECONDS
    while getattr(awaitable, "cr_running", False) or getattr(awaitable, "gi_running", False):
        if time.monotonic() > deadline:
            return
        time.sleep(0.0002)


_CHECKPOINT_CLEANUPS = ("delete_completed_datasource_checkpoints", "delete_completed_datasource_checkpoints_async")


def _no_cleanup(*args: Any, **kwargs: Any) -> None:
    return None


async def _no_cleanup_async(*args: Any, **kwargs: Any) -> None:
    return None


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


@contextlib.contextmanager
def offline_datasources() -> Iterator[None]:
    """While active, ``SQLAlchemyDatasource.create`` (and the async one) connect to nothing: importing an
    application for replay must not reach its database. The datasources work as transaction decorators;
    replay answers every transaction from the history, so their engine (in-memory SQLite) stays unused."""
    from dbos import AsyncSQLAlchemyDatasource, SQLAlchemyDatasource
    from dbos._datasource_sqlite import SqliteAsyncDatasource, SqliteSyncDatasource

    def create(*args: Any, serializer: Any = None, sessionmaker: Any = None, **kwargs: Any) -> Any:
        import sqlalchemy

        return _offline(SqliteSyncDatasource, "sqlite://", sqlalchemy.create_engine("sqlite://"), serializer, sessionmaker)

    async def create_async(*args: Any, serializer: Any = None, sessionmaker: Any = None, **kwargs: Any) -> Any:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine("sqlite+aiosqlite://")
        return _offline(SqliteAsyncDatasource, "sqlite+aiosqlite://", engine, serializer, sessionmaker)

    saved = (SQLAlchemyDatasource.__dict__["create"], AsyncSQLAlchemyDatasource.__dict__["create"])
    SQLAlchemyDatasource.create = staticmethod(create)  # type: ignore[assignment,method-assign]
    AsyncSQLAlchemyDatasource.create = staticmethod(create_async)  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        SQLAlchemyDatasource.create, AsyncSQLAlchemyDatasource.create = saved  # type: ignore[method-assign]


def _offline(cls: type, url: str, engine: Any, serializer: Any, sessionmaker: Any) -> Any:
    """A datasource on an engine that never connects (``sessionmaker`` exists since dbos 3.4)."""
    import inspect

    from dbos._serialization import DBOSDefaultSerializer

    arguments: dict[str, Any] = {
        "database_url": url, "engine_kwargs": {}, "engine": engine, "schema": None,
        "serializer": serializer or DBOSDefaultSerializer,
    }  # fmt: skip
    if "sessionmaker" in inspect.signature(cls).parameters:
        arguments["sessionmaker"] = sessionmaker
    return cls(**arguments)


# -- recording prompt versions per step call (``dbos.prompts``) ------------------------------------------
#
# DBOS has no public hook for "a step starts running". Every step asks its system database whether it
# already ran (``SystemDatabase.check_operation_execution``, inside the step's context) before its body
# runs: an empty answer means the body runs now, at that function id. The class method is wrapped once to
# call ``on_start`` then; a recorded answer (a completed step on recovery) calls nothing. Tested with dbos
# 2.31.1 (the oldest line of the CI matrix) and 3.4.0 (``RECORDING_TESTED``); outside that range, or if the names below are missing, nothing is recorded
# and the reason is logged once.

RECORDING_TESTED = ((2, 31), (3, 5))  # [oldest, first untested) for per-call prompt recording
_WRAPPED = "__replaytest_step_start__"
_step_start_hooks: list[Callable[[Any, str, int, str], None]] = []


def recording_problem() -> str | None:
    """Why per-call prompt recording cannot hook this dbos, or ``None``."""
    try:
        current = dbos_version()
        from dbos._context import get_local_dbos_context  # noqa: F401
        from dbos._sys_db import SystemDatabase
    except Exception as error:
        return f"dbos is not importable ({type(error).__name__}: {error})"
    low, high = RECORDING_TESTED
    if not low <= current < high:
        return (
            f"dbos {installed_version('dbos')} is outside the range per-call prompt recording was tested with "
            f"(>= {low[0]}.{low[1]}, < {high[0]}.{high[1]})"
        )
    if not callable(getattr(SystemDatabase, "check_operation_execution", None)):
        return "dbos has no SystemDatabase.check_operation_execution"
    return None


def on_step_start(hook: Callable[[Any, str, int, str], None]) -> None:
    """Call ``hook(system_database, workflow_id, function_id, step_name)`` in the step's own context each
    time a step's body is about to run (not when DBOS returns its recorded result). The hook must not raise."""
    from dbos._context import get_local_dbos_context
    from dbos._sys_db import SystemDatabase

    if hook not in _step_start_hooks:
        _step_start_hooks.append(hook)
    original = SystemDatabase.check_operation_execution
    if getattr(original, _WRAPPED, False):
        return

    def check_operation_execution(self: Any, workflow_id: str, function_id: int, function_name: str, *args: Any, **kwargs: Any) -> Any:
        recorded = original(self, workflow_id, function_id, function_name, *args, **kwargs)
        if not recorded:
            ctx = get_local_dbos_context()
            # Inside the step's context at its own id: a step about to run (child workflow starts and
            # DBOS's own operations ask from the workflow's context).
            if ctx is not None and ctx.is_step() and ctx.workflow_id == workflow_id and ctx.function_id == function_id:
                for each in tuple(_step_start_hooks):
                    each(self, workflow_id, function_id, function_name)
        return recorded

    setattr(check_operation_execution, _WRAPPED, True)
    check_operation_execution.__wrapped__ = original  # type: ignore[attr-defined]
    SystemDatabase.check_operation_execution = check_operation_execution  # type: ignore[method-assign]


def live_system_database() -> Any:
    """The running DBOS's system database (``DBOS._sys_db``), or ``None`` (not launched, or replay's
    stand-in in its place)."""
    from dbos import _dbos as dbos_module
    from dbos._sys_db import SystemDatabase

    instance = dbos_module._dbos_global_instance
    database = None if instance is None else instance.__dict__.get("_sys_db_field")
    return database if isinstance(database, SystemDatabase) else None


def system_database_engine(database: Any) -> tuple[Any, str | None]:
    """The SQLAlchemy engine of a DBOS system database and its schema (``None`` on SQLite)."""
    return database.engine, database.schema
