"""A third-party engine, shaped as docs/engines.md describes (``tiny_engine``: a package with ``PLUGIN``, a lint
profile and a ``NeutralReplayer``), registered only through the ``replaytest.plugins`` entry point of an
installed distribution (its dist-info on the path), replays and lints through the ordinary commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parent


def _history(status: str, steps: list[tuple[str, object]]) -> dict[str, object]:
    return {
        "format": "replaytest-history",
        "format_version": 1,
        "workflow": {"type": "checkout", "id": f"order-{status}", "engine": "tiny"},
        "status": status,
        "input": {"id": "A-1"},
        "events": [
            {"seq": seq, "kind": "step", "name": name, "result": result}
            for seq, (name, result) in enumerate(steps, start=1)
        ],
    }


def _replaytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(KIT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "replaytest", *args], cwd=tmp_path, env=environment, capture_output=True, text=True,
        timeout=120,
    )


def _write_histories(tmp_path: Path) -> None:
    folder = tmp_path / "histories"
    folder.mkdir()
    completed = _history("completed", [("price", 12.5), ("charge", "receipt-1")])
    running = _history("running", [("price", 12.5)])
    (folder / "completed.json").write_text(json.dumps(completed), encoding="utf-8")
    (folder / "running.json").write_text(json.dumps(running), encoding="utf-8")


def test_the_entry_point_engine_replays_its_histories_green_on_unchanged_code(tmp_path: Path) -> None:
    _write_histories(tmp_path)
    run = _replaytest(tmp_path, "replay", "histories", "--workflows", "tiny_app.checkout:checkout")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "replayed 2 histories: 2 passed, 0 diverged" in run.stdout


def test_the_entry_point_engine_reports_a_renamed_step_at_its_line(tmp_path: Path) -> None:
    _write_histories(tmp_path)
    run = _replaytest(tmp_path, "replay", "histories", "--workflows", "tiny_app.checkout_renamed:checkout")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "the code issued step 'capture' where the history recorded step 'charge'" in run.stdout
    line = next(
        number for number, text in enumerate((KIT / "tiny_app" / "checkout_renamed.py").read_text().splitlines(), 1)
        if '"capture"' in text
    )
    assert f"checkout_renamed.py:{line} in checkout" in run.stdout
    # The running history stops before the renamed step: its resume is not broken by it.
    assert "1 passed, 1 diverged" in run.stdout


def test_the_entry_point_engine_lints_with_its_profile(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(
        "import time\n\nfrom tiny_engine import workflow\n\n\n@workflow\ndef stamp(order):\n"
        "    started = time.time()\n    yield ('step', 'price', started)\n",
        encoding="utf-8",
    )
    run = _replaytest(tmp_path, "lint", "flow.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "flow.py:8" in run.stdout and "a step that reads the clock" in run.stdout


def test_without_the_entry_point_the_engine_is_unknown(tmp_path: Path) -> None:
    """Guard: the engine is found through the entry point, not by some other path."""
    import shutil

    _write_histories(tmp_path)
    bare = tmp_path / "path"  # the same packages, no dist-info: nothing registers the plugin
    shutil.copytree(KIT / "tiny_engine", bare / "tiny_engine")
    shutil.copytree(KIT / "tiny_app", bare / "tiny_app")
    environment = {**os.environ, "PYTHONPATH": str(bare)}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories", "--workflows", "tiny_app.checkout:checkout"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no replayer for engine 'tiny' ($.workflow.engine)" in run.stdout


def test_an_import_command_named_by_module_loads_only_when_it_runs(tmp_path: Path) -> None:
    """A plugin may name its import command as ``"module:attribute"``: ``import --help`` lists it under the
    plugin's name (``_`` as ``-``) and the module is imported only for that subcommand."""
    from replaytest.plugins import FrameworkPlugin, PluginError

    plugin = FrameworkPlugin(name="tiny_engine", import_command="tiny_engine_missing.importer:import_command")
    assert plugin.import_command_name == "tiny-engine"
    with pytest.raises(PluginError, match=r"tiny_engine_missing\.importer:import_command failed to load"):
        plugin.load_import_command()
