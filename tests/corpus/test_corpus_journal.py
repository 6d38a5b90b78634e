"""``replaytest corpus`` on journal histories: which files of a small hand-made corpus it keeps and why,
what it writes (``--out``) and deletes (``--prune``), and that the kept set is measured again.

The corpus is recorded by the real journal runtime from ``triage_agent`` (the current code) and
``triage_agent_before_paging`` (the same workflow before the ``page-on-call`` patch):

| history | ticket | command shape |
|---|---|---|
| question-ada, question-cy, question-dan | a question, standard plan | classify, account, draft, send |
| question-eve | a question, enterprise plan (the ``priority`` queue: plain code) | the same shape |
| outage-1, outage-2 | an outage, acknowledged | classify, account, patch, page, signal, draft, send |
| outage-before-paging | an outage under the old code, acknowledged | classify, account, signal, draft, send |
| outage-waiting | an outage nobody acknowledged yet (parked) | classify, account, patch, page |

Worked by hand: the parked run is kept whatever it covers. Of the rest, eve's run adds the most (its shape,
the ``priority`` line and both branches to it and past the outage block), then the old outage run (its
shape and the branch past the patched block), then one of the two acknowledged outages (its shape; the one
with the smaller file digest). The other three question runs and the other outage add nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import triage_agent
import triage_agent_before_paging

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

HERE = Path(__file__).resolve().parent
CONFIG = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["triage_agent:triage_agent"]\n'
QUESTIONS = {"ada": "How do I export my invoices?", "cy": "Where do I change my password?",
             "dan": "Can I add a second user?", "eve": "How do I set up single sign-on?"}
OUTAGE = "The dashboard is down for our whole team."
ALL = sorted([*(f"question-{name}" for name in QUESTIONS), "outage-1", "outage-2", "outage-before-paging",
              "outage-waiting"])


def _record(histories: Path, scratch: Path) -> None:
    histories.mkdir()
    with Journal(scratch / "current.sqlite3") as journal:
        worker = Worker(journal, [triage_agent.triage_agent])
        for name, text in QUESTIONS.items():
            journal.start(triage_agent.triage_agent, {"customer": f"{name}@example.com", "text": text},
                          run_id=f"question-{name}", workflow_id=f"ticket-{name}")
        for run in ("outage-1", "outage-2", "outage-waiting"):
            journal.start(triage_agent.triage_agent, {"customer": "ops@example.com", "text": f"{OUTAGE} ({run})"},
                          run_id=run, workflow_id=f"ticket-{run}")
        worker.run_until_idle()
        for run in ("outage-1", "outage-2"):
            journal.signal(run, "acknowledged", {"by": "oncall@example.com"})
        worker.run_until_idle()
        for run in [*(f"question-{name}" for name in QUESTIONS), "outage-1", "outage-2", "outage-waiting"]:
            save_history(journal.export(run), histories / f"{run}.json")
    with Journal(scratch / "before.sqlite3") as journal:
        worker = Worker(journal, [triage_agent_before_paging.triage_agent])
        journal.start(triage_agent_before_paging.triage_agent, {"customer": "ops@example.com", "text": OUTAGE},
                      run_id="outage-before-paging", workflow_id="ticket-old-outage")
        worker.run_until_idle()
        journal.signal("outage-before-paging", "acknowledged", {"by": "oncall@example.com"})
        worker.run_until_idle()
        save_history(journal.export("outage-before-paging"), histories / "outage-before-paging.json")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("triage")
    _record(base / "histories", base)
    return base / "histories"


@pytest.fixture
def project(tmp_path: Path, recorded: Path) -> Path:
    shutil.copy(HERE / "triage_agent.py", tmp_path / "triage_agent.py")
    shutil.copytree(recorded, tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    return tmp_path


def _corpus(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", *args], cwd=project,
                          capture_output=True, text=True, timeout=300)


def _line(text: str) -> int:
    source = (HERE / "triage_agent.py").read_text().splitlines()
    return next(number for number, line in enumerate(source, 1) if text in line)


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _kept_outage(histories: Path) -> str:
    # The two acknowledged outages cover the same: the smaller file digest wins the tie.
    return min(("outage-1", "outage-2"), key=lambda run: _digest(histories / f"{run}.json"))


def _files(folder: Path) -> list[str]:
    return sorted(path.stem for path in folder.glob("*.json"))


@pytest.mark.slow
def test_keeps_the_parked_run_and_the_three_histories_adding_coverage_and_says_why(project: Path) -> None:
    run = _corpus(project, "--output-format", "json")
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads(run.stdout)
    assert document["summary"] | {"notes": None} == {
        "histories": 8, "kept": 4, "dropped": 4, "smaller_percent": 50.0, "coverage_equal": True,
        "written": None, "deleted": [], "not_deleted": [], "notes": None,
    }
    (workflow,) = document["workflows"]
    outage = _kept_outage(project / "histories")
    kept = [(item["history"], [reason["kind"] for reason in item["reasons"]]) for item in workflow["kept_histories"]]
    assert kept == [
        ("histories/outage-waiting.json", ["in-flight", "shape", "lines", "branches"]),
        ("histories/question-eve.json", ["shape", "lines", "branches"]),
        ("histories/outage-before-paging.json", ["shape", "branches"]),
        (f"histories/{outage}.json", ["shape"]),
    ]
    reasons = {item["history"]: {r["kind"]: r["detail"] for r in item["reasons"]} for item in workflow["kept_histories"]}
    assert reasons["histories/outage-waiting.json"]["in-flight"] == "parked"
    plan, priority = _line('if account["plan"] == "enterprise"'), _line('queue = "priority"')
    category, draft = _line('if category == "outage"'), _line('reply = ctx.model("draft reply"')
    patched, wait = _line('if ctx.patched("page-on-call")'), _line('ctx.wait_signal("acknowledged"')
    eve = reasons["histories/question-eve.json"]
    assert f"triage_agent.py:{priority}, {draft}, " in eve["lines"]
    assert eve["branches"] == f"triage_agent.py:{plan}->{priority}, {category}->{draft}"
    assert reasons["histories/outage-before-paging.json"]["branches"] == f"triage_agent.py:{patched}->{wait}"
    assert sorted(workflow["dropped_histories"]) == sorted(
        f"histories/{name}.json" for name in ALL if name not in ("outage-waiting", "question-eve",
                                                                 "outage-before-paging", outage))
    # Four shapes: the questions (4 runs), the acknowledged outages (2), the old outage, the parked run.
    assert sorted(shape["runs"] for shape in workflow["shapes"]) == [1, 1, 2, 4]
    patch_shape = next(shape for shape in workflow["shapes"] if shape["runs"] == 2)
    assert patch_shape["commands"] == [
        ["model", "classify", ""], ["step", "look up account", ""], ["marker", "patched", "page-on-call"],
        ["step", "page on-call", ""], ["signal", "acknowledged", ""], ["model", "draft reply", ""],
        ["step", "send reply", ""],
    ]
    # The body's twelve statements (classify, account, the plan test, both queues, the category test, the
    # patch test, page, wait, draft, send, return) and the six arcs of its three two-way branches, all
    # executed by some history: before and after are equal.
    assert workflow["coverage_before"] == workflow["coverage_after"] == {"shapes": 4, "lines": 12, "branches": 6}
    assert workflow["missing_after"] == {"shapes": [], "lines": [], "branches": []}
    assert _files(project / "histories") == ALL  # a report only: nothing written, nothing deleted


@pytest.mark.slow
def test_text_report_names_each_kept_history_the_reduction_and_coverage_before_and_after(project: Path) -> None:
    run = _corpus(project)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "corpus of 8 histories, 1 workflow type(s): keep 4, drop 4 (50% smaller)"
    assert lines[1] == "triage_agent: 8 histories, 4 command shape(s): keep 4"
    assert lines[2].startswith("  keep histories/outage-waiting.json: in-flight parked; shape ")
    priority = _line('queue = "priority"')
    assert lines[3].startswith("  keep histories/question-eve.json: shape ") and f"lines triage_agent.py:{priority}," in lines[3]
    assert ("  coverage before: 4 shapes, 12 lines, 6 branches; after (the kept set replayed again): 4 shapes, "
            "12 lines, 6 branches (equal)") in lines
    assert "nothing written (a report only): --out DIR copies the kept set, --prune deletes the dropped histories" in lines


@pytest.mark.slow
def test_out_copies_the_kept_set_and_leaves_the_originals_and_refuses_a_folder_holding_histories(project: Path) -> None:
    run = _corpus(project, "--out", "corpus")
    assert run.returncode == 0, run.stdout + run.stderr
    outage = _kept_outage(project / "histories")
    assert _files(project / "corpus") == sorted(["outage-waiting", "question-eve", "outage-before-paging", outage])
    assert _files(project / "histories") == ALL
    for name in _files(project / "corpus"):
        assert (project / "corpus" / f"{name}.json").read_bytes() == (project / "histories" / f"{name}.json").read_bytes()
    assert "wrote 4 histories and 0 blob(s) to corpus; the original histories are untouched" in run.stdout
    # "after" was measured on the copies: the same counts as before.
    assert "(equal)" in run.stdout

    again = _corpus(project, "--out", "corpus")
    assert again.returncode == 2
    assert "--out corpus already holds 4 history file(s)" in again.stderr and "give a new or empty folder" in again.stderr
    inside = _corpus(project, "--out", "histories/kept")
    assert inside.returncode == 2 and "--out histories/kept lies inside histories" in inside.stderr
    both = _corpus(project, "--out", "elsewhere", "--prune")
    assert both.returncode == 2 and "--out and --prune do not go together" in both.stderr
    assert not (project / "elsewhere").exists()


@pytest.mark.slow
def test_prune_deletes_only_the_dropped_histories_and_the_kept_set_selects_itself(project: Path) -> None:
    outage = _kept_outage(project / "histories")
    run = _corpus(project, "--prune")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "deleted 4 dropped histories (--prune); blob stores are left as they are" in run.stdout
    assert _files(project / "histories") == sorted(["outage-waiting", "question-eve", "outage-before-paging", outage])
    # A second run over the pruned folder keeps everything: nothing in it is redundant any more.
    second = _corpus(project, "--output-format", "json")
    assert second.returncode == 0, second.stdout + second.stderr
    assert json.loads(second.stdout)["summary"]["dropped"] == 0


# ``python -m replaytest`` with ``Path.unlink`` refusing one file as a read-only folder would: root ignores
# file permissions, so under root this is how a history that cannot be deleted is had at all.
_REFUSING_ONE = """
import os, pathlib, sys
refused = os.path.realpath(sys.argv.pop(1))
unlink = pathlib.Path.unlink
def refusing(self, *args, **kwargs):
    if os.path.realpath(self) == refused:
        raise PermissionError(13, "Permission denied", str(self))
    return unlink(self, *args, **kwargs)
pathlib.Path.unlink = refusing
sys.argv[0] = "replaytest"
from replaytest.cli import main
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["text", "json"])
def test_prune_goes_on_past_a_history_it_cannot_delete_names_it_and_exits_2(project: Path, output_format: str) -> None:
    outage = _kept_outage(project / "histories")
    dropped = sorted(name for name in ALL if name not in ("outage-waiting", "question-eve", "outage-before-paging", outage))
    refused = project / "histories" / "question-ada.json"
    assert "question-ada" in dropped
    run = subprocess.run([sys.executable, "-c", _REFUSING_ONE, str(refused), "corpus", "-q", "--prune",
                          "--output-format", output_format], cwd=project, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    # The other dropped histories were still deleted; the refused one and the kept set are there.
    assert _files(project / "histories") == sorted(["outage-waiting", "question-eve", "outage-before-paging", outage,
                                                    "question-ada"])
    if output_format == "json":
        summary = json.loads(run.stdout)["summary"]
        assert summary["not_deleted"] == [{"path": "histories/question-ada.json", "error": "Permission denied"}]
        assert sorted(summary["deleted"]) == [f"histories/{name}.json" for name in dropped if name != "question-ada"]
    else:
        lines = run.stdout.splitlines()
        assert ("deleted 3 of 4 dropped histories (--prune); 1 could not be deleted; blob stores are left as they are"
                in lines), run.stdout
        assert "  not deleted histories/question-ada.json: Permission denied" in lines


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() == 0, reason="root deletes files in a read-only folder: see the test above")
def test_prune_in_a_read_only_folder_deletes_nothing_names_every_history_and_exits_2(project: Path) -> None:
    histories = project / "histories"
    histories.chmod(0o555)
    try:
        run = _corpus(project, "--prune", "--output-format", "json")
    finally:
        histories.chmod(0o755)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    summary = json.loads(run.stdout)["summary"]
    assert summary["deleted"] == []
    outage = _kept_outage(histories)
    assert sorted(item["path"] for item in summary["not_deleted"]) == [
        f"histories/{name}.json" for name in ALL if name not in ("outage-waiting", "question-eve", "outage-before-paging", outage)
    ]
    assert {item["error"] for item in summary["not_deleted"]} == {"Permission denied"}
    assert _files(histories) == ALL


@pytest.mark.slow
def test_a_history_the_current_code_diverges_from_is_kept_and_fails_the_run(project: Path) -> None:
    # The current code renames the page step: both acknowledged outages and the parked run diverge.
    source = (project / "triage_agent.py").read_text()
    (project / "triage_agent.py").write_text(source.replace('"page on-call", page_on_call', '"page the on-call", page_on_call'))
    run = _corpus(project, "--output-format", "json")
    assert run.returncode == 1, run.stdout + run.stderr
    (workflow,) = json.loads(run.stdout)["workflows"]
    reasons = {item["history"]: item["reasons"][0] for item in workflow["kept_histories"]}
    for name in ("outage-1", "outage-2", "outage-waiting"):
        assert reasons[f"histories/{name}.json"] == {"kind": "not-replayed-cleanly", "detail": "diverged"}
    assert "histories/outage-before-paging.json" in reasons and "histories/question-eve.json" in reasons
    assert workflow["kept"] == 5
