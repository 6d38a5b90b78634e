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

Restate (``--restate-runs``): hostile answers of a stand-in admin API on 127.0.0.1
(``tests/restate/hostile_admin.py``) to ``import restate``'s two queries: the valid rows of three invocations
mutated byte by byte or truncated, nested up to 200,000 deep, under a huge, absent, smaller, larger or
nonsense Content-Length, trickled, never ending (plain or chunked), redirected (to another origin, the same
one, a loop, no URL), random bytes, error statuses, broken chunks, and valid-looking rows with values of the
wrong type (``mutate_json``). Azure (``--azure-runs``): hostile ``--http-json`` files: two valid statuses
mutated as JSON (``mutate_json``) or as bytes, nested deep, sparse giants, bad UTF-8 (UTF-16, UTF-32, lone
bytes), random bytes, other shapes. Both import with a 1 MiB size limit (and Restate a 0.5 s deadline) so
the bounds are what is exercised; each outcome must be an import (runs refused one by one, if so) or a
``ClickException`` of one line naming the URL or file with nothing written (``PartialImport`` otherwise, as
for a redirect to another server followed or a valid input not imported whole).

An *uncaught exception* is anything but a ``HistoryError``/``DiffError``, a replay result or an import
refusal (for DBOS: a ``PickleRefused`` or a refused run; for Restate and Azure: a ``ClickException``); a
*hang* is a run that does not finish within ``--timeout`` seconds (an importer run: ``--import-timeout``;
SIGALRM). Peak memory is the process's maximum resident set size (``ru_maxrss``), printed at the end (and
before and after the LangGraph, Restate and Azure runs).

Usage: ``python benchmarks/fuzz_histories.py [--runs 2000] [--temporal-runs 150] [--langgraph-runs 0]
[--dbos-runs 0] [--restate-runs 0] [--azure-runs 0] [--seed 1] [--timeout 120] [--import-timeout 10]``
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


# --- Restate admin API answers and Azure --http-json files ---------------------------------------------

# The importers run with a small size limit and a short deadline, so that a never-ending answer or a trickle
# costs a fraction of a second: the bounds are what is fuzzed, not their defaults (512 MiB, 60 s).
IMPORT_LIMIT = 1024 * 1024
IMPORT_DEADLINE = 0.5
# Values of the wrong type (or the right type and a hostile value) for a field of a row or a status.
WRONG_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, 10**30, "", "x", "\u202e\x1b[31m", "zz", "0" * 7, "Command: Run", "Notification: Run",
    "ExecutionStarted", "TaskCompleted", "ExecutionFailed", "completed", "suspended", "Failed", [], {}, [1, "a"],
    {"a": {"b": []}}, json.loads("[" * 300 + "]" * 300), "y" * 100_000,
]


def _json_nodes(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value in ``value`` (the root's is ``()``)."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_json_nodes(item, (*at, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_json_nodes(item, (*at, index)))
    return found


def mutate_json(rng: random.Random, document: Any) -> Any:
    """One to three changes at random places of a JSON value: a value replaced by one of ``WRONG_VALUES``, a key
    dropped, a list element duplicated or dropped, hex text damaged."""
    document = copy.deepcopy(document)
    for _ in range(rng.choice([1, 1, 2, 3])):
        nodes = [path for path in _json_nodes(document) if path]
        if not nodes:
            return rng.choice(WRONG_VALUES)
        path = rng.choice(nodes)
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = rng.choice(["replace", "replace", "replace", "drop", "duplicate", "hex"])
        if action == "replace":
            parent[last] = copy.deepcopy(rng.choice(WRONG_VALUES))
        elif action == "drop":
            del parent[last]
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(last, copy.deepcopy(parent[last]))
        elif action == "hex" and isinstance(parent[last], str) and parent[last]:
            text = parent[last]
            at = rng.randrange(len(text))
            parent[last] = text[:at] + rng.choice(["", "0", "f", "g", "00", "ffffffff", "80" * 12]) + text[at + 1 :]
    return document


def hostile_answer(rng: random.Random, elsewhere: str) -> tuple[str, Any]:
    """One hostile answer of the Restate admin API: (its kind, the ``hostile_admin`` answer function).
    ``elsewhere`` is another server (another origin) a redirect may point to."""
    import hostile_admin as ha

    def valid_body(sql: str) -> bytes:
        return json.dumps({"rows": ha.valid_rows(sql)}).encode("utf-8")

    def body_of(change: Any) -> Any:
        return lambda sql, out: out.write(ha.response(200, change(valid_body(sql))))

    kind = rng.choice(["valid", "bytes", "bytes", "truncated", "deep", "content-length", "content-length", "trickle",
                       "never-ending", "redirect", "redirect", "random", "rows", "rows", "rows", "rows", "status", "chunked"])
    if kind == "valid":
        return kind, ha.valid_answer
    if kind == "bytes":
        return kind, body_of(lambda body: mutate_bytes(rng, body))
    if kind == "truncated":
        cut = rng.random()
        length = rng.choice(["announced", "absent", "honest"])

        def answer(sql: str, out: Any) -> None:
            body = valid_body(sql)
            short = body[: int(len(body) * cut)]
            headers = {"content-length": str(len(body))} if length == "announced" else None
            out.write(ha.response(200, short, headers, length=length != "absent"))

        return f"truncated-{length}", answer
    if kind == "deep":
        depth = rng.choice([401, 1_000, 20_000, 200_000])
        opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
        return kind, ha.fixed(200, b'{"rows": ' + opener * depth + b"1" + closer * depth + b"}")
    if kind == "content-length":
        lie = rng.choice(["huge", "smaller", "larger", "nonsense", "negative", "two"])

        def answer(sql: str, out: Any) -> None:
            body = valid_body(sql)
            value = {"huge": str(3 * 1024**3), "smaller": str(max(0, len(body) - rng.randint(1, 50))),
                     "larger": str(len(body) + rng.randint(1, 5000)), "nonsense": "12abc", "negative": "-5",
                     "two": f"{len(body)}, {len(body)}"}[lie]
            out.write(ha.response(200, body, {"content-length": value}))

        return f"content-length-{lie}", answer
    if kind == "trickle":
        every = rng.choice([0.02, 0.05, 0.2])
        return kind, ha.trickle(valid_body("sys_invocation"), every, head_at_once=rng.random() < 0.5)
    if kind == "never-ending":
        if rng.random() < 0.5:
            return kind, ha.never_ending()

        def chunked_forever(sql: str, out: Any) -> None:
            out.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"ro\r\n")
            while True:
                out.write(b"4000\r\n" + b"[" * 0x4000 + b"\r\n")

        return "never-ending-chunked", chunked_forever
    if kind == "redirect":
        status = rng.choice([301, 302, 303, 307, 308])
        location = rng.choice([f"{elsewhere}/query", elsewhere.replace("127.0.0.1", "localhost") + "/query", "/query",
                               "/other", "//127.0.0.2/query", "ftp://x/", "http://[::1", "", "https://127.0.0.1/query",
                               "http://127.0.0.1:0/query", "\r\nx: y"])
        return f"redirect-{status}", ha.redirect(status, location)
    if kind == "random":
        data = rng.randbytes(rng.choice([0, 1, 40, 4000]))
        prefix = rng.choice([b"", b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n"])
        return "random-bytes", lambda sql, out: out.write(prefix + data)
    if kind == "rows":
        which = rng.choice(["sys_invocation", "sys_journal", "both"])

        def answer(sql: str, out: Any) -> None:
            document: Any = {"rows": ha.valid_rows(sql)}
            if which == "both" or which in sql:
                document = mutate_json(rng, document)
            out.write(ha.response(200, json.dumps(document).encode("utf-8")))

        return f"rows-{which}", answer
    if kind == "status":
        status = rng.choice([204, 400, 404, 500, 503, 599, 100])
        body = rng.choice([b"", b"query failed", rng.randbytes(2000), b"\x1b[2J" * 100])
        return f"status-{status}", ha.fixed(status, body)
    # chunked encoding gone wrong: a size that is no number, a chunk longer than said, no last chunk
    broken = rng.choice([b"zz\r\n", b"ffffffffffffffff\r\n", b"5\r\n{\"rows\": []}\r\n0\r\n\r\n", b"c\r\n{\"rows\": []}\r\n"])
    return "chunked", lambda sql, out: out.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + broken)


class PartialImport(Exception):
    """An import that failed as a whole yet left files behind, or followed a redirect to another server."""


class RestateFuzzTarget:
    """The stand-in admin API (``tests/restate/hostile_admin.py``) and another server on another port."""

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO / "tests" / "restate"))
        import hostile_admin as ha

        self.admin = ha.HostileAdmin(ha.valid_answer).start()
        self.elsewhere = ha.HostileAdmin(ha.valid_answer).start()
        self.kinds: Counter[str] = Counter()

    def import_once(self, rng: random.Random, out: Path) -> str:
        """``import restate`` of one hostile answer: ``restate-imported`` (some or all invocations refused, if
        so said) or ``restate-error`` (a ``ClickException``: exit 2, one line, nothing written)."""
        import click

        from replaytest.plugins.restate.importer import import_invocations

        kind, answer = hostile_answer(rng, self.elsewhere.url)
        self.kinds[kind] += 1
        self.admin.answer = answer
        asked_elsewhere = len(self.elsewhere.requests)
        shutil.rmtree(out, ignore_errors=True)
        try:
            written, notes = import_invocations(self.admin.url, out, max_bytes=IMPORT_LIMIT, deadline_seconds=IMPORT_DEADLINE)
            outcome = "restate-imported" + ("-some-refused" if notes.refused else "")
            if kind == "valid" and (written, notes.refused) != (3, []):
                raise PartialImport(f"the valid answer gave {written} histories, refusals {notes.refused}")
        except click.ClickException as error:
            if out.exists():
                raise PartialImport(f"{kind}: {error.message!r} yet {out} was made") from None
            if "\n" in error.message or not error.message.startswith(self.admin.url):
                raise PartialImport(f"{kind}: the error is not one line naming the URL: {error.message!r}") from None
            outcome = "restate-error"
        if len(self.elsewhere.requests) != asked_elsewhere:
            raise PartialImport(f"{kind}: a redirect to another server was followed")
        return outcome

    def close(self) -> None:
        self.admin.stop()
        self.elsewhere.stop()


def _azure_event(kind: str, minute: int, **fields: Any) -> dict[str, Any]:
    return {"EventType": kind, "Timestamp": f"2026-03-01T09:{minute:02d}:00Z", **fields}


# What the durable HTTP API reports with showHistory=true&showHistoryOutput=true: a completed run with every
# event kind the import reads, and a failed one. As the extension writes them, history Inputs are JSON text and
# Results JSON values.
AZURE_STATUSES: list[dict[str, Any]] = [
    {"name": "order_approval", "instanceId": "order-1", "runtimeStatus": "Completed", "input": {"item": "lamp"},
     "output": "shipped", "createdTime": "2026-03-01T09:00:00Z", "lastUpdatedTime": "2026-03-01T09:09:00Z",
     "historyEvents": [
         _azure_event("ExecutionStarted", 0, FunctionName="order_approval", Input='{"item":"lamp"}'),
         _azure_event("TaskCompleted", 2, FunctionName="check_stock", Result=True, ScheduledTime="2026-03-01T09:01:00Z"),
         _azure_event("TimerFired", 3, FireAt="2026-03-01T09:03:00Z"),
         _azure_event("EventRaised", 4, Name="approval", Input='"approved"'),
         _azure_event("SubOrchestrationInstanceCompleted", 6, FunctionName="ship_order", Result="shipped",
                      ScheduledTime="2026-03-01T09:05:00Z"),
         _azure_event("TaskFailed", 8, FunctionName="notify", Reason="smtp down", Details="timeout",
                      FailureDetails={"ErrorType": "SmtpError", "ErrorMessage": "smtp down"}, ScheduledTime="2026-03-01T09:07:00Z"),
         _azure_event("ExecutionCompleted", 9, OrchestrationStatus="Completed", Result="shipped"),
     ]},
    {"name": "order_approval", "instanceId": "order-2", "runtimeStatus": "Failed", "input": {"item": "desk"},
     "output": None, "createdTime": "2026-03-01T09:00:00Z", "lastUpdatedTime": "2026-03-01T09:02:00Z",
     "historyEvents": [
         _azure_event("ExecutionStarted", 0, FunctionName="order_approval", Input='{"item":"desk"}'),
         _azure_event("TaskFailed", 1, FunctionName="check_stock", FailureDetails={"ErrorMessage": "no stock"},
                      ScheduledTime="2026-03-01T09:00:30Z"),
         _azure_event("ExecutionFailed", 2, FailureDetails={"ErrorType": "Exception", "ErrorMessage": "no stock"}),
     ]},
]


def hostile_status_file(rng: random.Random, path: Path) -> str:
    """Write a hostile ``--http-json`` file to ``path``; returns its kind."""
    path.unlink(missing_ok=True)
    kind = rng.choice(["valid", "json", "json", "json", "bytes", "bytes", "deep", "huge", "utf8", "random", "shape"])
    document: Any = copy.deepcopy(AZURE_STATUSES)
    if kind == "json":
        document = mutate_json(rng, document)
    if kind in ("valid", "json"):
        path.write_text(json.dumps(document), encoding="utf-8")
    elif kind == "bytes":
        path.write_bytes(mutate_bytes(rng, json.dumps(document).encode("utf-8")))
    elif kind == "deep":
        depth = rng.choice([401, 900, 5_000, 200_000])
        text = json.dumps(document)
        at = text.index('"input": ') + len('"input": ')
        path.write_text(text[:at] + "[" * depth + text[at:].replace(', "output"', "]" * depth + ', "output"', 1), encoding="utf-8")
    elif kind == "huge":
        with open(path, "wb") as handle:  # sparse: costs nothing unless it is read
            handle.truncate(rng.choice([IMPORT_LIMIT + 1, 64 * 1024**2, 3 * 1024**3]))
    elif kind == "utf8":
        encoded = json.dumps(document, ensure_ascii=False).encode("utf-8")
        at = rng.randrange(len(encoded))
        bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00"])
        path.write_bytes(rng.choice([encoded[:at] + bad + encoded[at:], json.dumps(document).encode("utf-16"),
                                     json.dumps(document).encode("utf-32"), b"\xef\xbb\xbf" + encoded]))
    elif kind == "random":
        path.write_bytes(rng.randbytes(rng.choice([0, 1, 100, 10_000])))
    else:  # a top level or a status of another shape
        path.write_text(json.dumps(rng.choice([document[0], 42, "order-1", [document[0], [document[1]]], {"statuses": document},
                                               [dict(document[0], historyEvents=document[0]["historyEvents"] * 200)]])),
                        encoding="utf-8")
    return kind


def import_status_file(path: Path, out: Path, kind: str = "") -> str:
    """``import azure-durable --http-json`` of one file: ``azure-imported`` (some instances refused, if so
    said) or ``azure-error`` (a ``ClickException`` naming the file, nothing written)."""
    import click

    from replaytest.plugins.azure_durable.importer import ImportNotes, http_runs, write_runs

    shutil.rmtree(out, ignore_errors=True)
    notes = ImportNotes()
    try:
        written = write_runs(http_runs(path, notes, IMPORT_LIMIT), out, notes, None, lambda line: None)
        if kind == "valid" and (written, notes.refused) != (len(AZURE_STATUSES), []):
            raise PartialImport(f"the valid file gave {written} histories, refusals {notes.refused}")
    except click.ClickException as error:
        if out.exists():
            raise PartialImport(f"{error.message!r} yet {out} was made") from None
        if "\n" in error.message or not error.message.startswith(str(path)):
            raise PartialImport(f"the error is not one line naming the file: {error.message!r}") from None
        return "azure-error"
    return "azure-imported" + ("-some-refused" if notes.refused else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="neutral history runs")
    parser.add_argument("--temporal-runs", type=int, default=150)
    parser.add_argument("--langgraph-runs", type=int, default=0, help="mutated LangGraph msgpack checkpoint runs")
    parser.add_argument("--dbos-runs", type=int, default=0, help="mutated DBOS pickles, each decoded and imported")
    parser.add_argument("--restate-runs", type=int, default=0, help="hostile admin API answers, each imported")
    parser.add_argument("--azure-runs", type=int, default=0, help="hostile --http-json files, each imported")
    parser.add_argument("--import-timeout", type=float, default=10.0, help="the hang bound of one Restate or Azure import")
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

    def attempt(label: str, path: Path, work, timeout: float | None = None) -> None:  # type: ignore[no-untyped-def]
        signal.setitimer(signal.ITIMER_REAL, timeout or options.timeout)
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

    if options.restate_runs:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        restate = RestateFuzzTarget()
        section_started = time.perf_counter()
        try:
            for run in range(options.restate_runs):
                # The answer is drawn inside the attempt from a generator of its own, so a case is reproducible
                # from the seed and its number alone.
                case_rng = random.Random(f"{options.seed}-restate-{run}")
                attempt("restate-import", Path(f"restate case {run}"),
                        lambda: restate.import_once(case_rng, folder / "restate-out"), options.import_timeout)
        finally:
            restate.close()
        print(f"restate: {options.restate_runs} answers in {time.perf_counter() - section_started:.0f} s; peak RSS "
              f"{rss_before / 1024:.0f} MiB before, {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB after; "
              "kinds: " + ", ".join(f"{key} {value}" for key, value in sorted(restate.kinds.items())))
    if options.azure_runs:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        azure_kinds: Counter[str] = Counter()
        section_started = time.perf_counter()
        for run in range(options.azure_runs):
            path = folder / f"a{run}.json"
            kind = hostile_status_file(random.Random(f"{options.seed}-azure-{run}"), path)
            azure_kinds[kind] += 1
            attempt("azure-import", path, lambda: import_status_file(path, folder / "azure-out", kind), options.import_timeout)
            if path.stat().st_size > IMPORT_LIMIT:
                path.unlink()  # a sparse giant: its size is all there is to it
        print(f"azure: {options.azure_runs} files in {time.perf_counter() - section_started:.0f} s; peak RSS "
              f"{rss_before / 1024:.0f} MiB before, {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB after; "
              "kinds: " + ", ".join(f"{key} {value}" for key, value in sorted(azure_kinds.items())))

    elapsed = time.perf_counter() - started
    total = sum(outcomes.values()) + len(uncaught) + len(hangs)
    print(f"runs: {total} ({options.runs} neutral files x 4 faces, {options.temporal_runs} Temporal files x 2, "
          f"{options.langgraph_runs} LangGraph databases, {options.dbos_runs} DBOS pickles x 2, "
          f"{options.restate_runs} Restate answers, {options.azure_runs} Azure files) in {elapsed:.0f} s")
    print(f"peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"uncaught exceptions: {len(uncaught)}; hangs (> {options.timeout:.0f} s, an import > {options.import_timeout:g} s): {len(hangs)}")
    print("outcomes: " + ", ".join(f"{key} {value}" for key, value in sorted(outcomes.items())))
    for item in uncaught[:10] + hangs[:10]:
        print("---\n" + item)
    print(f"inputs kept in {folder}")
    if uncaught or hangs:
        sys.exit(1)


if __name__ == "__main__":
    main()
