"""Configuration found as ruff finds its own: ``.replaytest.toml`` / ``replaytest.toml`` (keys at the top
level) before ``pyproject.toml``'s ``[tool.replaytest]``, the nearest folder holding one winning; ``--config``
taking either shape; an unknown key an error naming the key and the file; ``--isolated`` reading none; and
``lint --show-settings`` saying what was resolved and from where."""

from __future__ import annotations

import json
from pathlib import Path

from lintkit import run_replaytest, write_files

# One clock read (RT101) and one random draw (RT102) in a Temporal workflow.
WORKFLOW = '''\
import random
import time

from temporalio import workflow


@workflow.defn
class Stamp:
    @workflow.run
    async def run(self) -> float:
        return time.time() + random.random()
'''


def _rules(root: Path, *args: str, cwd: Path | None = None) -> set[str]:
    run = run_replaytest("lint", "--no-cache", "--format", "json", *args, cwd=cwd or root)
    assert run.returncode in (0, 1), run.stderr
    return {d["rule"] for d in json.loads(run.stdout)["diagnostics"]}


def test_replaytest_toml_is_found_walking_up_from_the_linted_path(tmp_path: Path) -> None:
    write_files(tmp_path, {"project/replaytest.toml": 'select = ["RT101"]\n', "project/app/wf.py": WORKFLOW})
    (tmp_path / "elsewhere").mkdir()
    # Run from a folder outside the project: the file is found from the path, as ruff finds it.
    assert _rules(tmp_path, str(tmp_path / "project" / "app"), cwd=tmp_path / "elsewhere") == {"RT101"}


def test_dot_replaytest_toml_then_replaytest_toml_then_pyproject_in_one_folder(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "pyproject.toml": '[tool.replaytest]\nselect = ["RT101", "RT102"]\n',
        "replaytest.toml": 'select = ["RT102"]\n',
        "app/wf.py": WORKFLOW,
    })
    assert _rules(tmp_path, "app") == {"RT102"}
    (tmp_path / ".replaytest.toml").write_text('select = ["RT101"]\n', encoding="utf-8")
    assert _rules(tmp_path, "app") == {"RT101"}


def test_the_nearest_folder_with_a_configuration_wins(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "replaytest.toml": 'select = ["RT102"]\n',
        "app/pyproject.toml": '[tool.replaytest]\nselect = ["RT101"]\n',
        "app/wf.py": WORKFLOW,
    })
    assert _rules(tmp_path, "app") == {"RT101"}
    # A pyproject.toml without the table is no replaytest configuration: the search goes on upwards.
    (tmp_path / "app" / "pyproject.toml").write_text('[project]\nname = "app"\n', encoding="utf-8")
    assert _rules(tmp_path, "app") == {"RT102"}


def test_config_flag_takes_either_shape(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "ci/lint.toml": 'select = ["RT102"]\n',
        "ci/pyproject.toml": '[project]\nname = "x"\n\n[tool.replaytest]\nselect = ["RT101"]\n',
        "app/wf.py": WORKFLOW,
    })
    assert _rules(tmp_path, "app", "--config", "ci/lint.toml") == {"RT102"}
    assert _rules(tmp_path, "app", "--config", "ci/pyproject.toml") == {"RT101"}


def test_a_misspelt_key_is_an_error_naming_key_file_and_the_key_meant(tmp_path: Path) -> None:
    write_files(tmp_path, {"ci/lint.toml": 'selectt = ["RT102"]\n', "app/wf.py": WORKFLOW,
                           "replaytest.toml": '[replay]\npathz = ["histories"]\n'})
    run = run_replaytest("lint", "--no-cache", "app", "--config", "ci/lint.toml", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert "ci/lint.toml: selectt: unknown key; did you mean select?" in run.stderr
    discovered = run_replaytest("lint", "--no-cache", "app", cwd=tmp_path)
    assert discovered.returncode == 2
    assert "replaytest.toml: replay.pathz: unknown key; did you mean paths?" in discovered.stderr


def test_config_naming_a_pyproject_without_the_table_is_an_error_not_every_default(tmp_path: Path) -> None:
    write_files(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n', "app/wf.py": WORKFLOW})
    run = run_replaytest("lint", "--no-cache", "app", "--config", "pyproject.toml", cwd=tmp_path)
    assert run.returncode == 2 and "without replaytest settings" in run.stderr


def test_isolated_reads_no_configuration_file(tmp_path: Path) -> None:
    write_files(tmp_path, {"replaytest.toml": 'select = ["RT101"]\nbogus = 1\n', "app/wf.py": WORKFLOW})
    # The file would be an error (an unknown key); --isolated never reads it, so every rule runs.
    assert _rules(tmp_path, "app", "--isolated") == {"RT101", "RT102"}
    both = run_replaytest("lint", "app", "--isolated", "--config", "replaytest.toml", cwd=tmp_path)
    assert both.returncode == 2 and "--isolated" in both.stderr


def test_show_settings_says_what_was_resolved_and_from_where(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "replaytest.toml": 'select = ["RT101"]\nextend-ignore = ["RT104"]\n\n[replay]\npaths = ["histories"]\n',
        "app/wf.py": WORKFLOW,
    })
    run = run_replaytest("lint", "--show-settings", "app", "--exclude", "generated", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"# configuration file: {tmp_path.resolve() / 'replaytest.toml'} (top-level keys)"
    assert 'select = ["RT101"]  # replaytest.toml' in lines
    assert 'ignore = ["RT104"]  # replaytest.toml' in lines  # set through extend-ignore
    assert 'exclude = ["generated"]  # --exclude' in lines
    assert 'replay.paths = ["histories"]  # replaytest.toml' in lines
    assert 'replay.workflows = []  # default' in lines
    assert "Found" not in run.stdout  # nothing is linted
    document = json.loads(run_replaytest("lint", "--show-settings", "--format", "json", "app", "--select", "RT102",
                                         cwd=tmp_path).stdout)
    assert document["file"] == str(tmp_path.resolve() / "replaytest.toml")
    assert document["settings"]["select"] == {"value": ["RT102"], "from": "--select"}
    assert document["settings"]["cache-dir"] == {"value": ".replaytest_cache", "from": "default"}


def test_show_settings_without_any_file_says_so(tmp_path: Path) -> None:
    write_files(tmp_path, {"app/wf.py": WORKFLOW})
    run = run_replaytest("lint", "--show-settings", "app", cwd=tmp_path)
    assert run.returncode == 0
    assert run.stdout.startswith("# configuration file: none found")
    assert "select = []  # default" in run.stdout


def test_find_pyproject_still_works_and_warns_that_discovery_moved(tmp_path: Path) -> None:
    import pytest

    from replaytest.config import find_config_file, find_pyproject

    write_files(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "replaytest.toml": "", "app/wf.py": WORKFLOW})
    with pytest.warns(DeprecationWarning, match="find_config_file"):
        assert find_pyproject(tmp_path / "app") == tmp_path.resolve() / "pyproject.toml"
    assert find_config_file(tmp_path / "app") == tmp_path.resolve() / "replaytest.toml"


def test_errors_name_tables_as_a_replaytest_toml_spells_them(tmp_path: Path) -> None:
    write_files(tmp_path, {"replaytest.toml": "[rules.RT104]\nkey-names = 3\n", "app/wf.py": WORKFLOW})
    run = run_replaytest("lint", "--no-cache", "app", cwd=tmp_path)
    assert run.returncode == 2
    assert "replaytest.toml: [rules.RT104] key-names: must be a list of strings" in run.stderr, run.stderr
    assert "tool.replaytest" not in run.stderr
