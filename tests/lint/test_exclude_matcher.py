"""``exclude`` globs compiled once (``discovery.ExcludeMatcher``): the same verdicts as matching every
glob against every trailing part of a path one by one, and a walk that compiles the patterns once and
never falls back to matching them one at a time, however many there are."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from replaytest import config
from replaytest.config import ExcludeMatcher
from replaytest.lint.discovery import ModuleNamer, walk


def one_by_one(relative: str, patterns: list[str]) -> bool:
    """The meaning of ``exclude``, written out: a pattern (and a ``**/`` pattern without its prefix)
    matches the path or any part of it after a ``/``."""
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        bare = pattern[3:] if pattern.startswith("**/") else pattern
        for start in range(len(parts)):
            candidate = "/".join(parts[start:])
            if fnmatch.fnmatchcase(candidate, bare) or fnmatch.fnmatchcase(candidate, pattern):
                return True
    return False


NAMES = st.sampled_from(["app", "tests", "gen", "a.py", "b.py", "x_pb2.py", "build", "v1", "[ab].py", "*", "**"])
PATHS = st.lists(st.sampled_from(["app", "tests", "gen", "a.py", "b.py", "x_pb2.py", "build", "v1"]),
                 min_size=1, max_size=5).map("/".join)
PATTERNS = st.lists(
    st.one_of(
        st.lists(NAMES, min_size=1, max_size=3).map("/".join),
        st.sampled_from(["*_pb2.py", "**/gen", "tests/*", "build/", "app/[ab].py", "?.py", "**/v1/*.py", "*/a.py"]),
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(relative=PATHS, patterns=PATTERNS)
def test_the_compiled_matcher_agrees_with_matching_one_by_one(relative: str, patterns: list[str]) -> None:
    assert ExcludeMatcher(patterns).matches(relative) == one_by_one(relative, patterns)


def test_hand_picked_verdicts() -> None:
    matcher = ExcludeMatcher(["*_pb2.py", "**/generated", "legacy/old.py", "build/"])
    assert matcher.matches("app/api_pb2.py")
    assert matcher.matches("src/generated") and matcher.matches("generated")
    assert matcher.matches("legacy/old.py") and matcher.matches("vendor/legacy/old.py")
    assert matcher.matches("build")
    assert not matcher.matches("app/old.py")
    assert not matcher.matches("mylegacy/old.py"), "a trailing part starts at a folder boundary"
    assert not ExcludeMatcher([]).matches("anything")


def test_a_walk_with_thousands_of_patterns_compiles_them_once(tmp_path: Path, monkeypatch) -> None:
    for index in range(120):
        path = tmp_path / f"pkg{index % 6}" / f"mod{index}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("x = 1\n")
    # 20,000 generated paths (none of them exist) and a few globs, as a generated exclude list has.
    patterns = [f"generated/area{index}/module{index}.py" for index in range(20_000)]
    patterns += ["pkg3", "*/mod7.py", "**/mod1?.py"]
    built: list[int] = []
    real_init = ExcludeMatcher.__init__

    def counting_init(self, given):
        built.append(len(given))
        real_init(self, given)

    def no_one_by_one(*args, **kwargs):
        raise AssertionError("a glob was matched one by one during the walk")

    monkeypatch.setattr(ExcludeMatcher, "__init__", counting_init)
    monkeypatch.setattr(config.fnmatch, "fnmatchcase", no_one_by_one)
    files, problems = walk([tmp_path], root=tmp_path, exclude=tuple(patterns), cwd=tmp_path,
                           namer=ModuleNamer(tmp_path, [tmp_path]))
    assert problems == []
    assert built == [len(patterns)], "the patterns were compiled more than once in one walk"
    names = {source.path.name for source in files}
    assert "mod3.py" not in names and "mod9.py" not in names  # pkg3 holds every index = 3 mod 6
    assert "mod7.py" not in names and "mod13.py" not in names and "mod19.py" not in names
    assert {"mod0.py", "mod2.py", "mod20.py", "mod119.py"} <= names
    expected = {f"mod{i}.py" for i in range(120)
                if i % 6 != 3 and i != 7 and not (10 <= i <= 19)}
    assert names == expected
