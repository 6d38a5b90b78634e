"""The ``--help`` of the group and of every command and subcommand, compared exactly with the pages recorded
in ``help_pages.txt`` (``python tests/cli_help/help_pages.py`` rewrites it when a help text changes on purpose):
moving the command line's code around must not change a word a user reads."""

from __future__ import annotations

import click
import pytest
from help_pages import GOLDEN, command_paths, render_help_pages

from replaytest.cli import cli


def test_every_help_page_matches_the_recorded_one() -> None:
    recorded = GOLDEN.read_text(encoding="utf-8")
    rendered = render_help_pages()
    assert rendered.count("\n=== replaytest ") == recorded.count("\n=== replaytest "), "a command came or went"
    assert rendered == recorded


def test_the_walk_reaches_every_command_and_the_import_subcommands() -> None:
    """Guard against a walk that compares too little: each command of the group, and the ``import`` group's
    subcommands (which plugins provide), has its page."""
    paths = command_paths(cli)
    assert set(cli.list_commands(click.Context(cli))) <= {path[0] for path in paths if path}
    assert ("import", "temporal") in paths
    recorded = GOLDEN.read_text(encoding="utf-8")
    for path in paths:
        assert f"=== replaytest {' '.join(path)}".rstrip() + " --help ===\n" in recorded


def test_a_changed_help_text_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is exact: one option's help text changed by a word makes the pages differ."""
    check = cli.get_command(click.Context(cli), "check")
    assert check is not None
    option = next(param for param in check.params if param.name == "no_lint")
    assert isinstance(option, click.Option) and option.help
    monkeypatch.setattr(option, "help", option.help.replace("lint", "Lint", 1))
    assert render_help_pages() != GOLDEN.read_text(encoding="utf-8")
