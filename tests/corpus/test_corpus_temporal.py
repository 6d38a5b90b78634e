"""``replaytest corpus`` on Temporal histories (the recorded fixtures of tests/temporal, replayed by the
real temporalio Replayer; no server): which files of a small hand-made corpus it keeps and why.

The corpus, against ``PatchedV2`` (``if workflow.patched("v2"): sleep``, then the activity):

| history | made from | command shape | run |
|---|---|---|---|
| before-1, before-2, before-3 | ``patched_v1_history.json``, another workflow id each | activity, complete | completed |
| patched-1, patched-2 | ``patched_v2_history.json``, another workflow id each | patch ``v2``, timer, activity, complete | completed |
| patched-sleeping | the first seven events of ``patched_v2_history.json`` | patch ``v2``, timer | parked (timer) |

Worked by hand: the sleeping run is kept (in flight). Each completed shape needs one run: the one with the
smallest file digest. The runs before the patch also take the branch past the sleep, and the completed
patched runs the line after the timer; nothing else is needed. Three of six are kept.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TEMPORAL = Path(__file__).resolve().parents[1] / "temporal"
CONFIG = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["temporal_wf_patched:PatchedV2"]\n'


def _with_workflow_id(source: Path, target: Path, workflow_id: str, keep_events: int | None = None) -> None:
    document = json.loads(source.read_text())
    document["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"] = workflow_id
    if keep_events is not None:
        document["events"] = document["events"][:keep_events]
    target.write_text(json.dumps(document, indent=2))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for module in ("temporal_wf_patched.py", "temporal_wf_hello.py"):
        shutil.copy(TEMPORAL / module, tmp_path / module)
    histories = tmp_path / "histories"
    histories.mkdir()
    v1, v2 = TEMPORAL / "histories" / "patched_v1_history.json", TEMPORAL / "histories" / "patched_v2_history.json"
    for number in (1, 2, 3):
        _with_workflow_id(v1, histories / f"before-{number}.json", f"order-before-{number}")
    for number in (1, 2):
        _with_workflow_id(v2, histories / f"patched-{number}.json", f"order-patched-{number}")
    # Started, first task, marker, search attributes, timer started: the run sleeps on its timer.
    _with_workflow_id(v2, histories / "patched-sleeping.json", "order-sleeping", keep_events=7)
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    return tmp_path


def _smallest_digest(histories: Path, names: list[str]) -> str:
    return min(names, key=lambda name: hashlib.sha256((histories / f"{name}.json").read_bytes()).hexdigest())


def _line(text: str) -> int:
    source = (TEMPORAL / "temporal_wf_patched.py").read_text().splitlines()
    start = next(number for number, line in enumerate(source, 1) if "class PatchedV2" in line)
    return next(number for number, line in enumerate(source, 1) if number > start and text in line)


@pytest.mark.slow
def test_keeps_the_sleeping_run_and_one_run_per_completed_shape(project: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", "--output-format", "json", "--out", "kept"],
                         cwd=project, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads(run.stdout)
    assert (document["summary"]["histories"], document["summary"]["kept"]) == (6, 3)
    assert document["summary"]["coverage_equal"] is True
    (workflow,) = document["workflows"]
    assert workflow["workflow_type"] == "Patched"
    histories = project / "histories"
    before = _smallest_digest(histories, ["before-1", "before-2", "before-3"])
    patched = _smallest_digest(histories, ["patched-1", "patched-2"])
    kept = {item["history"]: [reason["kind"] for reason in item["reasons"]] for item in workflow["kept_histories"]}
    assert set(kept) == {"histories/patched-sleeping.json", f"histories/{before}.json", f"histories/{patched}.json"}
    assert kept["histories/patched-sleeping.json"][0] == "in-flight"
    assert "shape" in kept[f"histories/{before}.json"] and "shape" in kept[f"histories/{patched}.json"]
    # The patch marker is part of the shape: the runs before the patch have none.
    commands = {shape["runs"]: shape["commands"] for shape in workflow["shapes"]}
    assert sorted(commands) == [1, 2, 3]
    assert ["patch", "", "v2"] in commands[2] and ["patch", "", "v2"] in commands[1]
    assert not any(command[0] == "patch" for command in commands[3])
    assert ["activity", "say", ""] in commands[3]
    # The branch past the sleep is the runs before the patch's alone.
    test, activity = _line('if workflow.patched("v2")'), _line("return await workflow.execute_activity")
    reasons = {reason["kind"]: reason["detail"] for reason in
               next(item for item in workflow["kept_histories"] if item["history"] == f"histories/{before}.json")["reasons"]}
    assert f"{test}->{activity}" in reasons["branches"]
    assert workflow["coverage_before"] == workflow["coverage_after"]
    assert workflow["coverage_before"]["shapes"] == 3 and workflow["coverage_before"]["branches"] == 2
    assert sorted(p.name for p in (project / "kept").iterdir()) == sorted(
        ["patched-sleeping.json", f"{before}.json", f"{patched}.json"])
    assert len(list(histories.iterdir())) == 6
