"""Every ``*.json`` under the replay paths is a test item, and the CLI and the plugin agree on what is a
history (one recogniser, ``replay.runner.recognise``): a valid history in any key order replays; a file
that is not one fails with the reason instead of being left out of the run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT = (REPO / "fixtures/journal_app/agent.py").read_text()
SOURCE = REPO / "fixtures/histories/support_agent-question.json"
INI = """
[tool.pytest.ini_options]
testpaths = ["tests"]
replay_paths = ["histories"]
replay_workflows = ["shop.agent:support_agent"]
"""


def _write_cases(histories: Path) -> dict[str, str]:
    """File name -> the reason it must fail with ("" for a valid history that must pass)."""
    document = json.loads(SOURCE.read_text(encoding="utf-8"))
    # Sorted keys put "events" before "format"; a long input pushes "format" past the first 64 KiB.
    padded = dict(document, input={**document["input"], "padding": "x" * 70_000}) if isinstance(document["input"], dict) else document
    (histories / "sorted_keys.json").write_text(json.dumps(padded, sort_keys=True, indent=1), encoding="utf-8")
    (histories / "newline_after_key.json").write_text(
        json.dumps(document, indent=2).replace('"format": ', '"format":\n    ', 1), encoding="utf-8")
    (histories / "utf16.json").write_bytes(json.dumps(document).encode("utf-16"))
    (histories / "empty.json").write_bytes(b"")
    text = SOURCE.read_text(encoding="utf-8")
    (histories / "truncated.json").write_text(text[: len(text) // 2], encoding="utf-8")
    (histories / "settings.json").write_text('{"theme": "dark"}', encoding="utf-8")
    (histories / "infinite.json").write_text(text.replace('"format_version": 1', '"format_version": 1e999'), encoding="utf-8")
    (histories / "duplicate.json").write_text(text.replace('"status": ', '"status": "failed", "status": ', 1), encoding="utf-8")
    return {
        "sorted_keys.json": "",
        "newline_after_key.json": "",
        "utf16.json": "is UTF-16",
        "empty.json": "is empty",
        "truncated.json": "invalid JSON",
        "settings.json": "not a history any replayer recognises: a JSON document with neither",
        "infinite.json": "$.format_version: number is too large (it overflows to infinity)",
        "duplicate.json": "$.status: duplicate key",
    }


def test_every_json_is_an_item_and_non_histories_fail_with_the_reason(pytester: pytest.Pytester) -> None:
    root = pytester.path
    (root / "shop").mkdir()
    (root / "shop/__init__.py").write_text("")
    (root / "shop/agent.py").write_text(AGENT)
    (root / "histories").mkdir()
    shutil.copy(SOURCE, root / "histories" / SOURCE.name)
    cases = _write_cases(root / "histories")
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(INI)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "histories")
    failing = sorted(name for name, reason in cases.items() if reason)
    result.assert_outcomes(passed=len(cases) - len(failing) + 1, failed=len(failing))
    output = result.stdout.str()
    for name in failing:
        assert f"FAILED histories/{name}::replay" in output
        assert cases[name] in output, name

    # The command line says the same about the same files.
    cli = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories", "--workflows", "shop.agent:support_agent",
         "--format", "json"], cwd=root, capture_output=True, text=True, timeout=120,
    )
    assert cli.returncode == 2, cli.stderr
    report = json.loads(cli.stdout)
    by_name = {Path(entry["history"]).name: entry for entry in report["results"]}
    assert set(by_name) == {*cases, SOURCE.name}
    for name, reason in cases.items():
        if reason:
            assert by_name[name]["status"] == "error" and reason in by_name[name]["error"], (name, by_name[name])
        else:
            assert by_name[name]["status"] == "passed", (name, by_name[name])
