"""The lint cache's file index (``files.txt``): a warm run reads no file whose stat is unchanged, and after each
kind of change (an edit that keeps size and mtime, a file added or removed, a helper another module's
workflow calls, the configuration, replaytest's version) its findings equal those of a run without cache. The
index's record of the last walk: a warm run lists no folder, and a file added, removed or renamed, a new folder, a
``.gitignore`` edited or made, an ``__init__.py`` made above the linted folder or an ``exclude`` change is seen.

The runs are in-process (``lint_paths``) so the test can see which files a run read, and with
``SETTLE_SECONDS`` turned off: the index trusts a stat only once the file is a few seconds old, and these
files are not."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lintkit import CLOCK_WORKFLOW, write_files

from replaytest.config import load_config
from replaytest.lint import cache as cache_module
from replaytest.lint import context as context_module
from replaytest.lint import discovery, engine
from replaytest.plugins import load_plugins

HELPER = '''\
"""Formatting helper; its body decides whether the workflow's call site is a finding."""


def label(name: str) -> str:
    return name.upper()
'''
HELPER_WITH_CLOCK = HELPER.replace("return name.upper()", "import time\n    return f'{name}{time.time()}'")

WORKFLOW = '''\
"""A workflow calling a helper of another module."""
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.labels import label


@workflow.defn
class Labelled:
    @workflow.run
    async def run(self, name: str) -> str:
        return label(name)
'''
UTILITY = "def total(values):\n    return sum(values)\n"
SUPPRESSED = CLOCK_WORKFLOW.replace("datetime.now()", "datetime.now()  # replaytest: ignore[clock]")


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache_module, "SETTLE_SECONDS", -3600)  # trust the stat of files written just now
    root = tmp_path / "proj"
    write_files(root, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/__init__.py": "",
        "app/labels.py": HELPER,
        "app/wf.py": WORKFLOW,
        "app/clock.py": CLOCK_WORKFLOW,
        "app/quiet.py": SUPPRESSED,
        "app/util.py": UTILITY,
    })
    return root


def _lint(root: Path, reads: list[str] | None = None, *, use_cache: bool = True) -> dict[str, Any]:
    """What a run reports: its diagnostics, notes, problems and error count; ``reads`` receives the files read."""
    config = load_config(root)
    profiles = [plugin.profile for plugin in load_plugins(config.frameworks) if plugin.profile is not None]
    original = engine.LintRun.read

    def recording(run: engine.LintRun, path: Path) -> bytes | None:
        if reads is not None:
            reads.append(path.relative_to(root).as_posix())
        return original(run, path)

    engine.LintRun.read = recording  # type: ignore[method-assign]
    try:
        result = engine.lint_paths([root], config, profiles, cwd=root, use_cache=use_cache, jobs=1)
    finally:
        engine.LintRun.read = original  # type: ignore[method-assign]
    return {
        "diagnostics": [(d.path, d.line, d.column, d.rule, d.message, d.trace) for d in result.diagnostics],
        "notes": result.notes, "problems": result.problems, "errors": result.errors, "files": result.files_checked,
    }


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders the runs from now on list (the walk, not the file index's record of it)."""
    listed: list[str] = []
    original = discovery._walk_directory

    def counting(directory: str, *rest: Any) -> Iterator[str]:
        listed.append(directory)
        return original(directory, *rest)

    monkeypatch.setattr(discovery, "_walk_directory", counting)
    return listed


def _past_the_clock_tick(*paths: Path) -> None:
    """Wait until the file-system clock has moved past the times ``paths`` carry, so a change made now gives
    their folder another mtime (the index's ``SETTLE_SECONDS``, turned off here, does this in real use)."""
    latest = max(max(path.stat().st_mtime_ns, path.stat().st_ctime_ns) for path in paths)
    while time.time_ns() < latest + 50_000_000:
        time.sleep(0.01)


def _warm(root: Path) -> list[str]:
    """Fill the cache and the index; the files a second, warm run still reads."""
    _lint(root)
    reads: list[str] = []
    _lint(root, reads)
    return reads


def _edit_keeping_size_and_mtime(path: Path, text: str) -> None:
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    # Setting the mtime back sets the ctime; within one tick of a coarse clock it could equal the old one.
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_warm_run_reads_only_the_files_with_suppression_comments(project: Path) -> None:
    assert _warm(project) == ["app/quiet.py"], "an unchanged file was read again (or the index was not used)"
    index = (project / ".replaytest_cache" / "lint" / "files.txt").read_text(encoding="utf-8")
    assert str(project / "app" / "wf.py") in index
    assert _lint(project) == _lint(project, use_cache=False)


def test_edit_that_keeps_size_and_mtime_is_read_and_seen(project: Path) -> None:
    _warm(project)
    target = project / "app" / "clock.py"
    _edit_keeping_size_and_mtime(target, CLOCK_WORKFLOW.replace("datetime.now()", "datetime.min  "))
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/clock.py" in reads
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0].endswith("clock.py") for d in warm["diagnostics"]), warm


def test_edit_of_a_screened_out_file_that_keeps_size_and_mtime_is_vetted_again(project: Path) -> None:
    _warm(project)
    broken = "def total(values):\n    return sum(values(\n"
    _edit_keeping_size_and_mtime(project / "app" / "util.py", broken)
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert warm["errors"] and any(d[0].endswith("util.py") for d in warm["diagnostics"]), warm


def test_added_file_is_linted(project: Path) -> None:
    _warm(project)
    _past_the_clock_tick(project / "app")
    write_files(project, {"app/second.py": CLOCK_WORKFLOW.replace("Greeting", "Second")})
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/second.py" in reads
    assert warm == _lint(project, use_cache=False)
    assert any(d[0].endswith("second.py") for d in warm["diagnostics"]), warm


def test_removed_file_is_gone_from_the_findings(project: Path) -> None:
    _warm(project)
    _past_the_clock_tick(project / "app")
    (project / "app" / "clock.py").unlink()
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0].endswith("clock.py") for d in warm["diagnostics"]), warm
    index = (project / ".replaytest_cache" / "lint" / "files.txt").read_text(encoding="utf-8")
    assert str(project / "app" / "clock.py") not in index and str(project / "app" / "wf.py") in index


def test_removed_helper_module_is_gone_from_the_resolution(project: Path) -> None:
    (project / "app" / "labels.py").write_text(HELPER_WITH_CLOCK, encoding="utf-8")
    _warm(project)
    _past_the_clock_tick(project / "app")
    (project / "app" / "labels.py").unlink()
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0].endswith("wf.py") for d in warm["diagnostics"]), warm


def test_helper_changed_across_modules_changes_the_finding_at_the_unchanged_call_site(project: Path) -> None:
    assert not any(d[0].endswith("wf.py") for d in _lint(project)["diagnostics"])
    _warm(project)
    (project / "app" / "labels.py").write_text(HELPER_WITH_CLOCK, encoding="utf-8")
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/wf.py" not in reads, "the unchanged workflow module should come from the index"
    assert warm == _lint(project, use_cache=False)
    assert any(d[0].endswith("wf.py") and d[3] == "RT101" for d in warm["diagnostics"]), warm
    (project / "app" / "labels.py").write_text(HELPER.replace("upper", "lower"), encoding="utf-8")
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0].endswith("wf.py") for d in warm["diagnostics"]), warm


def test_configuration_change_reads_every_file_again(project: Path) -> None:
    _warm(project)
    (project / "pyproject.toml").write_text('[tool.replaytest]\nignore = ["clock"]\n', encoding="utf-8")
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/wf.py" in reads and "app/util.py" in reads, "the index outlived the configuration it was made under"
    assert warm == _lint(project, use_cache=False)
    assert not any(d[3] == "RT101" for d in warm["diagnostics"]), warm


def test_replaytest_version_change_reads_every_file_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _warm(project)
    monkeypatch.setattr(context_module, "__version__", "999.0.0")
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/wf.py" in reads and "app/util.py" in reads, "the index outlived the version it was made by"
    assert warm == _lint(project, use_cache=False)


def test_files_written_just_now_are_not_trusted_by_stat(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "SETTLE_SECONDS", 3600)  # every file is "just written"
    reads = _warm(project)
    assert "app/wf.py" in reads and "app/util.py" in reads


def test_damaged_index_is_a_miss(project: Path) -> None:
    _warm(project)
    index = project / ".replaytest_cache" / "lint" / "files.txt"
    lines = index.read_text(encoding="utf-8").splitlines()
    damaged = [lines[0]] + [line.replace(" ", "  ", 1) if "wf.py" in line else line for line in lines[1:]]
    index.write_text("\n".join(damaged) + "\n", encoding="utf-8")
    reads: list[str] = []
    warm = _lint(project, reads)
    assert "app/wf.py" in reads
    assert warm == _lint(project, use_cache=False)


# --- the walk's record: a warm run lists no folder, and every change to what the walk found is seen ---------


def test_warm_run_lists_no_folder_and_finds_what_a_walk_finds(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _warm(project)
    listed = _listings(monkeypatch)
    warm = _lint(project)
    assert listed == [], "an unchanged tree was listed again (or the walk's record was not used)"
    assert warm == _lint(project, use_cache=False)


def test_file_added_in_a_new_package_is_linted(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _warm(project)
    _past_the_clock_tick(project / "app")
    write_files(project, {"app/deep/__init__.py": "", "app/deep/late.py": CLOCK_WORKFLOW.replace("Greeting", "Late")})
    listed = _listings(monkeypatch)
    warm = _lint(project)
    assert listed, "a new folder did not make the run list the tree"
    assert warm == _lint(project, use_cache=False)
    assert any(d[0] == "app/deep/late.py" for d in warm["diagnostics"]), warm


def test_file_renamed_is_linted_under_its_new_name(project: Path) -> None:
    _warm(project)
    _past_the_clock_tick(project / "app")
    (project / "app" / "clock.py").rename(project / "app" / "timing.py")
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert any(d[0] == "app/timing.py" for d in warm["diagnostics"]) and not any(
        d[0] == "app/clock.py" for d in warm["diagnostics"]), warm


def test_gitignore_edited_in_place_leaves_out_what_it_now_ignores(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("build/\n", encoding="utf-8")
    (project / "pyproject.toml").write_text("[tool.replaytest]\nrespect-gitignore = true\n", encoding="utf-8")
    assert any(d[0] == "app/clock.py" for d in _lint(project)["diagnostics"])
    _warm(project)
    _past_the_clock_tick(project / ".gitignore")
    (project / ".gitignore").write_text("app/clock.py\n", encoding="utf-8")  # same folder entries, new rules
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0] == "app/clock.py" for d in warm["diagnostics"]), warm


def test_gitignore_made_above_the_project_is_read(tmp_path: Path, project: Path) -> None:
    (tmp_path / ".git").mkdir()
    (project / "pyproject.toml").write_text("[tool.replaytest]\nrespect-gitignore = true\n", encoding="utf-8")
    _warm(project)
    (tmp_path / ".gitignore").write_text("proj/app/clock.py\n", encoding="utf-8")
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0] == "app/clock.py" for d in warm["diagnostics"]), warm


def test_package_marker_above_the_linted_folder_is_watched(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(project)
    profiles = [plugin.profile for plugin in load_plugins(config.frameworks) if plugin.profile is not None]

    def modules() -> list[str]:
        result = engine.lint_paths([project / "app"], config, profiles, cwd=project, use_cache=True, jobs=1)
        return sorted(result.source_digests)

    modules()
    listed = _listings(monkeypatch)
    modules()
    assert listed == []
    (project / "__init__.py").write_text("", encoding="utf-8")  # names app.wf proj.app.wf from now on
    modules()
    assert listed, "an __init__.py made above the linted folder left the walk's record in use"


def test_exclude_change_leaves_out_the_excluded_file(project: Path) -> None:
    _warm(project)
    (project / "pyproject.toml").write_text('[tool.replaytest]\nexclude = ["app/clock.py"]\n', encoding="utf-8")
    warm = _lint(project)
    assert warm == _lint(project, use_cache=False)
    assert not any(d[0] == "app/clock.py" for d in warm["diagnostics"]), warm


def test_symbolic_link_in_the_tree_keeps_the_walk_live(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "linked").symlink_to(project / "app", target_is_directory=True)
    _warm(project)
    listed = _listings(monkeypatch)
    _lint(project)
    assert listed, "a tree with a symbolic link (whose target can change kind unseen) was not listed"


def test_damaged_walk_record_is_a_walk_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _warm(project)
    index = project / ".replaytest_cache" / "lint" / "files.txt"
    lines = index.read_text(encoding="utf-8").splitlines()
    index.write_text("\n".join(line[:-40] if line.startswith("walk ") else line for line in lines) + "\n",
                     encoding="utf-8")
    listed = _listings(monkeypatch)
    warm = _lint(project)
    assert listed
    assert warm == _lint(project, use_cache=False)


def test_namer_fed_the_walks_listings_answers_as_one_that_lists_for_itself(tmp_path: Path) -> None:
    root = write_files(tmp_path / "tree", {
        "pyproject.toml": "[tool.replaytest]\n",
        "services/billing/__init__.py": "",
        "services/billing/flows.py": "from shared import money\n",
        "services/shared/money.py": UTILITY,
        "services/weird.py/inner.py": UTILITY,  # a folder named like a module file
        "services/build/generated.py": UTILITY,  # a folder the walk skips
        "tools/run.py": UTILITY,
        "notes.txt": "not Python",
    })
    names = ["shared", "shared.money", "weird", "weird.inner", "build", "build.generated", "billing.flows", "tools",
             "tools.run", "notes", "missing.module", "services", "services.shared"]

    def answers(namer: discovery.ModuleNamer) -> list[tuple[Any, ...]]:
        return [(namer.locate(name), namer.looks_like_project(name), namer.held_by_source_root(name),
                 namer.is_namespace_dir(name)) for name in names]

    fed = discovery.ModuleNamer(root)
    watch = discovery.WalkWatch()
    discovery.walk([root], root=root, exclude=(), cwd=root, namer=fed, watch=watch)
    fed.take_listings(watch.listings)
    listing = discovery.ModuleNamer(root)
    discovery.walk([root], root=root, exclude=(), cwd=root, namer=listing)
    assert watch.listings and not watch.unsure
    assert answers(fed) == answers(listing)
    assert any(found[0] is not None for found in answers(fed))  # the lookups do find modules
