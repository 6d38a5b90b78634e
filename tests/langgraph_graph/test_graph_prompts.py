"""Prompt versions of graph-API (StateGraph) threads, recorded for real on a SqliteSaver: the prompt desk
(``graph_apps/prompt_desk.py``) runs ``triage`` under the triage prompt, then ``draft`` renders the reply
prompt and asks a reviewer to approve the reply (``interrupt``). Threads ``parked`` and ``done`` (resumed with a
plain config, completed) run ``graph`` started with ``with_prompts(config, graph)``; ``nested`` runs
``nested_graph`` (``draft`` inside a ``writer`` subgraph), started the same way; ``plain`` is started without it.
The histories are imported and replayed against a copy of the desk whose prompts are as recorded or edited; no
node body may run during replay."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from graph_apps import effects, prompt_desk, support
from graph_kit import import_histories, run_cli, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.plugins.langgraph.prompts import manifest_of, node_prompts, with_prompts
from replaytest.prompts import Prompt, uses_prompts
from replaytest.replay.engine import NO_MANIFEST_NOTE, NO_PROMPTS_NOTE

APPS = Path(__file__).parent / "graph_apps"
SPECS = ("--workflows", "{package}.prompt_desk:graph", "--workflows", "{package}.prompt_desk:nested_graph")
TRIAGE_TEXT = prompt_desk.TRIAGE.template
REPLY_TEXT = prompt_desk.REPLY.template
NEW_REPLY = "Write a short reply to the customer about: {ticket}"
NEW_TRIAGE = "Classify this ticket into billing, shipping or other: {ticket}"


def v(text: str) -> str:
    """A prompt's version as reports print it (content hashes cut to 12 hex digits)."""
    return Prompt("any", text).version[:19]


@dataclass(frozen=True)
class Desk:
    db: Path
    histories: Path


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    root = tmp_path_factory.mktemp("graph-prompts")
    db = root / "checkpoints.sqlite"
    effects.EFFECTS = root / "effects.log"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        graph = prompt_desk.graph.copy(update={"checkpointer": saver})
        nested = prompt_desk.nested_graph.copy(update={"checkpointer": saver})
        ticket = {"ticket": "my invoice was charged twice"}
        assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("parked"), graph))
        assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("done"), graph))
        assert graph.invoke(Command(resume="approve"), thread("done"))["sent"] == "yes"
        assert "__interrupt__" in graph.invoke(ticket, thread("plain"))
        assert "__interrupt__" in nested.invoke(ticket, with_prompts(thread("nested"), nested))
    finally:
        conn.close()
        effects.EFFECTS = None
    assert len((root / "effects.log").read_text().splitlines()) == 6  # the node bodies did run while recording
    code, output = import_histories(db, root / "histories", *(s.format(package="graph_apps") for s in SPECS), "--no-redact")
    assert code == 0, output
    yield Desk(db, root / "histories")


_copies = itertools.count()


def copy_desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str] | None = None) -> str:
    """A copy of the desk as a package of its own (fresh code), with ``edit`` ``(old, new)`` applied to its prompts."""
    package = f"prompt_desk_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "prompt_desk.py", target / "prompt_desk.py")
    texts = (APPS / "prompt_desk_texts.py").read_text()
    if edit is not None:
        assert texts.count(edit[0]) == 1
        texts = texts.replace(*edit)
    (target / "prompt_desk_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def replay(
    tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, str] | None = None, *options: str
) -> dict[str, dict[str, Any]]:
    package = copy_desk(tmp_path, monkeypatch, edit)
    log = tmp_path / "replay-effects.log"
    monkeypatch.setattr(effects, "EFFECTS", log)
    code, stdout, stderr = run_cli("replay", str(desk.histories), *(s.format(package=package) for s in SPECS),
                                   "--format", "json", *options)
    assert code in (0, 1), stderr
    assert not log.exists(), "replay ran a node body"
    sys.modules.pop(f"{package}.prompt_desk", None)
    return {result["workflow"]["id"]: result for result in json.loads(stdout)["results"]}


def document(desk: Desk, name: str) -> dict[str, Any]:
    return json.loads((desk.histories / name).read_text())


# --- recording and import ---------------------------------------------------------------------------


def test_with_prompts_walks_a_compiled_graphs_nodes_and_subgraphs() -> None:
    expected = {"triage": Prompt("t", TRIAGE_TEXT).version, "reply": Prompt("r", REPLY_TEXT).version}
    assert manifest_of(prompt_desk.graph) == expected
    assert manifest_of(prompt_desk.nested_graph) == expected  # ``reply`` is only in the writer subgraph
    assert manifest_of(prompt_desk.builder) == expected  # the StateGraph builder stands for its compiled graph
    assert node_prompts(prompt_desk.graph) == {
        "triage": {"triage": expected["triage"]}, "draft": {"reply": expected["reply"]}, "send": {},
    }
    assert node_prompts(prompt_desk.nested_graph)["writer"] == {"reply": expected["reply"]}
    config = with_prompts(thread("t"), prompt_desk.graph)
    assert config["configurable"] == {"thread_id": "t"}
    assert json.loads(config["metadata"]["replaytest_prompts"]) == expected


def test_forms_that_would_record_nothing_are_refused() -> None:
    with pytest.raises(TypeError, match=r"with_prompts\(config\) was given no graph.*with_prompts\(config, graph\)"):
        with_prompts(thread("t"))
    with pytest.raises(TypeError, match=r"cannot find the prompts of dict \{'x': 1\}: pass the graph the thread runs"):
        with_prompts(thread("t"), {"x": 1})
    # The support desk renders no Prompt at all: an empty manifest is refused, saying what prompts must be.
    with pytest.raises(ValueError, match=r"no Prompt in graph 'LangGraph' \(CompiledStateGraph\).*@uses_prompts"):
        with_prompts(thread("t"), support.graph)
    # Declared on the graph itself, a prompt its nodes' code cannot show is recorded.
    declared = uses_prompts(Prompt("faq", "Answer: {q}", version="v3"))(support.builder.compile())
    assert json.loads(with_prompts(thread("t"), declared)["metadata"]["replaytest_prompts"]) == {"faq": "v3"}


def test_the_graph_history_keeps_the_manifest_of_its_input_checkpoint(desk: Desk) -> None:
    expected = {"triage": Prompt("t", TRIAGE_TEXT).version, "reply": Prompt("r", REPLY_TEXT).version}
    for name in ("desk-parked.json", "desk-done.json", "nested_desk-nested.json"):
        doc = document(desk, name)
        assert doc["graph"]["api"] == "graph" and doc["prompt_manifest"] == expected, name
    # ``done`` was resumed with a plain config: its later checkpoints carry no manifest, the input one does.
    with sqlite3.connect(desk.db) as conn:
        rows = conn.execute("SELECT metadata FROM checkpoints WHERE thread_id = 'done' AND checkpoint_ns = '' "
                            "ORDER BY checkpoint_id").fetchall()
    carried = [(json.loads(m)["source"], "replaytest_prompts" in json.loads(m)) for (m,) in rows]
    assert carried[0] == ("input", True) and ("loop", False) in carried
    assert "prompt_manifest" not in document(desk, "desk-plain.json")
    assert document(desk, "desk-parked.json")["graph"]["next"] == ["draft"]
    assert document(desk, "nested_desk-nested.json")["graph"]["next"] == ["writer"]


# --- replay ------------------------------------------------------------------------------------------


def test_unchanged_prompts_pass_without_drift(tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, desk, monkeypatch)
    assert {k: (r["status"], r["run_status"]) for k, r in results.items()} == {
        "parked": ("passed", "parked"), "done": ("passed", "completed"), "nested": ("passed", "parked"),
        "plain": ("passed", "parked"),
    }, {k: r["divergence"] for k, r in results.items()}
    for thread_id in ("parked", "done", "nested"):
        assert results[thread_id]["warnings"] == [] and results[thread_id]["prompt_changes"] == []
        assert NO_PROMPTS_NOTE not in results[thread_id]["notes"]
    # Started without with_prompts: never a silent pass. Its nodes recorded the versions they used (the recorder
    # is on), but nothing tells the versions of the prompts it has not reached yet.
    assert results["plain"]["notes"].count(NO_MANIFEST_NOTE) == 1


def test_a_changed_prompt_of_the_node_a_parked_thread_resumes_at_fails_it_naming_node_and_versions(
    tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, desk, monkeypatch, (REPLY_TEXT, NEW_REPLY))
    parked = results["parked"]
    assert parked["status"] == "diverged"
    divergence = parked["divergence"]
    assert divergence["kind"] == "prompt-drift"
    assert divergence["message"] == (
        f"the parked thread resumes at node 'draft', which uses prompt reply: started under {v(REPLY_TEXT)}, "
        f"code now has {v(NEW_REPLY)} (fails by prompts-pending)"
    )
    pending = next(e for e in document(desk, "desk-parked.json")["events"] if e.get("pending"))
    assert divergence["position"] == pending["seq"] and pending["node"] == "draft"
    assert parked["prompt_changes"] == [{
        "prompt": "reply", "started": Prompt("r", REPLY_TEXT).version, "current": Prompt("r", NEW_REPLY).version,
        "called": False, "compared": "manifest",
    }]
    # The subgraph case: the parked node runs a subgraph whose node renders the prompt.
    nested = results["nested"]
    assert (nested["status"], nested["divergence"]["kind"]) == ("diverged", "prompt-drift")
    assert nested["divergence"]["message"] == (
        f"the parked thread resumes at node 'writer' (a subgraph: the prompts of all its nodes), which uses prompt "
        f"reply: started under {v(REPLY_TEXT)}, code now has {v(NEW_REPLY)} (fails by prompts-pending)"
    )
    # The completed thread only documents the change: its node already ran (the version it used was recorded).
    done = results["done"]
    assert done["status"] == "passed"
    [warning] = done["warnings"]
    assert warning["message"] == (
        f"node 'draft' used prompt reply {v(REPLY_TEXT)} (recorded when it ran); the code now has {v(NEW_REPLY)}; "
        "the completed thread keeps what that node wrote"
    )
    # Without a manifest the prompt of the node it resumes at cannot be compared, and the result says so.
    plain = results["plain"]
    assert (plain["status"], plain["warnings"], plain["prompt_changes"]) == ("passed", [], [])
    assert NO_MANIFEST_NOTE in plain["notes"]


def test_the_warn_policy_reports_the_same_drift_as_a_warning(tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, desk, monkeypatch, (REPLY_TEXT, NEW_REPLY), "--prompts-pending", "warn")
    for thread_id, node in (("parked", "node 'draft'"), ("nested", "node 'writer' (a subgraph: the prompts of all its nodes)")):
        result = results[thread_id]
        assert result["status"] == "passed" and result["divergence"] is None
        [warning] = result["warnings"]
        assert (warning["kind"], warning["severity"]) == ("prompt-drift", "warning")
        assert warning["message"] == (
            f"the parked thread resumes at {node}, which uses prompt reply: started under {v(REPLY_TEXT)}, "
            f"code now has {v(NEW_REPLY)}"
        )


def test_a_changed_prompt_of_a_node_a_parked_thread_already_ran_fails_it_and_warns_under_warn(
    tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``triage`` recorded the version it used when it ran: a parked thread that already used a prompt that changed
    fails by the default policy for in-flight threads (as on the journal), a warning under ``--prompts warn``."""
    expected = (
        f"node 'triage' used prompt triage {v(TRIAGE_TEXT)} (recorded when it ran); the code now has {v(NEW_TRIAGE)}; "
        "the parked thread keeps what that node wrote and resumes at node '{node}'"
    )
    results = replay(tmp_path, desk, monkeypatch, (TRIAGE_TEXT, NEW_TRIAGE))
    for thread_id, node in (("parked", "draft"), ("nested", "writer")):
        result = results[thread_id]
        assert (result["status"], result["divergence"]["kind"]) == ("diverged", "prompt-drift"), thread_id
        assert result["divergence"]["message"] == expected.format(node=node)
        triage = next(e for e in document(desk, f"{'desk' if thread_id == 'parked' else 'nested_desk'}-{thread_id}.json")["events"]
                      if e["name"] == "triage")
        assert result["divergence"]["position"] == triage["seq"]
    warned = replay(tmp_path, desk, monkeypatch, (TRIAGE_TEXT, NEW_TRIAGE), "--prompts", "warn")
    for thread_id, node in (("parked", "draft"), ("nested", "writer")):
        result = warned[thread_id]
        assert result["status"] == "passed"
        assert [w["message"] for w in result["warnings"]] == [expected.format(node=node)]


def test_check_reports_the_drift_too(tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    package = copy_desk(tmp_path, monkeypatch, (REPLY_TEXT, NEW_REPLY))
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(desk.histories, project / "histories")
    (project / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\n'
        f'workflows = ["{package}.prompt_desk:graph", "{package}.prompt_desk:nested_graph"]\n'
    )
    monkeypatch.chdir(project)
    code, stdout, stderr = run_cli("check", "--no-cache", "-q", "--format", "json", str(project / "histories"))
    assert code == 1, stderr
    results = {r["workflow"]["id"]: r for r in json.loads(stdout)["replay"]["results"]}
    assert results["parked"]["divergence"]["kind"] == "prompt-drift"
    assert "resumes at node 'draft', which uses prompt reply" in results["parked"]["divergence"]["message"]
    sys.modules.pop(f"{package}.prompt_desk", None)


def test_langgraph_resumes_the_parked_thread_under_the_edited_prompt(
    tmp_path: Path, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the drift is about: the parked node runs again from its top, so the reply is rendered anew."""
    package = copy_desk(tmp_path, monkeypatch, (REPLY_TEXT, NEW_REPLY))
    monkeypatch.setattr(effects, "EFFECTS", tmp_path / "effects.log")
    copy = tmp_path / "resume.sqlite"
    shutil.copy(desk.db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        edited = __import__(f"{package}.prompt_desk", fromlist=["graph"]).graph
        final = edited.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(Command(resume="approve"), thread("parked"))
    finally:
        conn.close()
        sys.modules.pop(f"{package}.prompt_desk", None)
    assert final["reply"] == NEW_REPLY.format(ticket="my invoice was charged twice").upper()
    # draft rendered the reply prompt before its interrupt (v1) and again when it ran from its top on resume (v2):
    # the import keeps the latest, the one its writes came from.
    code, output = import_histories(copy, tmp_path / "resumed", "--thread-id", "parked",
                                    "--workflows", "graph_apps.prompt_desk:graph", "--no-redact")
    assert code == 0, output
    events = json.loads((tmp_path / "resumed" / "desk-parked.json").read_text())["events"]
    [draft] = [e for e in events if e["name"] == "draft"]
    assert draft["prompt"] == {"name": "reply", "version": Prompt("r", NEW_REPLY).version}
    assert [p["version"] for p in draft["prompts"]] == [Prompt("r", NEW_REPLY).version]


def test_the_readme_stategraph_example_runs_and_records_its_manifest() -> None:
    """README's "Prompt versions" StateGraph block runs as written: the thread parks in draft, the manifest
    with_prompts walked from the compiled graph is in the input checkpoint's metadata, and the resume finishes."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "builder = StateGraph(Desk)" in b]
    namespace: dict[str, Any] = {"__name__": "readme_example"}  # as the user's own module
    exec(compile(block, "README.md", "exec"), namespace)
    graph, config, reply = namespace["graph"], namespace["config"], namespace["REPLY"]
    history = list(graph.get_state_history(config))
    first = history[-1]
    assert json.loads(first.metadata["replaytest_prompts"]) == {"reply": reply.full_version}
    assert graph.get_state(config).values["reply"] == reply.render(ticket="my invoice was charged twice")
