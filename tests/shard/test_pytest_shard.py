"""The pytest plugin's ``--replay-shard I/N``: four shards together run every history item exactly once (each
in the shard of its content digest, as ``check --shard``), plain tests run in every shard, the other shards'
items are deselected and counted, the summary says what the shard took, under pytest-xdist too; a bad spec
is a usage error naming the form."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from shard_kit import HISTORIES


def _project(pytester: pytest.Pytester, recorded_claims: Path) -> Path:
    root = pytester.path
    for entry in recorded_claims.iterdir():
        (shutil.copytree if entry.is_dir() else shutil.copy)(entry, root / entry.name)
    (root / "tests").mkdir()
    (root / "tests" / "test_offers.py").write_text(
        "from claims.agent import call_model\n\n\ndef test_a_crushed_box_is_damage():\n"
        "    assert call_model('the box arrived crushed') == 'damaged'\n", encoding="utf-8")
    with open(root / "pyproject.toml", "a", encoding="utf-8") as pyproject:
        pyproject.write('\n[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


def _shard(path: Path, count: int) -> int:
    return int(hashlib.sha256(path.read_bytes()).hexdigest()[:16], 16) % count + 1


def _passed(result: pytest.RunResult) -> list[str]:
    return sorted(line.split(" ")[0] for line in result.outlines if " PASSED" in line)


@pytest.mark.slow  # four pytest runs, each replaying its share
def test_four_shards_run_each_history_item_once_and_the_plain_tests_in_each(
    pytester: pytest.Pytester, recorded_claims: Path,
) -> None:
    root = _project(pytester, recorded_claims)
    replayed: list[str] = []
    for index in range(1, 5):
        share = sorted(name for name in HISTORIES if _shard(root / "histories" / name, 4) == index)
        # In a subprocess: each run imports the project's workflow module and replaytest's runtime afresh.
        result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "--replay-shard", f"{index}/4",
                                               "tests", "histories")
        assert _passed(result) == sorted([*(f"histories/{name}::replay" for name in share),
                                          "tests/test_offers.py::test_a_crushed_box_is_damage"])
        result.assert_outcomes(passed=len(share) + 1, deselected=12 - len(share) or None)
        result.stdout.fnmatch_lines([f"shard {index}/4: {len(share)} of 12 histories (split by content digest)"])
        replayed += [line for line in _passed(result) if line.startswith("histories/")]
    assert sorted(replayed) == [f"histories/{name}::replay" for name in HISTORIES]


@pytest.mark.slow
def test_a_shard_under_xdist_says_what_it_took(pytester: pytest.Pytester, recorded_claims: Path) -> None:
    root = _project(pytester, recorded_claims)
    share = [name for name in HISTORIES if _shard(root / "histories" / name, 2) == 1]
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--replay-shard", "1/2", "histories")
    result.assert_outcomes(passed=len(share))
    result.stdout.fnmatch_lines([f"shard 1/2: {len(share)} of 12 histories (split by content digest)",
                                 f"replayed {len(share)} histories: {len(share)} passed, 0 diverged, 0 stale"])


@pytest.mark.parametrize("spec", ["3/2", "0/2", "half"])
def test_a_bad_replay_shard_is_a_usage_error(pytester: pytest.Pytester, recorded_claims: Path, spec: str) -> None:
    _project(pytester, recorded_claims)
    result = pytester.runpytest("--replay-shard", spec, "histories")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --replay-shard {spec!r}: *"])
