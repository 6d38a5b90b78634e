"""``replaytest corpus`` on DBOS histories: the DBOS tests' shop, run for real on SQLite and imported
(``tests/dbos/dbos_kit.record``), replayed against its code through a ``DBOSReplayConfig``.

| history | run | what it covers of ``place_order`` |
|---|---|---|
| order-ok | completed; the card is charged, nobody approves | the shape below, the return |
| order-declined | completed; the card step fails, an approval arrives | the same shape, the ``except`` body, the return |
| order-pending | waiting in ``recv`` when the process died (pending) | a shape without the closing sleep |
| order-*-5 | the ``ship`` child workflow of each | one shape |

Worked by hand: order-pending is kept (in flight); order-declined adds the declined-card lines and the
return; order-ok then adds nothing. Of the three ``ship`` children, which all cover the same, the one with
the smallest file digest. The DBOS app module is imported only when DBOS first replays: its lines are
measured all the same.
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

DBOS_TESTS = Path(__file__).resolve().parents[1] / "dbos"
sys.path.insert(0, str(DBOS_TESTS))

import dbos_kit  # noqa: E402


@pytest.mark.slow
def test_keeps_the_pending_order_and_the_declined_one_and_one_ship_child(tmp_path: Path) -> None:
    recording = dbos_kit.record(tmp_path / "recording", portable=True)
    project = tmp_path / "project"
    shutil.copytree(DBOS_TESTS / "dbos_shop", project / "dbos_shop", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "dbos_shop" / "replay.py").write_text(dbos_kit.REPLAY_CONFIG)
    (project / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["dbos_shop.replay:CONFIG"]\n')
    shutil.copytree(recording.histories, project / "histories")
    env = {**os.environ, "SHOP_EFFECTS": str(project / "effects.log"), "SHOP_APP_DB": f"sqlite:///{project / 'app.sqlite3'}"}
    run = subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", "--output-format", "json"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    workflows = {item["workflow_type"]: item for item in json.loads(run.stdout)["workflows"]}
    assert sorted(workflows) == ["place_order", "ship"]
    orders = workflows["place_order"]
    kept = {item["history"]: [reason["kind"] for reason in item["reasons"]] for item in orders["kept_histories"]}
    assert kept == {"histories/order-pending.json": ["in-flight", "shape", "lines", "branches"],
                    "histories/order-declined.json": ["shape", "lines"]}
    assert orders["dropped_histories"] == ["histories/order-ok.json"]
    source = (project / "dbos_shop" / "app.py").read_text().splitlines()
    declined = next(number for number, line in enumerate(source, 1) if 'payment = f"declined: {declined}"' in line)
    reasons = {r["kind"]: r["detail"] for r in orders["kept_histories"][1]["reasons"]}
    assert f"dbos_shop/app.py:{declined - 1}, {declined}, " in reasons["lines"]
    assert orders["coverage_before"] == orders["coverage_after"] and orders["coverage_before"]["lines"] > 0
    children = sorted((project / "histories").glob("order-*-5.json"))
    smallest = min(children, key=lambda path: hashlib.sha256(path.read_bytes()).hexdigest())
    assert [item["history"] for item in workflows["ship"]["kept_histories"]] == [f"histories/{smallest.name}"]
    assert not (project / "effects.log").exists()  # replay ran no step body
