"""``replaytest import langgraph`` writes one file per thread even when thread ids differ only in
characters unsafe in file names, and never replaces a file that records another thread."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import AGENT_SPEC, import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import agent, tasks

# "order_agent-" + the thread id made safe, then the first 12 hex digits of SHA-256("order_agent\0<id>")
# where the id needed changing (worked out once with hashlib, written here by hand).
NAMES = {
    "order/1": "order_agent-order_1-613e82692658.json",
    "order:1": "order_agent-order_1-bbe0ee742ec3.json",
    "order_1": "order_agent-order_1.json",
}
ITEMS = {"order/1": "lamp", "order:1": "desk", "order_1": "chair"}


def _record(db: Path, tmp_path: Path) -> None:
    tasks.EFFECTS = tmp_path / "effects.log"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        for thread_id, item in ITEMS.items():
            assert "__interrupt__" in graph.invoke({"item": item}, thread(thread_id))  # parked for approval
    finally:
        conn.close()
        tasks.EFFECTS = None


def test_three_thread_ids_with_one_safe_spelling_get_three_files(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    _record(db, tmp_path)
    out = tmp_path / "histories"
    code, output = import_histories(db, out, "--workflows", AGENT_SPEC)
    assert code == 0, output
    assert f"imported 3 histories into {out}" in output
    assert sorted(p.name for p in out.glob("*.json")) == sorted(NAMES.values())
    for thread_id, name in NAMES.items():
        history = json.loads((out / name).read_text())
        assert (history["workflow"]["id"], history["input"]["item"]) == (thread_id, ITEMS[thread_id])

    # A re-import replaces each thread's own file; a file recording another thread is never replaced.
    taken = out / NAMES["order_1"]
    taken.write_text((out / NAMES["order/1"]).read_text())
    code, output = import_histories(db, out, "--workflows", AGENT_SPEC)
    assert code == 2
    assert (
        f"error: {taken}: thread 'order_1' (order_agent) was not written: the file holds thread 'order/1' "
        "(order_agent) from an earlier import; move that file away or import into another folder (--out)"
    ) in output
    assert f"imported 2 histories into {out}; 1 thread(s) refused" in output
    assert json.loads(taken.read_text())["workflow"]["id"] == "order/1"
