"""Path patterns (``path_patterns``): every glob setting and every ``.gitignore`` means what it means to git.

The compiled ``ExcludeMatcher`` (literal patterns looked up in sets, the rest given to ``pathspec``) gives the
verdicts of ``pathspec.GitIgnoreSpec`` over the whole list, and those are git's own: a real repository's
``git ls-files --others --exclude-standard`` is the judge of what a walk leaves out, nested ``.gitignore``
files, anchored patterns, ``**`` and ``!`` included, and the same tree outside any repository is walked the
same way without git. A walk with thousands of patterns compiles them once and hands only the globs to
``pathspec``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from replaytest import path_patterns
from replaytest.lint.discovery import ModuleNamer, walk
from replaytest.path_patterns import ExcludeMatcher, glob_matches

NAMES = st.sampled_from(["app", "tests", "gen", "a.py", "b.py", "x_pb2.py", "build", "v1", "[ab].py", "*", "**"])
PATHS = st.lists(st.sampled_from(["app", "tests", "gen", "a.py", "b.py", "x_pb2.py", "build", "v1"]),
                 min_size=1, max_size=5).map("/".join)
PATTERNS = st.lists(
    st.one_of(
        st.lists(NAMES, min_size=1, max_size=3).map("/".join),
        st.lists(NAMES, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
        st.lists(NAMES, min_size=1, max_size=2).map(lambda parts: "/".join(parts) + "/"),
        st.sampled_from(["*_pb2.py", "**/gen", "tests/*", "build/", "app/[ab].py", "?.py", "**/v1/*.py", "*/a.py",
                         "!a.py", "!tests/b.py", "app/**", "gen", "*.py", "*", "*/", "**/*_pb2.py", "**/build/",
                         "**/a.py", "*ld/", "**/*", "* ", "*a\\ ", "**/[ab].py", "**/app/*.py"]),
    ),
    max_size=6,
)


@settings(max_examples=500, deadline=None)
@given(relative=PATHS, patterns=PATTERNS, is_dir=st.booleans())
def test_the_compiled_matcher_agrees_with_pathspec_over_the_whole_list(
    relative: str, patterns: list[str], is_dir: bool
) -> None:
    expected = GitIgnoreSpec.from_lines(patterns).match_file(relative + "/" if is_dir else relative)
    assert ExcludeMatcher(patterns).matches(relative, is_dir) == expected


SIMPLE_PATTERNS = st.lists(
    st.sampled_from(["*", "*.py", "*_pb2.py", "**/gen", "**/build/", "gen", "build/", "app/a.py", "/tests", "v1/",
                     "**/*.py", "*ld/"]).flatmap(lambda pattern: st.sampled_from([pattern, "!" + pattern])),
    min_size=1, max_size=6,
)


@settings(max_examples=800, deadline=None)
@given(relative=PATHS, patterns=SIMPLE_PATTERNS, is_dir=st.booleans())
def test_simple_patterns_in_order_give_pathspecs_verdict_without_it(
    relative: str, patterns: list[str], is_dir: bool
) -> None:
    """Plain paths, names and name endings, some negated: the order decides, and the matcher decides it
    without ``pathspec`` (whose import alone is a good part of a warm one-file lint run)."""
    patterns = [*patterns, "!x_pb2.py"]  # always one "!" pattern: the order decides
    matcher = ExcludeMatcher(patterns)
    assert matcher._ordered is None and matcher._globs is None, "a simple pattern went to pathspec"
    expected = GitIgnoreSpec.from_lines(patterns).check_file(relative + "/" if is_dir else relative).include
    assert matcher.decide(relative, is_dir) == expected


def test_hand_picked_verdicts_are_gits() -> None:
    matcher = ExcludeMatcher(["*_pb2.py", "**/generated", "legacy/old.py", "build/", "tests/*"])
    assert matcher.matches("app/api_pb2.py")
    assert matcher.matches("src/generated") and matcher.matches("generated/x.py")
    assert matcher.matches("legacy/old.py")
    assert not matcher.matches("vendor/legacy/old.py"), "a pattern with a '/' is anchored to the root"
    assert matcher.matches("build", is_dir=True) and matcher.matches("src/build/x.py")
    assert not matcher.matches("build"), "'build/' matches folders only"
    assert matcher.matches("tests/a.py") and matcher.matches("tests/deep/b.py"), "a matched folder's contents"
    assert not ExcludeMatcher(["app/*.py"]).matches("app/sub/x.py"), "'*' does not cross '/'"
    assert ExcludeMatcher(["app/**/*.py"]).matches("app/sub/x.py"), "'**' does"
    assert not ExcludeMatcher(["gen/*", "!gen/keep.py"]).matches("gen/keep.py"), "the last match wins"
    assert not ExcludeMatcher([]).matches("anything")


def test_per_file_ignores_keys_match_as_git_and_negate_as_ruff() -> None:
    assert glob_matches("tests/unit/test_a.py", "tests/*")
    assert glob_matches("deep/x_test.py", "*_test.py")
    assert not glob_matches("app/sub/x.py", "app/*.py")
    assert glob_matches("app/x.py", "!tests/*") and not glob_matches("tests/x.py", "!tests/*")


@pytest.mark.parametrize("pattern", ["#generated", "/", ""])
def test_a_pattern_that_matches_nothing_is_named(pattern: str) -> None:
    assert "matches nothing" in (path_patterns.pattern_problem(pattern) or "")


@pytest.mark.parametrize("pattern", ["!", "app\\"])
def test_a_pattern_git_refuses_is_named(pattern: str) -> None:
    assert (path_patterns.pattern_problem(pattern) or "").startswith("not a valid pattern")
    with pytest.raises(path_patterns.PatternError):
        ExcludeMatcher([pattern])


def test_a_walk_with_thousands_of_patterns_compiles_them_once(tmp_path: Path, monkeypatch) -> None:
    for index in range(120):
        path = tmp_path / f"pkg{index % 6}" / f"mod{index}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("x = 1\n")
    # 20,000 generated paths (none of them exist) and a few globs, as a generated exclude list has.
    patterns = [f"generated/area{index}/module{index}.py" for index in range(20_000)]
    patterns += ["pkg3", "*/mod7.py", "**/mod1?.py"]
    built: list[int] = []
    given_to_pathspec: list[list[str]] = []
    real_init = ExcludeMatcher.__init__
    real_from_lines = GitIgnoreSpec.from_lines

    def counting_init(self, given):
        built.append(len(given))
        real_init(self, given)

    def recording_from_lines(lines, *args, **kwargs):
        given_to_pathspec.append(list(lines))
        return real_from_lines(given_to_pathspec[-1], *args, **kwargs)

    monkeypatch.setattr(ExcludeMatcher, "__init__", counting_init)
    monkeypatch.setattr(GitIgnoreSpec, "from_lines", recording_from_lines)
    files, problems = walk([tmp_path], root=tmp_path, exclude=tuple(patterns), cwd=tmp_path,
                           namer=ModuleNamer(tmp_path, [tmp_path]))
    assert problems == []
    assert built == [len(patterns)], "the patterns were compiled more than once in one walk"
    assert given_to_pathspec[-1] == ["*/mod7.py", "**/mod1?.py"], "literal paths must not reach pathspec"
    names = {source.path.name for source in files}
    expected = {f"mod{i}.py" for i in range(120) if i % 6 != 3 and i != 7 and not (10 <= i <= 19)}
    assert names == expected


# A tree with .gitignore files at three depths; every case is a file git keeps or leaves out for a reason.
TREE = {
    ".gitignore": "*.gen.py\n/top_only.py\nbuild/\ndocs/*\n!docs/keep.py\n**/cache/**\nscratch\n",
    "top_only.py": "", "app/top_only.py": "", "app/x.gen.py": "", "app/main.py": "",
    "build/a.py": "", "src/build/b.py": "", "docs/a.py": "", "docs/keep.py": "", "docs/sub/c.py": "",
    "app/cache/z.py": "", "app/scratch/s.py": "", "app/scratch.py": "",
    "app/.gitignore": "local_*.py\n!local_keep.py\n/only_here.py\n",
    "app/local_a.py": "", "app/local_keep.py": "", "app/only_here.py": "", "app/deep/only_here.py": "",
    "app/deep/local_b.py": "",
    "app/deep/.gitignore": "!local_b.py\n*.py\n!wanted.py\n",
    "app/deep/wanted.py": "", "app/deep/unwanted.py": "",
}


def _build(root: Path) -> Path:
    for relative, text in TREE.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    return root


def _walked(root: Path, start: Path | None = None) -> set[str]:
    start = start or root
    files, problems = walk([start], root=root, exclude=(), cwd=root, namer=ModuleNamer(root, [root]),
                           respect_gitignore=True)
    assert problems == []
    return {source.path.relative_to(root).as_posix() for source in files}


def _git_keeps(repository: Path) -> set[str]:
    """The Python files git does not ignore in ``repository`` (made a repository here, nothing tracked)."""
    subprocess.run(["git", "init", "-q"], cwd=repository, check=True)
    listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=repository,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    return {path for path in listed if path.endswith(".py")}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the judge")
def test_what_a_walk_leaves_out_is_what_git_leaves_out(tmp_path: Path) -> None:
    repository = _build(tmp_path / "repo")
    by_git = _git_keeps(repository)
    assert "app/main.py" in by_git and "docs/keep.py" in by_git and "build/a.py" not in by_git  # the judge sees
    assert _walked(repository) == by_git
    # From a sub-folder, the .gitignore files above it still apply.
    assert _walked(repository, repository / "app") == {path for path in by_git if path.startswith("app/")}
    # .git/info/exclude applies too.
    (repository / ".git" / "info").mkdir(exist_ok=True)
    (repository / ".git" / "info" / "exclude").write_text("main.py\n", encoding="utf-8")
    assert "app/main.py" not in _walked(repository)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the judge")
def test_outside_a_repository_the_gitignore_files_still_apply_and_git_is_never_started(
    tmp_path: Path, monkeypatch
) -> None:
    if any((parent / ".git").exists() for parent in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary folder is inside a git work tree")
    by_git = _git_keeps(_build(tmp_path / "repo"))
    project = _build(tmp_path / "project")  # the same tree, in no repository
    started: list[object] = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: started.append(args))
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: started.append(args))
    assert _walked(project) == by_git
    assert started == []
