"""``await DBOS.patch_async(...)`` replayed: DBOS probes the id (``get_checkpoint_name``) and, on its own
marker, moves past it and answers True without asking the system database again. An async workflow run
for real on SQLite with a patch check, imported and replayed in a fresh process: the unchanged code
replays green with the marker consumed (before, the run read as diverged at the step after the marker);
a renamed patch takes the old path there and the marker is a ``patch-mismatch``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

APP = '''from dbos import DBOS


@DBOS.step()
async def one(x: int) -> int:
    return x + 1


@DBOS.step()
async def two(x: int) -> int:
    return x * 2


@DBOS.workflow()
async def flow(x: int) -> int:
    a = await one(x)
    if await DBOS.patch_async("v2"):
        a = a + 100
    return await two(a)
'''
RECORD = '''import asyncio, os, sys
sys.path.insert(0, os.getcwd())
from dbos import DBOS, SetWorkflowID
from asyncapp import app
# enable_patching: DBOS.patch_async needs it before 3.4 (3.4 only warns that it is no longer needed).
DBOS(config={"name": "async-patch", "system_database_url": "sqlite:///system.sqlite3", "application_version": "v1",
             "enable_patching": True})
DBOS.launch()
async def main():
    with SetWorkflowID("run-1"):
        print(await app.flow(1))
asyncio.run(main())
DBOS.destroy()
'''
PYPROJECT = '''[project]
name = "async-patch"
version = "1.0"

[tool.replaytest.replay]
paths = ["histories"]
workflows = ["asyncapp.replay:CONFIG"]
'''
CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig
CONFIG = DBOSReplayConfig(modules=("asyncapp.app",))
'''
PATCH_LINE = 17


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, timeout=180,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))},
                               "PYTHONDONTWRITEBYTECODE": "1"})


def recorded(root: Path) -> Path:
    (root / "asyncapp").mkdir(parents=True)
    (root / "asyncapp/__init__.py").write_text("")
    (root / "asyncapp/app.py").write_text(APP)
    (root / "asyncapp/replay.py").write_text(CONFIG)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "record.py").write_text(RECORD)
    done = run(root, "record.py")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "204", done.stdout + done.stderr
    done = run(root, "-m", "replaytest", "import", "dbos", "--database-url", "sqlite:///system.sqlite3", "--name", "flow", "--out", "histories")
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def replayed(root: Path) -> dict:
    done = run(root, "-m", "replaytest", "replay", "--format", "json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    [result] = json.loads(done.stdout)["results"]
    return result


def test_the_recorded_async_patch_marker_is_consumed_and_the_run_replays_green(tmp_path: Path) -> None:
    result = replayed(recorded(tmp_path / "app"))
    assert result["status"] == "passed", result.get("divergence")
    assert [(d["patch_id"], d["taken"], d["position"], d["source"]["line"]) for d in result["patch_decisions"]] == [
        ("v2", True, 2, PATCH_LINE)
    ]


def test_a_renamed_async_patch_takes_the_old_path_and_the_marker_is_a_patch_mismatch(tmp_path: Path) -> None:
    root = recorded(tmp_path / "app")
    (root / "asyncapp/app.py").write_text(APP.replace('patch_async("v2")', 'patch_async("v3")'))
    result = replayed(root)
    assert (result["status"], result["divergence"]["kind"], result["divergence"]["position"]) == ("diverged", "patch-mismatch", 2)
