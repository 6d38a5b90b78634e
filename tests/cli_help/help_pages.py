"""Renders the ``--help`` page of the ``replaytest`` group and of every command and subcommand under it
(walking the click group), and writes them to ``help_pages.txt`` next to this file when run as a script:
``python tests/cli_help/help_pages.py``. ``test_help_pages.py`` compares the pages against that file."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.testing import CliRunner

GOLDEN = Path(__file__).resolve().parent / "help_pages.txt"
# A fixed width: click otherwise wraps help to the terminal it finds.
WIDTH = 100


def command_paths(group: click.Group) -> list[tuple[str, ...]]:
    """Every command path under ``group``, the group itself first, each group before its subcommands."""
    paths: list[tuple[str, ...]] = [()]

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if not isinstance(command, click.Group):
            return
        context = click.Context(command, info_name=path[-1] if path else "replaytest")
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            assert sub is not None, f"{' '.join(path + (name,))} is listed but cannot be loaded"
            paths.append(path + (name,))
            walk(sub, path + (name,))

    walk(group, ())
    return paths


def render_help_pages() -> str:
    from replaytest.cli import cli

    runner = CliRunner()
    pages = []
    for path in command_paths(cli):
        result = runner.invoke(cli, [*path, "--help"], prog_name="replaytest", terminal_width=WIDTH)
        assert result.exit_code == 0, f"replaytest {' '.join(path)} --help: {result.output}"
        pages.append(f"=== replaytest {' '.join(path)}".rstrip() + " --help ===\n" + result.output)
    return "\n".join(pages)


if __name__ == "__main__":
    GOLDEN.write_text(render_help_pages(), encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
