"""``replaytest check`` on a Temporal project: the incremental replay cache skips an unchanged history
(the Temporal sandbox re-imports the workflow module on every replay, which reads nothing that changes
between runs), and replays it again once a file the module reads at import changed or the installed
temporalio is not the release it was remembered under."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HISTORIES = Path(__file__).resolve().parent / "histories"
# The code of hello_timer_history.json (activity, 0.1 s timer, activity), with the greeting the
# activity uses kept in a text file beside it and read when the module is imported.
GREETER = '''\
import asyncio
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

GREETING = (Path(__file__).parent / "greeting.txt").read_text(encoding="utf-8").strip()


@activity.defn
async def say(name: str) -> str:
    return f"{GREETING} {name}"


@workflow.defn(name="Hello")
class Hello:
    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=timedelta(seconds=5))
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=timedelta(seconds=5))
'''


def _check(project: Path) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--format", "json", "greeter.py"],
                         cwd=project, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stdout + run.stderr  # 1: lint findings of the example code
    replay = json.loads(run.stdout)["replay"]
    return {"replayed": [(Path(r["history"]).name, r["status"]) for r in replay["results"]], "skipped": replay["skipped"]}


@pytest.mark.slow
def test_temporal_history_is_skipped_until_a_file_read_at_import_or_temporalio_changes(tmp_path: Path) -> None:
    (tmp_path / "histories").mkdir()
    shutil.copy(HISTORIES / "hello_timer_history.json", tmp_path / "histories")
    (tmp_path / "greeter.py").write_text(GREETER, encoding="utf-8")
    (tmp_path / "greeting.txt").write_text("hi\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["greeter:Hello"]\n', encoding="utf-8"
    )
    replayed = {"replayed": [("hello_timer_history.json", "passed")], "skipped": 0}
    assert _check(tmp_path) == replayed
    assert _check(tmp_path) == {"replayed": [], "skipped": 1}

    (tmp_path / "greeting.txt").write_text("hello\n", encoding="utf-8")
    assert _check(tmp_path) == replayed
    assert _check(tmp_path) == {"replayed": [], "skipped": 1}

    passed = tmp_path / ".replaytest_cache" / "replay" / "passed.json"
    entries = json.loads(passed.read_text())
    assert [sorted(entry["libraries"]) for entry in entries.values()] == [["temporalio"]]
    for entry in entries.values():
        entry["libraries"]["temporalio"] = "1.0.0"  # as if remembered under another temporalio release
    passed.write_text(json.dumps(entries))
    assert _check(tmp_path) == replayed
