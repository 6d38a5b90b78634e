"""Runtime guards: trip only for orchestration code on the replaying thread, and always come off."""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from replaytest.replay import guards
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules


def originals() -> tuple:
    return (time.time, time.monotonic, random.random, uuid.uuid4, socket.socket.__init__, subprocess.Popen.__init__)


def test_a_value_read_is_recorded_with_call_and_line_and_returns_a_real_value() -> None:
    before = time.time()
    with guarded() as state:
        now = time.time()
        line = sys._getframe().f_lineno - 1
    assert before <= now <= time.time()  # a real clock reading: nothing recorded could be fed instead
    [trip] = state.trips
    assert (trip.call, trip.kind, trip.stopped) == ("time.time", "value", False)
    assert trip.source.path == __file__ and trip.source.line == line
    assert state.stopped is None


def test_a_value_read_in_a_loop_is_one_trip_per_line() -> None:
    start = sys._getframe().f_lineno
    with guarded() as state:
        for _ in range(3):
            uuid.uuid4()
        random.random()
    assert [(trip.call, trip.source.line - start) for trip in state.trips] == [("uuid.uuid4", 3), ("random.random", 4)]


def test_guards_come_off_after_the_block_even_on_an_exception() -> None:
    before = originals()
    with pytest.raises(RuntimeError):
        with guarded():
            assert time.time is not before[0]
            raise RuntimeError("boom")
    assert originals() == before
    assert "connect" not in socket.socket.__dict__  # the inherited method is visible again
    time.time()  # no guard


def test_the_standard_library_reading_the_clock_is_not_a_trip() -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("replaytest-guard-test")
    logger.addHandler(handler)
    try:
        with guarded() as state:
            logger.warning("logging stamps records with time.time()")
    finally:
        logger.removeHandler(handler)
    assert records and not state.trips


def test_other_threads_pass_straight_through() -> None:
    seen: list[object] = []
    started = threading.Event()
    release = threading.Event()

    def worker() -> None:
        started.set()
        release.wait(5)
        seen.append(time.time())
        seen.append(uuid.uuid4())
        with socket.socket() as sock:
            seen.append(sock.fileno())

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait(5)
    with guarded() as state:
        release.set()
        thread.join(5)
    assert len(seen) == 3 and not state.trips


def test_effects_reached_through_the_standard_library_trip_at_the_project_line() -> None:
    with guarded():
        with pytest.raises(NondeterministicCall) as caught:
            subprocess.run([sys.executable, "-c", "pass"], check=True)
        line = sys._getframe().f_lineno - 1
    assert caught.value.call == "subprocess.Popen"
    assert caught.value.source.line == line


def test_imported_names_in_orchestration_modules_are_swapped_and_restored() -> None:
    import replay_apps

    original = replay_apps.datetime
    with guarded(orchestration_modules([replay_apps.recorded])):
        assert replay_apps.datetime is not original
        assert isinstance(original(2020, 1, 1), replay_apps.datetime)  # construction and isinstance work
        assert replay_apps.datetime(2020, 1, 1).year == 2020
        with guarded_state_of_this_thread() as state:
            replay_apps.datetime.now()
        assert [trip.call for trip in state.trips] == ["datetime.now"]
    assert replay_apps.datetime is original


def guarded_state_of_this_thread():
    """The active guard's state (the test body runs inside ``guarded``)."""
    from contextlib import contextmanager

    @contextmanager
    def current():
        yield guards._active[threading.get_ident()]

    return current()


def test_nested_guards_on_one_thread_are_refused() -> None:
    with guarded():
        with pytest.raises(RuntimeError, match="already active"):
            with guarded():
                pass
    assert not guards._active


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: time.perf_counter(), "time.perf_counter"),
        (lambda: time.time_ns(), "time.time_ns"),
        (lambda: random.choice("ab"), "random.choice"),
        (lambda: uuid.uuid1(), "uuid.uuid1"),
        (lambda: os.urandom(4), "os.urandom"),
        (lambda: secrets.token_hex(4), "secrets.token_hex"),
        (lambda: socket.create_connection(("127.0.0.1", 9)), "socket.socket"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_every_guarded_call_trips_from_project_code(call, name: str) -> None:
    with guarded() as state:
        try:
            call()
        except NondeterministicCall:
            pass  # effects are stopped; value reads return
    assert [trip.call for trip in state.trips] == [name]


def test_a_seeded_random_instance_is_not_guarded() -> None:
    with guarded() as state:
        value = random.Random(7).random()
    assert value == random.Random(7).random() and not state.trips


def test_orchestration_code_installed_like_a_library_is_still_guarded(tmp_path, monkeypatch) -> None:
    """A CI that installs the app into site-packages: the workflow's own package counts as project code."""
    import importlib

    from replaykit import record, replay

    package = tmp_path / "installed_shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "flow.py").write_text(
        "import time\n"
        "from replaytest.journal import workflow\n\n"
        "def noop():\n    return 1\n\n"
        "@workflow('installed')\n"
        "def flow(ctx, data):\n"
        "    ctx.step('noop', noop)\n"
        "    return time.time() > 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("installed_shop.flow")
    try:
        history = record(tmp_path, module.flow, None, name="installed")
        monkeypatch.setattr(guards, "_LIBRARY_PREFIXES", (*guards._LIBRARY_PREFIXES, str(tmp_path) + os.sep))
        monkeypatch.setattr(guards, "_user_cache", {})
        assert not guards.is_project_file(module.__file__)
        result = replay(history, module.flow)
    finally:
        sys.modules.pop("installed_shop.flow", None)
        sys.modules.pop("installed_shop", None)
    assert result.status == "diverged" and result.divergence.kind == "nondeterministic-call"
    assert result.divergence.source.line == 10 and [h.source.line for h in result.hazards] == [10]


def test_library_code_writing_files_for_orchestration_code_keeps_working(tmp_path) -> None:
    """A log file opened on the first record (``delay=True``) and replaytest's own cache write, both asked
    for by project code on the guarded thread: the writes are the libraries', not the workflow's."""
    from replaytest.replay.cache import ReplayCache

    handler = logging.FileHandler(tmp_path / "agent.log", delay=True)
    logger = logging.getLogger("replaytest-guard-file-test")
    logger.addHandler(handler)
    cache = ReplayCache.__new__(ReplayCache)
    cache.file, cache.entries, cache.shard = tmp_path / "cache" / "replay" / "passed.json", {"abc": {"type": "refund"}}, None
    try:
        with guarded() as state:
            logger.warning("refund started")
            cache.save()
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert not state.trips
    assert (tmp_path / "agent.log").read_text() == "refund started\n"
    assert (tmp_path / "cache" / "replay" / "passed.json").exists()


def test_the_same_write_asked_for_by_project_code_is_stopped(tmp_path) -> None:
    with guarded() as state:
        with pytest.raises(NondeterministicCall):
            (tmp_path / "agent.log").write_text("refund started\n")
        with open(__file__) as source:
            source.read(1)  # reading stays allowed
    assert [trip.call for trip in state.trips] == ["open"]
    assert not (tmp_path / "agent.log").exists()


@pytest.mark.parametrize(
    ("change", "name"),
    [
        (lambda folder: (folder / "new.txt").write_bytes(b"x"), "open"),
        (lambda folder: (folder / "new").mkdir(), "os.mkdir"),
        (lambda folder: (folder / "ledger.csv").unlink(), "os.unlink"),
        (lambda folder: (folder / "ledger.csv").rename(folder / "old.csv"), "os.rename"),
        (lambda folder: (folder / "new.txt").touch(), "os.utime"),  # touch sets the time first
    ],
    ids=["write_bytes", "mkdir", "unlink", "rename", "touch"],
)
def test_pathlib_changes_are_stopped_on_every_supported_python(tmp_path, change, name: str) -> None:
    """Python 3.10's pathlib reaches io.open and os through an accessor that captured them at import."""
    (tmp_path / "ledger.csv").write_text("A-17\n")
    with guarded() as state:
        with pytest.raises(NondeterministicCall) as caught:
            change(tmp_path)
    assert caught.value.call == name and [trip.call for trip in state.trips] == [name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.csv"]
    assert (tmp_path / "ledger.csv").read_text() == "A-17\n"


def test_a_database_connection_made_at_import_is_guarded_in_the_module_globals(tmp_path) -> None:
    """No audit event marks a statement: the connection in the workflow module's globals is swapped."""
    import sqlite3
    import types

    module = types.ModuleType("refund_ledger")
    module.__file__ = __file__
    module.DB = sqlite3.connect(tmp_path / "ledger.db")
    module.DB.execute("CREATE TABLE refunds (id TEXT)")
    module.DB.execute("INSERT INTO refunds VALUES ('r-0')")
    module.DB.commit()
    real = module.DB
    with guarded([module]) as state:
        assert isinstance(module.DB, sqlite3.Connection)
        assert module.DB.execute("SELECT count(*) FROM refunds").fetchone() == (1,)  # a read: a real value
        with pytest.raises(NondeterministicCall):
            module.DB.execute("INSERT INTO refunds VALUES ('r-1')")
        with pytest.raises(NondeterministicCall):
            with module.DB as connection:
                connection.execute("  -- a comment first\n DELETE FROM refunds")
        with pytest.raises(NondeterministicCall):
            module.DB.cursor().execute("WITH old AS (SELECT 1) UPDATE refunds SET id = 'x'")
        with pytest.raises(NondeterministicCall):
            module.DB.executescript("DROP TABLE refunds")
    assert module.DB is real
    assert [(trip.call, trip.kind) for trip in state.trips] == [
        ("sqlite3.Connection.execute", "value"),
        ("sqlite3.Connection.execute", "effect"),
        ("sqlite3.Connection.execute", "effect"),
        ("sqlite3.Cursor.execute", "effect"),
        ("sqlite3.Connection.executescript", "effect"),
    ]
    assert real.execute("SELECT id FROM refunds").fetchall() == [("r-0",)]
    real.close()


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("SELECT 1", False), ("  select * from t", False), ("/* c */ SELECT 1", False), ("-- c\nEXPLAIN SELECT 1", False),
        ("WITH a AS (SELECT 1) SELECT * FROM a", False), ("PRAGMA table_info(t)", False), ("VALUES (1)", False),
        ("INSERT INTO t VALUES (1)", True), ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", True),
        ("PRAGMA journal_mode = WAL", True), ("CREATE TABLE t (x)", True), ("", True), (b"SELECT 1", True),
    ],
)  # fmt: skip
def test_which_statements_count_as_writes(sql, writes: bool) -> None:
    assert guards._sql_writes(sql) is writes


def test_the_audit_layer_stops_what_no_patch_sees_and_lets_other_threads_through(tmp_path) -> None:
    import _io
    import inspect

    with guarded() as state:
        with pytest.raises(NondeterministicCall):
            _io.FileIO(str(tmp_path / "raw"), "w")
        with pytest.raises(NondeterministicCall):
            inspect.unwrap(open)(tmp_path / "unwrapped", "w")
        other = threading.Thread(target=lambda: (tmp_path / "other-thread").write_text("ok"))
        guards._active.pop(threading.get_ident())  # start the helper thread unguarded, then guard again
        try:
            other.start()
            other.join()
        finally:
            guards._active[threading.get_ident()] = state
    assert [trip.call for trip in state.trips] == ["open", "open"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-thread"]


def test_an_event_loop_waking_itself_is_not_an_effect_but_a_socket_it_sends_on_is() -> None:
    """An async workflow awaiting ``asyncio.to_thread`` work that finished first has its loop write to its
    own socket pair, with the workflow's frame on the stack: that is the loop's business."""
    import asyncio
    import concurrent.futures

    loop = asyncio.new_event_loop()
    done: concurrent.futures.Future[int] = concurrent.futures.Future()
    done.set_result(7)

    async def workflow() -> int:
        return await asyncio.wrap_future(done)  # the callback runs at once: call_soon_threadsafe

    try:
        with guarded() as state:
            loop.call_soon_threadsafe(lambda: None)
            assert loop.run_until_complete(workflow()) == 7
        assert state.trips == []
        left, right = socket.socketpair()
        with left, right, guarded() as state:
            with pytest.raises(NondeterministicCall):
                left.send(b"\0")
        assert [trip.call for trip in state.trips] == ["socket.send"]
    finally:
        loop.close()
