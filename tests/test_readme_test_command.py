"""The README's fast subset of the test suite: its ``-m`` expression names only markers pyproject declares,
and it leaves out the end-to-end tests where the suite's time goes (measured: a DBOS app replayed end to
end, a real pre-commit run), while keeping the quick tests of the same files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[1]


def _fast_expression() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r'^python -m pytest -n auto -m "([^"]+)"$', readme, flags=re.M)
    assert found is not None, "the README gives the fast subset's command"
    return found.group(1)


def test_the_fast_subset_names_declared_markers() -> None:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        declared = {line.split(":")[0] for line in tomllib.load(handle)["tool"]["pytest"]["ini_options"]["markers"]}
    named = set(re.findall(r"[a-z_]+", _fast_expression())) - {"not", "and", "or"}
    assert named == {"slow", "temporal_server"} and named <= declared


def test_the_fast_subset_leaves_out_the_slow_end_to_end_tests_and_keeps_the_quick_ones() -> None:
    files = ["tests/dbos/test_dbos_replay_e2e.py", "tests/lint/test_pre_commit.py"]
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", _fast_expression(),
         *files],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    kept = {line.split("::")[1].split("[")[0] for line in listed.stdout.splitlines() if "::" in line}
    for slow in ("test_each_change_is_caught_with_function_id_both_sides_and_line",
                 "test_commit_staging_only_a_breaking_helper_is_blocked_and_the_fix_passes",
                 "test_check_hook_blocks_a_commit_of_only_a_prompt_file_that_breaks_a_waiting_run"):
        assert slow not in kept
    assert "test_hook_manifest_declares_the_three_hooks" in kept  # a quick test of the same file stays
