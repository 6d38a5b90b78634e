"""RT105 against the Azure SDK: an activity named with a value that differs between runs (here the environment of
the process) is reported by lint at the name, and replaying the runs the SDK recorded, in a process where the name
comes out otherwise, diverges at that activity, the recorded name against the one the code computes now; where it
comes out as recorded, the runs replay green."""

from __future__ import annotations

import json
from pathlib import Path

from azure_kit import APP_SOURCE, Imported, line_of, run_cli

NAMED = 'context.call_activity("price_order" + os.getenv("PRICE_STEP", ""), '


def _app(folder: Path) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    assert source.count('context.call_activity("price_order", ') == 1
    (folder / "named_app.py").write_text(source.replace('context.call_activity("price_order", ', NAMED), encoding="utf-8")
    (folder / "pyproject.toml").write_text("[project]\nname = 'approvals-named'\n\n[tool.replaytest]\n", encoding="utf-8")
    return folder / "named_app.py"


def test_lint_reports_the_activity_name_that_differs_between_runs(tmp_path: Path) -> None:
    app = _app(tmp_path)
    done = run_cli("lint", "--format", "json", "--no-cache", "named_app.py", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = [d for d in json.loads(done.stdout)["diagnostics"] if d["rule"] == "RT105"]
    assert [(d["line"], d["message"].split(" names ")[0]) for d in found] == [
        (line_of(app, NAMED), '"price_order" + os.getenv("PRICE_STEP", "")')]
    assert "names the activity with a value that differs between runs (os.getenv())" in found[0]["message"]


def test_the_recorded_runs_diverge_where_the_name_comes_out_otherwise(imported: Imported, tmp_path: Path) -> None:
    app = _app(tmp_path)
    files = [str(path) for path in sorted(imported.histories.glob("*.json"))]
    results = {}
    for suffix in ("", "-v2"):
        done = run_cli("replay", "--format", "json", *files, "-w", "named_app:app", cwd=tmp_path,
                       env={"PRICE_STEP": suffix})
        assert done.returncode in (0, 1), done.stdout + done.stderr
        results[suffix] = {result["workflow"]["id"]: result for result in json.loads(done.stdout)["results"]}
    assert results[""]["order-big"]["status"] == "passed", results[""]["order-big"]
    renamed = results["-v2"]["order-big"]
    assert renamed["status"] == "diverged", renamed
    divergence = renamed["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert (divergence["recorded"]["name"], divergence["issued"]["name"]) == ("price_order", "price_order-v2")
    assert divergence["source"]["line"] == line_of(app, NAMED)
