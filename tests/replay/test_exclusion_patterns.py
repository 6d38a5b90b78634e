"""Replay's ``exclude`` globs mean what lint's mean (git's wildmatch, ``path_patterns``): ``*`` stays within a
folder, a pattern with a ``/`` is anchored to the setting's folder, ``!`` takes a history back (and is never
reported as matching nothing), and a pattern that can match nothing is a usage error naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from replaytest.config import ConfigError
from replaytest.replay.exclusion import ExcludeSetting, select_histories


def _histories(root: Path) -> list[Path]:
    names = ["histories/a.json", "histories/drafts/b.json", "histories/drafts/keep.json", "other/histories/c.json"]
    return [root / name for name in names]


def test_star_stays_in_its_folder_anchoring_and_negation(tmp_path: Path) -> None:
    files = _histories(tmp_path)
    setting = ExcludeSetting(("histories/*.json", "drafts/", "!drafts/keep.json", "!histories/drafts/keep.json"),
                             tmp_path, "--exclude")
    selection = select_histories(files, [setting])
    excluded = {item.path.relative_to(tmp_path).as_posix(): item.pattern for item in selection.excluded}
    # As in git, a file cannot be taken back out of a folder that is left out whole ("drafts/").
    assert excluded == {"histories/a.json": "histories/*.json", "histories/drafts/b.json": "drafts/",
                        "histories/drafts/keep.json": "drafts/"}
    # "histories/*.json" is anchored and its "*" does not cross "/": other/histories/c.json stays.
    assert [path.relative_to(tmp_path).as_posix() for path in selection.kept] == ["other/histories/c.json"]
    assert selection.unmatched == []
    taken_back = select_histories(files, [ExcludeSetting(("histories/drafts/*", "!keep.json"), tmp_path, "--exclude")])
    assert {path.name for path in taken_back.kept} == {"a.json", "keep.json", "c.json"}


def test_a_pattern_that_can_match_nothing_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--exclude: '#drafts': matches nothing"):
        ExcludeSetting(("#drafts",), tmp_path, "--exclude")
