"""Long fuzz run over the history faces: mutated neutral and Temporal histories through the loader,
``replay``, ``diff`` and ``redact``; reports runs, uncaught exceptions and hangs (targets: 0 and 0).

Neutral histories (``fixtures/histories``) get byte-level mutations (inserted hostile tokens - 1e999,
NaN, lone surrogates, 5,000-digit integers, deep brackets, duplicate keys, NUL, control characters -
deletions, flipped bytes, truncation). Temporal histories (``tests/temporal/histories``) get event-level
mutations (deleted, duplicated, swapped or retyped events, ids changed, attributes dropped, truncation;
ids renumbered nine times in ten so the sequence checks are not the only line of defence) and are
replayed with the real temporalio Replayer against the workflow that recorded them. DBOS pickles
(``--dbos-runs``) are the payloads the shop application of ``tests/dbos`` wrote when recorded for real,
mutated at the opcode level (``mutate_dbos_pickle``: opcodes flipped, memo references redirected, values
replaced by huge constructor arguments, memo-doubling trees, class tampering or deep nesting, truncation)
and run through the restricted decoder and through ``replaytest import dbos`` of the recorded database.

LangGraph checkpoints (``--langgraph-runs``, needs the langgraph extra): the refund agent of
``langgraph_refund_agent.py`` is recorded for real into a SqliteSaver database (three threads: completed, parked, failed); each run
copies it, mutates the serialized msgpack bytes of one thread's checkpoints and task writes
(``mutate_msgpack``: flipped bytes, truncation, inserted headers declaring huge lengths, deep nesting,
bad extension values) and runs the importer over the whole database. The mutated thread must be
imported or refused; the two untouched threads must always be imported (a *lost* thread otherwise).

An *uncaught exception* is anything but a ``HistoryError``/``DiffError``, a replay result or an import
refusal (for DBOS: a ``PickleRefused`` or a refused run); a *hang* is a run that does not finish within
``--timeout`` seconds (SIGALRM). Peak memory is the process's maximum resident set size (``ru_maxrss``),
printed at the end (and before and after the LangGraph runs).

Usage: ``python benchmarks/fuzz_histories.py [--runs 2000] [--temporal-runs 150] [--langgraph-runs 0]
[--dbos-runs 0] [--seed 1] [--timeout 120]``
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import pickletools
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replaytest.history import HistoryError, Redactor, load_history, redact_history  # noqa: E402
from replaytest.plugins import load_plugins  # noqa: E402
from replaytest.replay.adapter import ReplayOptions  # noqa: E402
from replaytest.replay.diff import DiffError, diff_files  # noqa: E402
from replaytest.replay.runner import load_workflows, replay_file  # noqa: E402

INSERTS = [b"1e999", b"NaN", b"Infinity", b'"\\ud800"', b"9" * 5000, b"[" * 900, b"{" * 50, b'"status": "x", "status"',
           b"\x00", b"\xff\xfe", b'"redacted": 3', b"-1", b"null", b'"\x1b[31m\r\n"', b"}", b'"result_ref": "sha256:00"']


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        action = rng.choice(["insert", "delete", "flip", "truncate"])
        if action == "insert":
            out[at:at] = rng.choice(INSERTS)
        elif action == "delete":
            del out[at : at + rng.randint(1, 60)]
        elif action == "flip" and at < len(out):
            out[at] = rng.randint(0, 255)
        elif action == "truncate":
            del out[at:]
    return bytes(out)


def mutate_temporal(rng: random.Random, document: dict) -> dict:
    events = document["events"]
    for _ in range(rng.choice([1, 1, 2, 3])):
        if len(events) < 2:
            break
        i = rng.randrange(1, len(events))
        op = rng.choice(["del", "dup", "swap", "id", "type", "attrdel", "trunc", "ref", "payload"])
        if op == "del":
            del events[i]
        elif op == "dup":
            events.insert(i, copy.deepcopy(events[i]))
        elif op == "swap":
            j = rng.randrange(1, len(events))
            events[i], events[j] = events[j], events[i]
        elif op == "id":
            events[i]["eventId"] = str(rng.choice([0, 1, 5, 99, -1, 10**6]))
        elif op == "type":
            events[i]["eventType"] = rng.choice([e.get("eventType", "") for e in events] + ["EVENT_TYPE_UNSPECIFIED", "bogus"])
        elif op == "attrdel":
            for key in [k for k in events[i] if k.endswith("Attributes")]:
                del events[i][key]
        elif op == "trunc":
            del events[i:]
        elif op == "ref":
            for value in events[i].values():
                if isinstance(value, dict):
                    for key in value:
                        if key.endswith("EventId"):
                            value[key] = str(rng.choice([0, 3, 7, 99]))
        elif op == "payload":
            text = json.dumps(events[i])
            events[i] = json.loads(text.replace('"data": "', '"data": "!!', 1)) if '"data": "' in text else events[i]
    if rng.random() < 0.9:
        for index, event in enumerate(events):
            event["eventId"] = str(index + 1)
    return document


# --- LangGraph msgpack checkpoints -----------------------------------------------------------------

# msgpack headers that declare far more than any stored value holds: arrays, maps, strings, binaries
# and extension values of 2**32 - 1 (or 2**31 - 1) items/bytes, with nothing after them.
HUGE_HEADERS = [b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\x7f\xff\xff\xff", b"\xc6\xff\xff\xff\xff",
                b"\xc9\xff\xff\xff\xff\x02", b"\xdc\xff\xff", b"\xde\xff\xff", b"\xda\xff\xff"]
# Extension values LangGraph's serializer would never write: payloads that are no [module, name, value],
# truncated or empty payloads, unknown and reserved ext types, a payload nesting deeply.
BAD_EXTENSIONS = [b"\xd4\x02\x00", b"\xd4\x00\xc0", b"\xc7\x03\x05\x93\xa1a", b"\xc7\x00\x01", b"\xd5\xff\x00\x00",
                  b"\xc7\x04\x02\x93\x01\x02\x03", b"\xc7\x09\x00\x93\xa1m\xa1n\xd4\x00\x00\xc0",
                  b"\xc9\x00\x00\x01\x00\x02" + b"\x91" * 256, b"\xd4\x06\x00", b"\xd8\x63" + b"\x00" * 16]


def mutate_msgpack(rng: random.Random, data: bytes) -> bytes:
    """One to four byte-level mutations of a stored msgpack value (see the module docstring)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        action = rng.choice(["flip", "flip", "truncate", "huge", "deep", "ext", "delete", "duplicate", "count"])
        if action == "flip" and at < len(out):
            out[at] = rng.randint(0, 255)
        elif action == "truncate":
            del out[at:]
        elif action == "huge":
            out[at:at] = rng.choice(HUGE_HEADERS)
        elif action == "deep":
            out[at:at] = rng.choice([b"\x91", b"\x81\xa1k", b"\xdc\x00\x01"]) * rng.choice([150, 199, 200, 201, 1000, 100_000])
        elif action == "ext":
            out[at:at] = rng.choice(BAD_EXTENSIONS)
        elif action == "delete":
            del out[at : at + rng.randint(1, 40)]
        elif action == "duplicate":
            out[at:at] = out[at : at + rng.randint(1, 200)]
        elif action == "count":  # a container header's item count changed: the rest no longer lines up
            headers = [i for i, byte in enumerate(out) if 0x80 <= byte <= 0x9F]
            if headers:
                i = rng.choice(headers)
                out[i] = (out[i] & 0xF0) | rng.randint(0, 15)
    return bytes(out)


def record_langgraph_seed(db: Path) -> Any:
    """Record the refund agent (``langgraph_refund_agent.py``) for real into ``db``; returns its entrypoint."""
    import langgraph_refund_agent

    langgraph_refund_agent.record(db)
    return langgraph_refund_agent.refund_agent


def stored_msgpack_cells(db: Path, thread_id: str) -> list[tuple[str, int]]:
    """(table, rowid) of every msgpack value stored for ``thread_id``: its checkpoints and its writes."""
    with closing(sqlite3.connect(db)) as conn:
        return [("checkpoints", rowid) for (rowid,) in conn.execute(
            "SELECT rowid FROM checkpoints WHERE thread_id = ? AND type = 'msgpack'", (thread_id,))] + [
            ("writes", rowid) for (rowid,) in conn.execute(
                "SELECT rowid FROM writes WHERE thread_id = ? AND type = 'msgpack'", (thread_id,))]


def mutate_langgraph_thread(rng: random.Random, seed_db: Path, db: Path, thread_ids: list[str]) -> str:
    """Copy ``seed_db`` to ``db`` with one to three msgpack values of one thread mutated; returns that thread."""
    shutil.copyfile(seed_db, db)
    target = rng.choice(thread_ids)
    cells = stored_msgpack_cells(db, target)
    # Closed, not only committed: the saver's databases are in WAL mode, and a WAL file left behind
    # would be read with the next run's copy.
    with closing(sqlite3.connect(db)) as conn, conn:
        for table, rowid in rng.sample(cells, k=min(len(cells), rng.choice([1, 1, 2, 3]))):
            column = "checkpoint" if table == "checkpoints" else "value"
            [(data,)] = conn.execute(f"SELECT {column} FROM {table} WHERE rowid = ?", (rowid,)).fetchall()
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (mutate_msgpack(rng, data), rowid))
    return target


def import_langgraph(db: Path, out: Path, code: Any, thread_ids: list[str], target: str) -> str:
    """Import every thread of ``db`` as ``replaytest import langgraph`` does; the outcome for ``target``
    (the mutated thread). An untouched thread that is not imported raises ``LostThread``."""
    from replaytest.history.redact import DEFAULT_KEY_NAMES, Redactor
    from replaytest.plugins.langgraph.importer import SqliteThreads, iter_threads, write_histories

    shutil.rmtree(out, ignore_errors=True)
    source = SqliteThreads(db)
    try:
        redactor = Redactor.build(DEFAULT_KEY_NAMES)  # the importers' default: shape-keeping pseudonyms
        written, refused = write_histories(iter_threads(source, (), None, code), out, redactor)
    finally:
        source.close()
    imported = {item.thread_id for _, item in written}
    lost = [t for t in thread_ids if t != target and t not in imported]
    if lost:
        raise LostThread(f"untouched thread(s) {lost} not imported; refusals: {refused}")
    for reason in refused:
        if "\n" in reason or f"thread {target!r}" not in reason:
            raise LostThread(f"a refusal that is not one line naming thread {target!r}: {reason!r}")
    return "langgraph-imported" if target in imported else "langgraph-refused"


class LostThread(Exception):
    """An import that lost a thread it should have imported, or refused one without naming it."""


def _long(value: int) -> bytes:
    """pickle's LONG1/LONG4: a little-endian two's-complement integer after its length."""
    data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data if len(data) < 256 else b"\x8b" + len(data).to_bytes(4, "little") + data


def _doubling_tree(levels: int) -> bytes:
    """A list holding the previous level twice through the memo: 2**levels leaves from ~8 bytes a level."""
    return b"]\x940" + b"".join(b"(h" + bytes([i]) + b"h" + bytes([i]) + b"l\x940" for i in range(levels)) + b"h" + bytes([levels])


# Pickle fragments that each push one value; they replace a value of a real pickle.
DBOS_HOSTILE_VALUES = [
    b"cbuiltins\nbytes\n" + _long(2**34) + b"\x85R",  # 16 GiB of zero bytes
    b"cbuiltins\nbytearray\n" + _long(2**33) + b"\x85R",
    b"cbuiltins\nlist\ncbuiltins\nrange\n" + _long(2**40) + b"\x85R\x85R",
    b"cbuiltins\nset\ncbuiltins\nrange\n" + _long(-1) + _long(2**62) + b"\x86R\x85R",
    b"c_codecs\nencode\nX\x02\x00\x00\x00abX\x06\x00\x00\x00rot_13\x86R",
    b"ccollections\nCounter\nN}(X\x06\x00\x00\x00updatecbuiltins\nset\nu\x86b",  # tampering with the class
    b"ccollections\nOrderedDict\n)R}(X\x01\x00\x00\x00aK\x01ub",
    b"cbuiltins\nint\nX\x05\x00\x00\x0099999K\x02\x86R",
    b"cdecimal\nDecimal\nX\x0e\x00\x00\x001e999999999999\x85R",
    b"cdatetime\ntimedelta\n" + _long(10**12) + b"\x85R",
    b"cos\nsystem\nX\x02\x00\x00\x00id\x85R",
    b"cbuiltins\ngetattr\n",
    b"cdbos_shop.models\nmake_parcel\n)R",
    b"ccopyreg\n_reconstructor\ncbuiltins\nlist\ncbuiltins\nobject\nN\x87R",
    b"cuuid\nUUID\n)\x81}X\x03\x00\x00\x00int" + _long(2**200) + b"sb",
    b"]\x94h\x00\x85a",  # a list holding a tuple that holds the list
    b"]\x940h\x00h\x00a",  # a list appended to itself
    _doubling_tree(40),
    _long(1 << 50_000),
    b"X\x03\x00\x00\x00\xed\xa0\x80",  # a lone surrogate
    b"\x8e" + (2**60).to_bytes(8, "little") + b"abc",
    b"r\xff\xff\xff\x0f",  # memoize the value below at index 2**28 - 1
]


def _spans(raw: bytes) -> list[tuple[str, int, int]]:
    """(opcode name, start, end) of each opcode of a well-formed pickle."""
    ops = list(pickletools.genops(raw))
    ends = [position for _, _, position in ops[1:]] + [len(raw)]
    return [(op.name, position, end) for (op, _, position), end in zip(ops, ends)]


_VALUE_OPS = {"NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "SHORT_BINUNICODE",
              "BINUNICODE", "SHORT_BINBYTES", "BINBYTES", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_SET"}
_MEMO_OPS = {"BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT"}
_OPCODE_BYTES = [op.code.encode("latin-1") for op in pickletools.opcodes]


def mutate_dbos_pickle(rng: random.Random, raw: bytes) -> bytes:
    """One to three opcode-level mutations of a real pickle (see the module docstring)."""
    seed_spans = _spans(raw)
    out = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        try:
            spans = _spans(bytes(out))
        except Exception:  # an earlier mutation broke it: aim at where its opcodes were
            spans = [span for span in seed_spans if span[2] <= len(out)]
        if not spans:
            break
        action = rng.choice(["flip-opcode", "memo", "huge", "huge", "deep", "insert", "truncate", "byte"])
        name, start, end = rng.choice(spans)
        values = [span for span in spans if span[0] in _VALUE_OPS]
        if action == "flip-opcode":
            out[start : start + 1] = rng.choice(_OPCODE_BYTES)
        elif action == "memo":
            memo = [span for span in spans if span[0] in _MEMO_OPS]
            if memo:
                name, start, end = rng.choice(memo)
                index = rng.choice([0, 1, 2, rng.randrange(256), 255]) if end - start == 2 else rng.choice([0, 7, 2**31 - 1])
                out[start + 1 : end] = index.to_bytes(end - start - 1, "little")
        elif action == "huge" and values:
            name, start, end = rng.choice(values)
            out[start:end] = rng.choice(DBOS_HOSTILE_VALUES)
        elif action == "deep" and values:
            name, start, end = rng.choice(values)
            levels = rng.choice([50, 99, 100, 101, 400, 1_000, 20_000])
            out[start:end] = b"]" * levels + bytes(out[start:end]) + b"a" * levels
        elif action == "insert":
            out[start:start] = rng.choice(DBOS_HOSTILE_VALUES + [b"(", b"0", b"2", b"t", b"R", b"b", b"\x94", b"."])
        elif action == "truncate":
            del out[rng.randrange(len(out)) :]
        elif action == "byte" and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def record_dbos_shop(folder: Path) -> Path:
    """Runs the shop application of ``tests/dbos`` for real; returns its SQLite system database."""
    folder.mkdir(parents=True, exist_ok=True)
    system_db = folder / "system.sqlite3"
    # record.py takes database URLs (SQLite or Postgres); the fuzz corpus is recorded on SQLite files.
    command = [sys.executable, str(REPO / "tests/dbos/record.py"), f"sqlite:///{system_db}",
               f"sqlite:///{folder / 'app.sqlite3'}", str(folder / "effects.log")]
    subprocess.run(command, check=True, capture_output=True, timeout=300, cwd=folder)
    return system_db


def recorded_dbos_pickles(system_db: Path) -> list[tuple[str, int, bytes]]:
    """(workflow id, function id, pickle) of every step output DBOS pickled in ``system_db``."""
    with sqlite3.connect(system_db) as connection:
        rows = connection.execute(
            "SELECT workflow_uuid, function_id, output FROM operation_outputs "
            "WHERE output IS NOT NULL AND (serialization IS NULL OR serialization = 'py_pickle')"
        ).fetchall()
    return [(workflow_id, function_id, base64.b64decode(text)) for workflow_id, function_id, text in rows]


class DBOSFuzzTarget:
    """A copy of a recorded system database whose rows get mutated pickles, one run at a time."""

    def __init__(self, system_db: Path, folder: Path) -> None:
        self.db = folder / "fuzz-system.sqlite3"
        shutil.copy(system_db, self.db)
        self.out = folder / "dbos-histories"

    def decode(self, raw: bytes) -> str:
        from replaytest.plugins.dbos.values import PickleRefused, decode_pickle

        try:
            json.dumps(decode_pickle(base64.b64encode(raw).decode("ascii")), allow_nan=False)
        except PickleRefused:
            return "dbos-decode-refused"
        return "dbos-decoded"

    def import_run(self, workflow_id: str, function_id: int, raw: bytes) -> str:
        from replaytest.plugins.dbos.importer import import_runs

        with sqlite3.connect(self.db) as connection:
            original = connection.execute(
                "SELECT output FROM operation_outputs WHERE workflow_uuid = ? AND function_id = ?", (workflow_id, function_id)
            ).fetchone()[0]
            connection.execute(
                "UPDATE operation_outputs SET output = ? WHERE workflow_uuid = ? AND function_id = ?",
                (base64.b64encode(raw).decode("ascii"), workflow_id, function_id),
            )
        try:
            written, notes = import_runs(f"sqlite:///{self.db}", self.out, workflow_id=workflow_id)
        finally:
            with sqlite3.connect(self.db) as connection:
                connection.execute(
                    "UPDATE operation_outputs SET output = ? WHERE workflow_uuid = ? AND function_id = ?",
                    (original, workflow_id, function_id),
                )
        if written + len(notes.refused) != 1:
            raise AssertionError(f"{workflow_id}: {written} written and {len(notes.refused)} refused")
        return "dbos-import-written" if written else "dbos-import-refused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="neutral history runs")
    parser.add_argument("--temporal-runs", type=int, default=150)
    parser.add_argument("--langgraph-runs", type=int, default=0, help="mutated LangGraph msgpack checkpoint runs")
    parser.add_argument("--dbos-runs", type=int, default=0, help="mutated DBOS pickles, each decoded and imported")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    signal.signal(signal.SIGALRM, _alarm)
    folder = Path(tempfile.mkdtemp(prefix="fuzz-histories-"))
    plugins = load_plugins()
    replayers = [plugin.replayer for plugin in plugins if plugin.replayer is not None]
    neutral_seeds = sorted((REPO / "fixtures" / "histories").glob("*.json"))
    workflows = load_workflows(["fixtures.journal_app.agent:support_agent"], REPO)
    outcomes: Counter[str] = Counter()
    uncaught: list[str] = []
    hangs: list[str] = []
    started = time.perf_counter()

    def attempt(label: str, path: Path, work) -> None:  # type: ignore[no-untyped-def]
        signal.setitimer(signal.ITIMER_REAL, options.timeout)
        try:
            outcomes[work()] += 1
        except Hang:
            hangs.append(f"{label}: {path}")
        except (HistoryError, DiffError):
            outcomes["rejected"] += 1
        except Exception:
            uncaught.append(f"{label}: {path}\n{traceback.format_exc(limit=4)}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    for run in range(options.runs):
        path = folder / f"n{run}.json"
        path.write_bytes(mutate_bytes(rng, rng.choice(neutral_seeds).read_bytes()))
        attempt("load", path, lambda: (load_history(path), "loaded")[1])
        attempt("replay", path, lambda: "replay-" + replay_file(path, replayers, workflows, ReplayOptions()).status)
        attempt("diff", path, lambda: "diff-" + ("same" if diff_files(path, neutral_seeds[0]).identical else "differs"))
        attempt("redact", path, lambda: (redact_history(load_history(path), Redactor.build()), "redacted")[1])

    if options.temporal_runs:
        sys.path.insert(0, str(REPO / "tests" / "temporal"))
        import temporal_wf_hello
        import temporal_wf_sayhello

        temporal_workflows = load_workflows((), None, [temporal_wf_hello.Hello, temporal_wf_sayhello.SayHelloWorkflow])
        seeds = [REPO / "tests/temporal/histories" / name for name in
                 ("hello_timer_history.json", "test_replayer_complete_history.json")]
        temporal_redactor = next(p for p in plugins if p.history_redactor is not None)
        for run in range(options.temporal_runs):
            document = mutate_temporal(rng, json.loads(rng.choice(seeds).read_text(encoding="utf-8")))
            path = folder / f"t{run}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            attempt("temporal-replay", path,
                    lambda: "temporal-" + replay_file(path, replayers, temporal_workflows, ReplayOptions()).status)
            attempt("temporal-redact", path,
                    lambda: (temporal_redactor.redact_history_file(path, path.with_suffix(".red.json"), Redactor.build()),
                             "temporal-redacted")[1])

    if options.langgraph_runs:

        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        from replaytest.plugins.langgraph.importer import current_code

        seed_db = folder / "langgraph-seed.sqlite"
        code = current_code([record_langgraph_seed(seed_db)])
        thread_ids = ["completed", "parked", "failed"]
        lg_started = time.perf_counter()
        for run in range(options.langgraph_runs):
            db = folder / f"langgraph-{run}.sqlite"
            target = mutate_langgraph_thread(rng, seed_db, db, thread_ids)
            failures = len(uncaught) + len(hangs)
            kept = folder / f"langgraph-run-{run}.sqlite"
            attempt("langgraph-import", kept, lambda: import_langgraph(db, folder / "langgraph-out", code, thread_ids, target))
            if len(uncaught) + len(hangs) > failures:  # keep the database that failed, for reproduction
                shutil.copyfile(db, kept)
            for leftover in folder.glob(f"langgraph-{run}.sqlite*"):
                leftover.unlink()
        print(f"langgraph: {options.langgraph_runs} runs in {time.perf_counter() - lg_started:.0f} s; peak RSS "
              f"{rss_before / 1024:.0f} MB before, {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB after")
    if options.dbos_runs:
        system_db = record_dbos_shop(folder / "dbos-shop")
        seeds_dbos = recorded_dbos_pickles(system_db)
        target = DBOSFuzzTarget(system_db, folder)
        for run in range(options.dbos_runs):
            workflow_id, function_id, seed = rng.choice(seeds_dbos)
            raw = mutate_dbos_pickle(rng, seed)
            path = folder / f"d{run}.pickle"
            path.write_bytes(raw)
            attempt("dbos-decode", path, lambda: target.decode(raw))
            attempt("dbos-import", path, lambda: target.import_run(workflow_id, function_id, raw))

    elapsed = time.perf_counter() - started
    total = sum(outcomes.values()) + len(uncaught) + len(hangs)
    print(f"runs: {total} ({options.runs} neutral files x 4 faces, {options.temporal_runs} Temporal files x 2, "
          f"{options.langgraph_runs} LangGraph databases, {options.dbos_runs} DBOS pickles x 2) in {elapsed:.0f} s")
    print(f"peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"uncaught exceptions: {len(uncaught)}; hangs (> {options.timeout:.0f} s): {len(hangs)}")
    print("outcomes: " + ", ".join(f"{key} {value}" for key, value in sorted(outcomes.items())))
    for item in uncaught[:10] + hangs[:10]:
        print("---\n" + item)
    print(f"inputs kept in {folder}")
    if uncaught or hangs:
        sys.exit(1)


if __name__ == "__main__":
    main()
