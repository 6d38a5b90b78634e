"""Malformed and hostile checkpoints in a real SqliteSaver database: each refuses its own thread with one
line naming the thread and the checkpoint (exit 2), and the other threads are still imported.

The database is recorded for real (the order agent, one run per thread); the bad threads then get
bytes written by hand into the saver's own ``checkpoints``/``writes`` tables, as a corrupt copy, a
truncated transfer or a hostile file would hold them. Every expected message below is written by hand
from the bytes the test stores (offsets counted from the first byte of the stored value)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import ormsgpack
import pytest
from conftest import AGENT_SPEC, import_histories, record_order_runs, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import agent

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver
from replaytest.plugins.langgraph.values import BudgetExceeded, DecodeBudget, MalformedValue, decode_typed

HERE = Path(__file__).resolve().parent
# Stored bytes, each written over the first checkpoint of a thread of its own.
NESTED_TOO_DEEP = b"\x91" * 100_000 + b"\xc0"  # 100,000 one-item arrays around a nil
HUGE_ARRAY = b"\xdd\xff\xff\xff\xff\xc0"  # array32 declaring 4,294,967,295 items, one byte of them present
HUGE_STRING = b"\x81\xa1v\xdb\x7f\xff\xff\xff"  # {"v": <str32 of 2,147,483,647 bytes, none present>}
TRUNCATED_MAP = b"\x83\xa1v\x04\xaechannel_values"  # a map of 3 entries cut after its second key
# A pydantic-v2 extension value (type 2) whose payload is ["Order"], not [module, name, value]; at byte 30.
BAD_EXTENSION = ormsgpack.packb({"v": 4, "channel_values": {"__start__": ormsgpack.Ext(2, b"\x91\xa5Order")}})
NOT_A_MAP = b"\x2a"  # the integer 42
TRAILING = b"\x80\xc0"  # an empty map, then one more byte
TOO_MANY_VALUES = b"\xdd\x00\x0f\x42\x41" + b"\xc0" * 1_000_001  # 1,000,001 nils: one value over max_nodes


@dataclass(frozen=True)
class Hostile:
    thread_id: str
    stored: bytes
    message: str  # what follows "thread '<id>' checkpoint <id>: " on the refusal line


HOSTILE = [
    Hostile("deep", NESTED_TOO_DEEP,
            "msgpack value nests deeper than the decode budget of 200 levels (max_depth; at byte 200)"),
    Hostile("huge-array", HUGE_ARRAY,
            "malformed msgpack: the array at byte 0 declares 4,294,967,295 item(s), more than the 1 byte(s) left "
            "can hold (truncated, or a corrupt length)"),
    Hostile("huge-string", HUGE_STRING,
            "malformed msgpack: a string at byte 3 needs 2,147,483,647 byte(s), the value has 0 left "
            "(truncated, or a corrupt length)"),
    Hostile("truncated", TRUNCATED_MAP,
            "malformed msgpack: a value at byte 19 needs 1 byte(s), the value has 0 left (truncated, or a corrupt length)"),
    Hostile("bad-ext", BAD_EXTENSION,
            "malformed msgpack: the extension value (type 2) at byte 30 is not [module, name, value, ...] as "
            "LangGraph writes it"),
    Hostile("not-a-map", NOT_A_MAP, "the checkpoint decodes to int, not a map"),
    Hostile("trailing", TRAILING, "malformed msgpack: 1 byte(s) left over after the value ended at byte 1"),
    Hostile("many", TOO_MANY_VALUES,
            "msgpack value holds more than the decode budget of 1,000,000 values (max_nodes; at byte 1000005)"),
]


def record(db: Path, thread_ids: list[str]) -> None:
    """The two good threads of ``conftest.record_order_runs``, and one real parked run per other id."""
    record_order_runs(db)
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        for thread_id in thread_ids:
            assert "__interrupt__" in graph.invoke({"item": "chair"}, thread(thread_id))
    finally:
        conn.close()


def first_checkpoint(db: Path, thread_id: str) -> str:
    with sqlite3.connect(db) as conn:
        [(checkpoint_id,)] = conn.execute(
            "SELECT MIN(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread_id,)
        ).fetchall()
    return checkpoint_id


def store_checkpoint(db: Path, thread_id: str, checkpoint_id: str, stored: bytes, column: str = "checkpoint") -> None:
    with sqlite3.connect(db) as conn:
        changed = conn.execute(
            f"UPDATE checkpoints SET {column} = ? WHERE thread_id = ? AND checkpoint_id = ?", (stored, thread_id, checkpoint_id)
        ).rowcount
    assert changed == 1


def refusal_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error: ")]


def assert_good_threads_imported(out: Path) -> None:
    approved, waiting = load_history(out / "order_agent-approved.json"), load_history(out / "order_agent-waiting.json")
    assert approved.status == "completed" and approved.result["receipt"]["sent"] is True
    assert waiting.status == "parked"
    assert [(e.name, e.result) for e in waiting.events if e.kind == "step"] == [
        ("fetch_price", 250.0), ("draft", "intro about the desk"), ("draft", "body about the desk"),
    ]


def test_each_hostile_checkpoint_refuses_its_own_thread_in_one_line_and_the_others_are_imported(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    record(db, [case.thread_id for case in HOSTILE])
    expected = []
    for case in HOSTILE:
        checkpoint_id = first_checkpoint(db, case.thread_id)
        store_checkpoint(db, case.thread_id, checkpoint_id, case.stored)
        expected.append(f"error: {db}: thread {case.thread_id!r} checkpoint {checkpoint_id}: {case.message}")
    code, output = import_histories(db, tmp_path / "out", "--workflows", AGENT_SPEC)
    assert code == 2, output
    assert sorted(refusal_lines(output)) == sorted(expected)
    assert "Traceback" not in output
    assert output.splitlines()[-1] == f"imported 2 histories into {tmp_path / 'out'}; {len(HOSTILE)} thread(s) refused"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["order_agent-approved.json", "order_agent-waiting.json"]
    assert_good_threads_imported(tmp_path / "out")


def test_a_truncated_real_checkpoint_and_a_corrupt_task_result_are_refused_too(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    record(db, ["cut", "result"])
    cut = first_checkpoint(db, "cut")
    with sqlite3.connect(db) as conn:
        [(real,)] = conn.execute("SELECT checkpoint FROM checkpoints WHERE checkpoint_id = ?", (cut,)).fetchall()
        # The fetch_price result of thread "result": an extension value whose payload claims more bytes than it has.
        [(write_checkpoint, task_id)] = conn.execute(
            "SELECT checkpoint_id, task_id FROM writes WHERE thread_id = 'result' AND channel = '__return__' AND idx = 0 "
            "ORDER BY rowid LIMIT 1"
        ).fetchall()
        conn.execute(
            "UPDATE writes SET type = 'msgpack', value = ? WHERE thread_id = 'result' AND task_id = ? AND channel = '__return__'",
            (b"\xc7\x08\x00\x93\xa1a",  task_id),
        )
    assert len(real) > 100  # a real checkpoint, cut in half below
    store_checkpoint(db, "cut", cut, real[: len(real) // 2])
    code, output = import_histories(db, tmp_path / "out", "--workflows", AGENT_SPEC)
    assert code == 2, output
    [cut_line, result_line] = sorted(refusal_lines(output))
    assert cut_line.startswith(f"error: {db}: thread 'cut' checkpoint {cut}: malformed msgpack: ")
    assert cut_line.endswith("(truncated, or a corrupt length)")
    assert result_line == (
        f"error: {db}: thread 'result' checkpoint {write_checkpoint} write __return__ of task {task_id}: "
        "malformed msgpack: an extension payload at byte 0 needs 8 byte(s), the value has 3 left "
        "(truncated, or a corrupt length)"
    )
    assert_good_threads_imported(tmp_path / "out")


def test_broken_metadata_json_is_refused_without_a_recursion_error(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    record(db, ["deep-json", "bad-json"])
    deep, bad = first_checkpoint(db, "deep-json"), first_checkpoint(db, "bad-json")
    store_checkpoint(db, "deep-json", deep, b"[" * 200_000, column="metadata")
    store_checkpoint(db, "bad-json", bad, b'{"source": "input", "step": ', column="metadata")
    code, output = import_histories(db, tmp_path / "out", "--workflows", AGENT_SPEC)
    assert code == 2, output
    assert sorted(refusal_lines(output)) == [
        f"error: {db}: thread 'bad-json' checkpoint {bad} metadata: malformed JSON: "
        "Expecting value: line 1 column 29 (char 28)",
        f"error: {db}: thread 'deep-json' checkpoint {deep} metadata: JSON nests deeper than the decode budget "
        "of 200 levels (max_depth)",
    ]
    assert_good_threads_imported(tmp_path / "out")


def test_a_stored_value_over_the_byte_budget_is_measured_by_sqlite_and_never_read(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    record(db, ["big"])
    big = first_checkpoint(db, "big")
    size = 32 * 1024 * 1024 + 1
    with sqlite3.connect(db) as conn:  # zeroblob: SQLite writes it without Python holding the bytes
        conn.execute("UPDATE checkpoints SET checkpoint = zeroblob(?) WHERE checkpoint_id = ?", (size, big))
    code, output = import_histories(db, tmp_path / "out", "--workflows", AGENT_SPEC)
    assert code == 2, output
    assert refusal_lines(output) == [
        f"error: {db}: thread 'big' checkpoint {big}: stored checkpoint of 33,554,433 bytes is over the decode "
        "budget of 33,554,432 bytes (max_stored_bytes); not read"
    ]
    assert_good_threads_imported(tmp_path / "out")


CHILD = textwrap.dedent(
    """
    import resource, sys
    from replaytest.cli import cli
    import lg_apps.agent  # everything the import needs is loaded before the limit is measured
    import langgraph.checkpoint.sqlite
    with open("/proc/self/status") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = size_kb * 1024 + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cli.main(["import", "langgraph", "--checkpointer", "sqlite:///" + sys.argv[2], "--out", sys.argv[3],
              "--workflows", "lg_apps.agent:order_agent"], prog_name="replaytest")
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limit read from /proc")
def test_a_checkpoint_that_would_expand_to_gigabytes_is_refused_within_a_memory_limit(tmp_path: Path) -> None:
    # 20 million empty maps: 20 MB stored (under max_stored_bytes), over a gigabyte as Python dicts if decoded.
    bomb = b"\xdd" + (20_000_000).to_bytes(4, "big") + b"\x80" * 20_000_000
    db = tmp_path / "checkpoints.sqlite"
    record(db, ["bomb"])
    checkpoint_id = first_checkpoint(db, "bomb")
    store_checkpoint(db, "bomb", checkpoint_id, bomb)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    headroom = 400 * 1024 * 1024  # the import's own working memory, with the stored 20 MB read once
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(headroom), str(db), str(tmp_path / "out")],
        capture_output=True, text=True, cwd=HERE, env=env, timeout=600,
    )
    assert child.returncode == 2, child.stderr
    assert refusal_lines(child.stderr) == [
        f"error: {db}: thread 'bomb' checkpoint {checkpoint_id}: msgpack value holds more than the decode budget "
        "of 1,000,000 values (max_nodes; at byte 1000005)"
    ]
    assert "MemoryError" not in child.stderr and "Traceback" not in child.stderr
    assert child.stdout.strip() == f"imported 2 histories into {tmp_path / 'out'}; 1 thread(s) refused"
    assert_good_threads_imported(tmp_path / "out")


def test_the_decoder_counts_its_work_against_the_budget_it_is_given() -> None:
    # Counted work, not time: a budget one value short refuses, the exact budget decodes.
    value = {"items": [1, 2, 3], "name": "lamp"}  # map, 2 keys, list, 3 ints, 1 string value: 8 values
    stored = ormsgpack.packb(value)
    assert decode_typed("msgpack", stored, DecodeBudget(max_nodes=8)) == value
    with pytest.raises(BudgetExceeded, match=r"more than the decode budget of 7 values \(max_nodes"):
        decode_typed("msgpack", stored, DecodeBudget(max_nodes=7))
    assert decode_typed("msgpack", stored, DecodeBudget(max_depth=2)) == value
    with pytest.raises(BudgetExceeded, match=r"deeper than the decode budget of 1 levels \(max_depth; at byte 7\)"):
        decode_typed("msgpack", stored, DecodeBudget(max_depth=1))
    # Text produced: "items" + "name" + "lamp" = 13 bytes; "lamp" starts at byte 16 of the 21 stored.
    assert decode_typed("msgpack", stored, DecodeBudget(max_produced_bytes=13)) == value
    with pytest.raises(BudgetExceeded, match=r"of 12 bytes of text and binary \(max_produced_bytes; at byte 16\)"):
        decode_typed("msgpack", stored, DecodeBudget(max_produced_bytes=12))
    assert decode_typed("msgpack", stored, DecodeBudget(max_stored_bytes=21)) == value
    with pytest.raises(BudgetExceeded, match=r"stored value of 21 bytes is over the decode budget of 20 bytes \(max_stored"):
        decode_typed("msgpack", stored, DecodeBudget(max_stored_bytes=20))
    with pytest.raises(MalformedValue, match=r"byte 0xc1 at byte 0 starts no msgpack value"):
        decode_typed("msgpack", b"\xc1")
    with pytest.raises(MalformedValue, match=r"the string at byte 0 is not UTF-8"):
        decode_typed("msgpack", b"\xa2\xff\xfe")
    assert json.dumps(decode_typed("msgpack", b"\xd4\x63\x00")) == '{"$type": "?", "$ext": "ext-99", "$value": null}'


class _TruncatingSerializer(JsonPlusSerializer):
    """LangGraph's own serializer, except that a value holding ``MARK`` is stored cut in half: what a
    saver object returns from a damaged store."""

    MARK = "damaged-in-transit"

    def dumps_typed(self, obj: object) -> tuple[str, bytes]:
        type_name, data = super().dumps_typed(obj)
        return (type_name, data[: len(data) // 2]) if self.MARK.encode() in data else (type_name, data)


def test_a_saver_object_returning_a_damaged_value_refuses_that_thread_and_imports_the_others(tmp_path: Path) -> None:
    saver = InMemorySaver(serde=_TruncatingSerializer())
    graph = agent.order_agent.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke({"item": "desk"}, thread("waiting"))
    assert "__interrupt__" in graph.invoke({"item": _TruncatingSerializer.MARK}, thread("damaged"))
    written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
    assert [item.thread_id for _, item in written] == ["waiting"]
    assert [(e.name, e.result) for e in load_history(written[0][0]).events if e.kind == "step"] == [
        ("fetch_price", 250.0), ("draft", "intro about the desk"), ("draft", "body about the desk"),
    ]
    [reason] = refused
    assert reason.startswith("thread 'damaged': a value read through the saver: malformed msgpack: ")
    assert reason.endswith("(truncated, or a corrupt length)") and "\n" not in reason
