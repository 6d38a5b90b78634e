"""``replaytest check`` on the DBOS shop: the incremental replay cache skips every green history of an
unchanged project (the DBOS replay reads nothing that changes from one run to the next), keys them on
the installed dbos release, and replays again once the shop's code changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dbos_kit import Recording, edited, project

RENAMED = edited(
    ("def send_receipt(", "def email_receipt("),
    ("        receipt = send_receipt(order_id)", "        receipt = email_receipt(order_id)"),
)


def _check(root: Path) -> dict[str, Any]:
    env = {**os.environ, "SHOP_EFFECTS": str(root / "effects.log"), "SHOP_APP_DB": f"sqlite:///{root / 'app.sqlite3'}"}
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--format", "json", "dbos_shop/app.py"],
                         cwd=root, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    replay = json.loads(run.stdout)["replay"]
    statuses = sorted({r["status"] for r in replay["results"]})
    return {"replayed": len(replay["results"]), "statuses": statuses, "skipped": replay["skipped"]}


@pytest.mark.slow
def test_an_unchanged_shop_is_skipped_and_a_changed_one_replayed(pytester: pytest.Pytester, pickled: Recording) -> None:
    root = project(pytester, pickled.histories)
    assert _check(root) == {"replayed": 10, "statuses": ["passed"], "skipped": 0}
    assert _check(root) == {"replayed": 0, "statuses": [], "skipped": 10}

    passed = root / ".replaytest_cache" / "replay" / "passed.json"
    entries = json.loads(passed.read_text())
    assert {entry["engine"] for entry in entries.values()} == {"dbos"}
    assert all(set(entry["libraries"]) == {"dbos"} for entry in entries.values())
    for entry in entries.values():
        entry["libraries"]["dbos"] = "1.0.0"  # as if remembered under another dbos release
    passed.write_text(json.dumps(entries))
    assert _check(root) == {"replayed": 10, "statuses": ["passed"], "skipped": 0}

    (root / "dbos_shop/app.py").write_text(RENAMED)
    changed = _check(root)
    assert changed["skipped"] == 0 and "diverged" in changed["statuses"]
