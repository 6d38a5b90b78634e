"""Graphs an ``@entrypoint`` invokes from its own code (nested runs), recorded on a real SqliteSaver.

``newsroom`` writes an intro and a body, hands both to the ``editor`` entrypoint (``editor.invoke``: a
nested run, checkpointed in the newsroom task's namespace), then waits for a human (``interrupt``) and
prints the article. Thread ``parked`` waits at the interrupt, after the nested run; thread ``done`` was
answered "print" and completed. Each case resumes a copy of the parked thread with LangGraph itself under
the changed code, to show what LangGraph really does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import effect_lines, import_histories
from lg_apps import newsroom, newsroom_editor_swapped, newsroom_swapped
from langgraph.types import Command
from test_langgraph_parked import line_of, record, result_of
from test_langgraph_replay import replay

from replaytest.history import load_history

SPEC = "lg_apps.newsroom:newsroom"
TOPIC = {"topic": "owls"}


@pytest.fixture
def newsroom_db(tmp_path: Path, effects: Path) -> Path:
    """The two threads recorded and imported into ``tmp_path / "histories"``; the effects file emptied."""
    db = tmp_path / "newsroom.sqlite"
    record(db, newsroom.newsroom, [("parked", TOPIC), ("done", TOPIC), ("done", Command(resume="print"))])
    # Recording really ran both entrypoints' task bodies.
    assert effect_lines(effects)[:4] == [
        "write_part intro owls", "write_part body owls", "tighten intro on owls", "fact_check body on owls",
    ]
    code, output = import_histories(db, tmp_path / "histories", "--workflows", SPEC, "--workflows", "lg_apps.newsroom:editor")
    assert code == 0, output
    assert "1 graph run(s) started from the entrypoint's code imported from their own namespaces" in output
    effects.unlink()
    return db


def histories(db: Path) -> Path:
    return db.parent / "histories"


def resume_copy(db: Path, graph, answer: object) -> dict:
    """LangGraph resuming a copy of the parked thread under ``graph`` (the database itself stays as recorded)."""
    copy = db.parent / f"resumed-{len(list(db.parent.glob('resumed-*')))}.sqlite"
    shutil.copy(db, copy)
    from test_langgraph_parked import resume_with

    return resume_with(copy, graph, "parked", answer)


def test_the_nested_run_is_imported_where_the_entrypoint_called_it(newsroom_db: Path) -> None:
    history = load_history(histories(newsroom_db) / "newsroom-parked.json")
    rows = [(e.kind, e.name, e.extra.get("nested")) for e in history.events]
    assert rows == [
        ("step", "write_part", None), ("step", "write_part", None),
        ("child-workflow", "editor", 0), ("step", "tighten", 0), ("step", "fact_check", 0),
        ("signal", "interrupt", None),
    ]
    child = history.events[2]
    assert child.extra["input"] == {"intro": "intro on owls", "body": "body on owls"}
    assert (child.extra["run_status"], child.result) == ("completed", {"lead": "intro on owls, tightened", "facts_ok": True})
    assert [e.result for e in history.events[3:5]] == ["intro on owls, tightened", {"claims": 1, "ok": True}]
    # Values are decoded from msgpack: the file is plain JSON.
    assert json.loads((histories(newsroom_db) / "newsroom-done.json").read_text())["status"] == "completed"


def test_unchanged_code_replays_both_threads_without_running_a_task(newsroom_db: Path, effects: Path) -> None:
    code, report = replay([histories(newsroom_db)], SPEC)
    assert code == 0, report
    assert [(r["workflow"]["id"], r["status"]) for r in report["results"]] == [("done", "passed"), ("parked", "passed")]
    assert any("graphs started from the entrypoint's code were replayed against their recorded nested runs" in note
               for note in report["summary"]["notes"])
    assert not effects.exists()


def test_drafts_swapped_before_the_nested_call_diverge_on_both_threads(newsroom_db: Path, effects: Path) -> None:
    """LangGraph stores no task inputs, so the swapped write_part() calls look alike; the editor's recorded
    input shows the swap at the call, on the parked and on the completed thread."""
    invoke_line = line_of("newsroom_swapped", 'edit = editor.invoke({"intro": intro, "body": body})')
    for thread_id, went_on in (("parked", "on resume LangGraph hands back the recorded run's output"),
                               ("done", "the recorded output was made from the recorded input")):
        code, report = replay([histories(newsroom_db) / f"newsroom-{thread_id}.json"], "lg_apps.newsroom_swapped:newsroom")
        assert code == 1, report
        found = result_of(report)["divergence"]
        assert (found["kind"], found["position"]) == ("args-mismatch", 3)
        assert (found["recorded"]["kind"], found["recorded"]["name"]) == ("child-workflow", "editor")
        assert found["message"].startswith(
            "graph 'editor' (graph run #1 from the entrypoint) is now given "
            '{"body": "intro on owls", "intro": "body on owls"}; the history recorded '
            '{"body": "body on owls", "intro": "intro on owls"}'
        )
        assert went_on in found["message"]
        assert found["source"]["path"].endswith("newsroom_swapped.py")
        assert found["source"]["line"] == invoke_line
    assert not effects.exists()
    # The engine: LangGraph resumes the parked thread under the swapped code by handing back the editor's
    # recorded output (no editor task runs again) and prints the body where the intro belongs.
    resumed = resume_copy(newsroom_db, newsroom_swapped.newsroom, "print")
    assert resumed["post"] == {"printed": "intro on owls, tightened | body on owls | intro on owls"}
    assert effect_lines(effects) == ["print_article intro on owls, tightened | body on owls | intro on owls"]


def test_tasks_swapped_inside_the_nested_entrypoint_diverge_at_their_line(newsroom_db: Path, effects: Path) -> None:
    spec = "lg_apps.newsroom_editor_swapped:newsroom"
    check_line = line_of("newsroom_editor_swapped", 'facts = fact_check(article["body"]).result()')
    code, report = replay([histories(newsroom_db) / "newsroom-done.json"], spec)
    assert code == 1, report
    found = result_of(report)["divergence"]
    assert (found["kind"], found["position"]) == ("command-mismatch", 4)
    assert (found["recorded"]["name"], found["issued"]["name"]) == ("tighten", "fact_check")
    assert found["source"]["path"].endswith("newsroom_editor_swapped.py")
    assert found["source"]["line"] == check_line
    # The parked thread: LangGraph resumes it with the editor's recorded output and never runs the editor's
    # code again, so the same change is a warning there, at the same line, not a divergence.
    code, report = replay([histories(newsroom_db) / "newsroom-parked.json"], spec)
    assert code == 0, report
    result = result_of(report)
    assert result["status"] == "passed"
    [warning] = result["warnings"]
    assert (warning["kind"], warning["position"], warning["source"]["line"]) == ("command-mismatch", 4, check_line)
    assert "LangGraph resumes it with the nested run's recorded output, without running its code again" in warning["message"]
    assert not effects.exists()
    resumed = resume_copy(newsroom_db, newsroom_editor_swapped.newsroom, "print")
    assert resumed["post"] == {"printed": "intro on owls, tightened | intro on owls | body on owls"}
    assert effect_lines(effects) == ["print_article intro on owls, tightened | intro on owls | body on owls"]


def test_an_unsupported_form_stops_at_the_call_after_the_earlier_calls_were_checked(tmp_path: Path, effects: Path) -> None:
    from lg_apps import newsroom_streamed

    db = tmp_path / "streamed.sqlite"
    record(db, newsroom_streamed.streamed_newsroom, [("s", TOPIC)])
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.newsroom_streamed:streamed_newsroom")
    assert code == 0, output
    effects.unlink()
    path = tmp_path / "histories/streamed_newsroom-s.json"
    code, report = replay([path], "lg_apps.newsroom_streamed:streamed_newsroom")
    assert code == 2, report
    result = result_of(report)
    assert result["status"] == "error"
    stream_line = line_of("newsroom_streamed", 'edits = list(editor.stream({"intro": intro, "body": body}))')
    assert result["error"].startswith("the entrypoint starts another LangGraph graph ('editor') at ")
    assert (
        f"lg_apps/newsroom_streamed.py:{stream_line} from its own code in a way replay does not support: a graph "
        "started other than by invoke() or ainvoke() (stream, batch, …). Replay checked the 2 task call(s) before "
        "it and stopped at this call, before the graph ran anything; the rest of the thread is not checked."
    ) in result["error"]
    # A change before the call is still found: the calls before it are checked first.
    code, report = replay([path], "lg_apps.newsroom_streamed_checked:streamed_newsroom")
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["position"], found["issued"]["name"]) == (1, "command-mismatch", 1, "check_stock")
    assert not effects.exists()


def test_a_nested_entrypoint_from_another_package_stops_the_replay_at_the_call(tmp_path: Path, effects: Path) -> None:
    """The runtime guards watch the replayed entrypoint's package: code from elsewhere is not run."""
    from lg_apps import newsroom_vendor

    db = tmp_path / "vendor.sqlite"
    record(db, newsroom_vendor.vendor_newsroom, [("v", TOPIC)])
    assert effect_lines(effects) == ["write_part intro owls", "proofread intro on owls"]
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.newsroom_vendor:vendor_newsroom",
                                    "--workflows", "lg_vendor.proofreader:proofreader")
    assert code == 0, output
    effects.unlink()
    code, report = replay([tmp_path / "histories/vendor_newsroom-v.json"], "lg_apps.newsroom_vendor:vendor_newsroom")
    assert code == 2, report
    error = result_of(report)["error"]
    line = line_of("newsroom_vendor", "return proofreader.invoke(intro)")
    assert f"lg_apps/newsroom_vendor.py:{line} from its own code in a way replay does not support: an entrypoint " in error
    assert "defined outside the replayed entrypoint's package (its code would run without the runtime guards)" in error
    assert "Replay checked the 1 task call(s) before it and stopped at this call" in error
    assert not effects.exists()


def test_a_redacted_nested_run_replays_as_the_unredacted_one(newsroom_db: Path, tmp_path: Path, effects: Path) -> None:
    """The nested run's input key ``body`` imported as a pseudonym: the same verdicts as without redaction."""
    out = tmp_path / "redacted"
    code, output = import_histories(newsroom_db, out, "--workflows", SPEC, "--workflows", "lg_apps.newsroom:editor",
                                    "--redact-key", "body")
    assert code == 0, output
    child = load_history(out / "newsroom-parked.json").events[2]
    assert child.extra["input"]["body"] != "body on owls" and child.extra["input"]["intro"] == "intro on owls"
    code, report = replay([out], SPEC)
    assert code == 0, report
    code, report = replay([out], "lg_apps.newsroom_swapped:newsroom")
    assert code == 1, report
    assert [(r["workflow"]["id"], r["divergence"]["kind"], r["divergence"]["position"]) for r in report["results"]] == [
        ("done", "args-mismatch", 3), ("parked", "args-mismatch", 3)]
    assert not effects.exists()


def test_another_nested_entrypoint_diverges_the_completed_thread_and_warns_the_parked_one(
    newsroom_db: Path, effects: Path
) -> None:
    """LangGraph resumes the parked thread with the editor's recorded output although the code now invokes a
    ``reviewer`` entrypoint there: the reviewer's code and tasks never run."""
    from lg_apps import newsroom_reviewer

    spec = "lg_apps.newsroom_reviewer:newsroom"
    line = line_of("newsroom_reviewer", 'edit = reviewer.invoke({"intro": intro, "body": body})')
    code, report = replay([histories(newsroom_db) / "newsroom-done.json"], spec)
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["position"], found["source"]["line"]) == (1, "command-mismatch", 3, line)
    assert found["message"] == (
        "the code now starts graph 'reviewer' as graph run #1 from the entrypoint, where the history recorded 'editor'")
    code, report = replay([histories(newsroom_db) / "newsroom-parked.json"], spec)
    assert code == 0, report
    [warning] = result_of(report)["warnings"]
    assert (warning["kind"], warning["source"]["line"]) == ("command-mismatch", line)
    assert not effects.exists()
    resumed = resume_copy(newsroom_db, newsroom_reviewer.newsroom, "print")
    assert resumed["post"] == {"printed": "intro on owls, tightened | intro on owls | body on owls"}
    assert effect_lines(effects) == ["print_article intro on owls, tightened | intro on owls | body on owls"]


def test_a_nested_run_the_code_no_longer_starts_is_missing(newsroom_db: Path, effects: Path) -> None:
    for thread_id in ("parked", "done"):
        code, report = replay([histories(newsroom_db) / f"newsroom-{thread_id}.json"], "lg_apps.newsroom_unedited:newsroom")
        found = result_of(report)["divergence"]
        assert (code, found["kind"], found["position"]) == (1, "missing-command", 3), thread_id
        assert (found["recorded"]["kind"], found["recorded"]["name"]) == ("child-workflow", "editor")
        assert found["message"] == (
            "the history recorded graph run #1 ('editor') started from the entrypoint's code, which the code no "
            "longer starts")
    assert not effects.exists()


def test_a_nested_graph_the_thread_never_ran_diverges_the_completed_thread_and_langgraph_runs_it_on_resume(
    newsroom_db: Path, effects: Path
) -> None:
    """The code now hands the approved article to the editor a second time. The import recorded the nested runs
    it found (one), so the completed thread's replay knows graph run #2 never ran: an extra command at the line
    that invokes it, not an error. The parked thread replays green up to its interrupt; LangGraph resuming it
    runs the second editor for real."""
    from lg_apps import newsroom_second_edit

    history = load_history(histories(newsroom_db) / "newsroom-done.json")
    assert history.nested_namespaces is not None and [number for number, _ns in history.nested_namespaces] == [0]
    spec = "lg_apps.newsroom_second_edit:newsroom"
    line = line_of("newsroom_second_edit", 'edit = editor.invoke({"intro": edit["lead"], "body": body})')
    code, report = replay([histories(newsroom_db) / "newsroom-done.json"], spec)
    result = result_of(report)
    found = result["divergence"]
    assert (code, result["status"], found["kind"], found["source"]["line"]) == (1, "diverged", "extra-command", line)
    assert found["message"] == (
        "the code now starts graph 'editor' as graph run #2 from the entrypoint, which this completed thread never "
        "ran (its import read the thread's checkpoint namespaces and found 1 nested run(s)): the recorded run never "
        "started it")
    code, report = replay([histories(newsroom_db) / "newsroom-parked.json"], spec)
    assert code == 0, report
    assert not effects.exists()
    resume_copy(newsroom_db, newsroom_second_edit.newsroom, "print")
    assert "tighten intro on owls, tightened" in effect_lines(effects)
